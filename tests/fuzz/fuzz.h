// SPDX-License-Identifier: MIT
// What the fuzz targets share: the libFuzzer entry point and a property check that
// aborts (libFuzzer and the replay driver both turn an abort into a failure with the
// input saved).
#ifndef BRQ_FUZZ_H
#define BRQ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

// The one function each target defines (libFuzzer's interface; tests/fuzz/replay.c
// calls it for every file of a corpus in the normal builds).
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

// A property of the code under test that must hold for every input.
#define FUZZ_CHECK(cond)                                                                                    \
	do {                                                                                                \
		if (!(cond)) {                                                                              \
			fprintf(stderr, "fuzz: property failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                                            \
		}                                                                                           \
	} while (0)

#endif
