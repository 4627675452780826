// SPDX-License-Identifier: MIT
// BRQ_SANITIZED: 1 in an AddressSanitizer build (BROOQ_SANITIZE=ON), else 0. gcc says so
// with a macro, clang with __has_feature. The gateway leaves crashes to the sanitizer's
// report then (gateway/log/crash.c), and the test of its own report knows to skip.
#ifndef BRQ_SANITIZED_H
#define BRQ_SANITIZED_H

#if defined(__SANITIZE_ADDRESS__)
#define BRQ_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BRQ_SANITIZED 1
#endif
#endif
#ifndef BRQ_SANITIZED
#define BRQ_SANITIZED 0
#endif

#endif
