/* SPDX-License-Identifier: MIT */
/* The isolation soak (issue 25, deliverable 7): what its attacks and its legitimate
 * clients share. soak_test.c runs everything and reports; attacks_rpc.c and
 * attacks_http.c are the attackers. */
#ifndef BRQ_SOAK_H
#define BRQ_SOAK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "gw.h"

#define SOAK_MAX_THREADS 48

/* Everything an attacker needs to know about the gateway under attack. */
typedef struct soak_ctx {
	brq_gw      gw;
	uint16_t    http_port;
	char        dir[256];              /* the soak's own temp dir: the two worker tokens */
	char        legit_token_file[300]; /* the producer's and the worker's */
	char        evil_token_file[300];  /* every attacker that signs in uses this one */
	char        evil_token[65];
	char        session[300]; /* the admin's console session: Cookie and X-CSRF-Token lines */
	atomic_bool on;           /* the attacks run while set */
	int64_t     until_us;     /* and not past this (brq_t_now_us) */
} soak_ctx;

extern soak_ctx soak;

/* What one attack saw, summed over its threads. What `refused` means is the attack's
 * own (soak_attack.refused_is). */
typedef struct soak_tally {
	atomic_long conns;    /* connections it opened */
	atomic_long closed;   /* of them, closed by the gateway */
	atomic_long sent;     /* requests (or headers) it sent */
	atomic_long answered; /* replies it read that were not refusals */
	atomic_long refused;  /* replies that refused it */
	atomic_long other;    /* anything else: connect failures, unexpected replies */
	atomic_long open_end; /* connections still open when the attack ended */
} soak_tally;

typedef struct soak_attack soak_attack;
struct soak_attack {
	const char *name;
	const char *refused_is; /* what counts as a refusal, for the report */
	int         threads;
	int         kind;        /* the variant, for attacks that share a thread body */
	void *(*run)(void *arg); /* arg: this soak_attack */
	soak_tally t;
	pthread_t  tid[SOAK_MAX_THREADS];
};

/* True while the attacks should go on. */
bool soak_running(void);

/* Waits until fd's peer (the gateway) has closed the connection, without reading
 * anything (a peer that never reads must not drain its replies), or until the attacks
 * end. True when closed. */
bool soak_await_close(int fd);

/* The RPC attacks (attacks_rpc.c): thread bodies for soak_attack.run. */
void *soak_never_reads(void *arg);  /* kind 0: no valid token; 1: the evil token */
void *soak_stats_reader(void *arg); /* the evil token's stats, 48 in the air, read */
void *soak_stalled_body(void *arg); /* an 8-byte length of ~4 MiB, then nothing */
void *soak_big_flood(void *arg);    /* ~4 MiB requests with a wrong token */
void *soak_huge_numbers(void *arg); /* enqueues of [1e131071] and 12 MB-printing arrays */
void  soak_flood_init(void);        /* builds the flood's message; before the threads */
void  soak_flood_fini(void);

/* The HTTP attacks (attacks_http.c), one thread body; kind: 0 bodies without a session,
 * 1 bodies with the admin's session, 2 idle connections, 3 sign-in guesses. */
void *soak_http(void *arg);
/* Signs in to the console with the admin token; fills soak.session. */
void soak_http_sign_in(void);
/* A sample of /metrics (the whole name with labels), or -1: no answer within 5 s. */
long long soak_metric(const char *sample);
/* /healthz answers 200 within 5 s. */
bool soak_http_answers(void);

#endif
