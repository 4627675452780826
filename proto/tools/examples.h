// SPDX-License-Identifier: MIT
// The examples program's pieces shared by its files (examples.c, examples_admin.c).
#ifndef BRQ_PROTO_EXAMPLES_H
#define BRQ_PROTO_EXAMPLES_H

#include "proto.h"

// The lease token every example shows.
extern const uint8_t LEASE[BRQ_LEASE_LEN];

// Prints "### name", then the request and the reply (rid 7, token example-token), each
// rendered and in hex; both are checked by the real decoders first.
void example(const char *name, brq_request *req, brq_reply *rep);

// list, retry, delete (examples_admin.c).
void admin_examples(void);

#endif
