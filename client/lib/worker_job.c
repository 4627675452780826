/* SPDX-License-Identifier: MIT */
/* Worker runtime: the job a handler runs, its outcome, and its copy of the claim. */
#include "worker_job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- internal -------------------------------------------------------------------------- */

/* Length of the valid UTF-8 character at s[0..n), or 0 if there is none. */
static size_t
utf8_char(const unsigned char *s, size_t n)
{
	uint32_t cp, min;
	size_t   len;
	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xE0) == 0xC0)
		len = 2, cp = s[0] & 0x1Fu, min = 0x80;
	else if ((s[0] & 0xF0) == 0xE0)
		len = 3, cp = s[0] & 0x0Fu, min = 0x800;
	else if ((s[0] & 0xF8) == 0xF0)
		len = 4, cp = s[0] & 0x07u, min = 0x10000;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3Fu);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return len;
}

/* A copy of an error text the gateway will accept: invalid UTF-8 bytes become '?',
 * cut on a character boundary to the BRQ_ERROR_STORED_MAX bytes the gateway would
 * store anyway. NULL when out of memory. */
char *
brq_worker_error_copy(const char *s)
{
	const unsigned char *u = (const unsigned char *) s;
	size_t               n = strlen(s), o = 0;
	char                *e = malloc((n < BRQ_ERROR_STORED_MAX ? n : BRQ_ERROR_STORED_MAX) + 1);
	if (e == NULL)
		return NULL;
	for (size_t i = 0; i < n;) {
		size_t k = utf8_char(u + i, n - i);
		if (o + (k ? k : 1) > BRQ_ERROR_STORED_MAX)
			break;
		if (k == 0) {
			e[o++] = '?';
			i++;
		} else {
			memcpy(e + o, s + i, k);
			o += k;
			i += k;
		}
	}
	e[o] = '\0';
	return e;
}

static void
chain_free(brooq_job_spec *c, size_t n)
{
	for (size_t i = 0; c != NULL && i < n; i++) {
		free((char *) c[i].topic);
		free((char *) c[i].payload);
		free((char *) c[i].key);
	}
	free(c);
}

static char *
mem_dup0(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (d != NULL) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

/* Deep copy of the caller's n specs (stepped by their size) into *out, each of this
 * library's size. 0, BRQ_EINVAL (a bad size; message set) or BRQ_ENOMEM. */
static int
chain_copy(const brooq_job_spec *src, size_t n, brooq_job_spec **out)
{
	brooq_job_spec *c = calloc(n, sizeof(*c));
	if (c == NULL)
		return BRQ_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		brooq_job_spec        spec;
		const brooq_job_spec *s = &spec;
		int rv = brq_abi_in(&spec, sizeof(spec), src, i, BRQ_JOB_SPEC_V1, "brooq_job_spec");
		if (rv != 0) {
			chain_free(c, i);
			return rv;
		}
		size_t plen  = s->payload == NULL ? 0 : s->payload_len ? s->payload_len : strlen(s->payload);
		c[i]         = *s;
		c[i].size    = sizeof(c[i]);
		c[i].topic   = s->topic != NULL ? strdup(s->topic) : NULL;
		c[i].payload = s->payload != NULL ? mem_dup0(s->payload, plen) : NULL;
		c[i].payload_len = plen;
		c[i].key         = s->key != NULL ? strdup(s->key) : NULL;
		if ((s->topic != NULL && c[i].topic == NULL) ||
		    (s->payload != NULL && c[i].payload == NULL) || (s->key != NULL && c[i].key == NULL)) {
			chain_free(c, i + 1);
			return BRQ_ENOMEM;
		}
	}
	*out = c;
	return 0;
}

void
brq_job_outcome_clear(brooq_job_ctx *j)
{
	free(j->error);
	chain_free(j->chain, j->n_chain);
	free(j->result);
	j->result    = NULL;
	j->error     = NULL;
	j->chain     = NULL;
	j->n_chain   = 0;
	j->delay_ms  = 0;
	j->oom       = false;
	j->chain_bad = false;
	j->outcome   = BROOQ_OUTCOME_DONE;
}

void
brq_job_ctx_free(brooq_job_ctx *j)
{
	if (j == NULL)
		return;
	brq_job_outcome_clear(j);
	free(j->topic);
	free(j->payload);
	free(j);
}

/* A context for a claimed job, copied out of the claim's reply; NULL when out of memory. */
brooq_job_ctx *
brq_job_ctx_new(brooq_worker *w, const brooq_job *jb, int64_t now, int64_t wall_now)
{
	brooq_job_ctx *j = calloc(1, sizeof(*j));
	if (j == NULL)
		return NULL;
	j->w           = w;
	j->lease       = jb->lease;
	j->topic       = strdup(jb->topic != NULL ? jb->topic : "");
	j->payload_len = jb->payload != NULL ? jb->payload_len : 2;
	j->payload     = mem_dup0(jb->payload != NULL ? jb->payload : "{}", j->payload_len);
	if (j->topic == NULL || j->payload == NULL) {
		brq_job_ctx_free(j);
		return NULL;
	}
	j->attempts     = jb->attempts;
	j->max_attempts = jb->max_attempts;
	atomic_init(&j->cancel_reason, BROOQ_CANCEL_NONE);
	/* The deadline counts from when this worker received the claim: a little after the
	 * gateway's claim, never before it. */
	j->attempt_timeout_ms = jb->attempt_timeout_ms;
	if (jb->attempt_timeout_ms != 0) {
		uint64_t t          = jb->attempt_timeout_ms < INT32_MAX ? jb->attempt_timeout_ms : INT32_MAX;
		j->deadline_ms      = now + (int64_t) t;
		j->deadline_wall_ms = wall_now + (int64_t) t;
	}
	/* The lease's length: ours, or as granted (the topic's default), read off the
	 * gateway's wall clock. Clamped to the gateway's bounds, which also caps what
	 * clock skew between the hosts can do to the heartbeat cadence. */
	int64_t lease = w->lease_ms != 0 ? (int64_t) w->lease_ms : jb->lease_until_ms - wall_now;
	if (lease < BRQ_LEASE_MS_MIN)
		lease = BRQ_LEASE_MS_MIN;
	if (lease > BRQ_LEASE_MS_MAX)
		lease = BRQ_LEASE_MS_MAX;
	j->lease_ms     = lease;
	j->lease_end_ms = now + lease;
	j->next_hb_ms   = now + lease / 3;
	return j;
}

/* The attempt ran past its deadline: whatever the handler decided, it is settled as a
 * fail that says so (backoff; dead only on the last attempt). The handler's own error,
 * if it set one, follows. Handler thread or under w->mu, after the handler returned. */
void
brq_job_timed_out_outcome(brooq_job_ctx *j)
{
	char text[BRQ_ERROR_STORED_MAX + 1];
	if (j->error != NULL)
		snprintf(text, sizeof(text), "attempt timed out after %llu ms (the handler said: %s)",
			 (unsigned long long) j->attempt_timeout_ms, j->error);
	else
		snprintf(text, sizeof(text), "attempt timed out after %llu ms",
			 (unsigned long long) j->attempt_timeout_ms);
	brq_job_outcome_clear(j);
	j->outcome = BROOQ_OUTCOME_FAIL;
	j->error   = brq_worker_error_copy(text);
	j->oom     = j->error == NULL;
}

void
brq_job_settle_fill(brooq_settle_item *s, const char **result, const brooq_job_ctx *j)
{
	memset(s, 0, sizeof(*s));
	s->size    = sizeof(*s);
	*result    = j->outcome == BROOQ_OUTCOME_DONE && !j->oom ? j->result : NULL;
	s->lease   = j->lease;
	s->outcome = j->outcome;
	s->error   = j->oom ? "worker: out of memory recording the handler's outcome" : j->error;
	if (j->outcome == BROOQ_OUTCOME_DELAY)
		s->delay_ms = j->delay_ms;
	if (j->outcome == BROOQ_OUTCOME_DONE && j->n_chain > 0) {
		s->chain   = j->chain;
		s->n_chain = j->n_chain;
	}
}

/* ---- public: the job a handler runs ------------------------------------------------------- */

uint64_t
brooq_job_id(const brooq_job_ctx *j)
{
	return j->lease.id;
}

const char *
brooq_job_topic(const brooq_job_ctx *j)
{
	return j->topic;
}

const char *
brooq_job_payload(const brooq_job_ctx *j, size_t *len)
{
	if (len != NULL)
		*len = j->payload_len;
	return j->payload;
}

uint32_t
brooq_job_attempts(const brooq_job_ctx *j)
{
	return j->attempts;
}

uint32_t
brooq_job_max_attempts(const brooq_job_ctx *j)
{
	return j->max_attempts;
}

bool
brooq_job_canceled(const brooq_job_ctx *j)
{
	return atomic_load(&((brooq_job_ctx *) j)->cancel_reason) != BROOQ_CANCEL_NONE;
}

brooq_cancel_reason
brooq_job_cancel_reason(const brooq_job_ctx *j)
{
	return (brooq_cancel_reason) atomic_load(&((brooq_job_ctx *) j)->cancel_reason);
}

const char *
brooq_cancel_reason_name(brooq_cancel_reason r)
{
	switch (r) {
	case BROOQ_CANCEL_NONE: return "none";
	case BROOQ_CANCEL_TIMEOUT: return "timeout";
	case BROOQ_CANCEL_OPERATOR: return "operator";
	case BROOQ_CANCEL_LEASE_LOST: return "lease_lost";
	case BROOQ_CANCEL_MAX_EXECUTION: return "max_execution";
	case BROOQ_CANCEL_STOP: return "stop";
	}
	return "unknown";
}

int64_t
brooq_job_deadline(const brooq_job_ctx *j)
{
	return j->deadline_wall_ms;
}

void
brooq_job_done(brooq_job_ctx *j)
{
	brq_job_outcome_clear(j);
}

void
brooq_job_done_chain(brooq_job_ctx *j, const brooq_job_spec *chain, size_t n)
{
	brq_job_outcome_clear(j);
	if (chain == NULL || n == 0)
		return;
	int rv = chain_copy(chain, n, &j->chain);
	if (rv == BRQ_EINVAL) {
		/* A chain this library cannot read (a bad size): fail with the reason, so the
		 * job runs again and the log and the job's last error say why. */
		j->outcome   = BROOQ_OUTCOME_FAIL;
		j->error     = brq_worker_error_copy(brooq_last_message());
		j->oom       = j->error == NULL;
		j->chain_bad = true;
		return;
	}
	if (rv != 0) {
		/* Never "done" without its chained jobs: fail, so the job runs again. */
		j->outcome = BROOQ_OUTCOME_FAIL;
		j->oom     = true;
		return;
	}
	j->n_chain = n;
}

void
brooq_job_done_result(brooq_job_ctx *j, const char *json, size_t len)
{
	/* The chain of an earlier done_chain stays: only the result is replaced. */
	brooq_job_spec *chain   = j->chain;
	size_t          n_chain = j->n_chain;
	bool            oom     = j->oom && j->outcome == BROOQ_OUTCOME_FAIL && chain == NULL;
	bool            refused = j->chain_bad;
	char           *bad     = refused ? j->error : NULL;
	j->chain                = NULL;
	j->n_chain              = 0;
	if (refused)
		j->error = NULL; /* kept: the reason the chain was refused */
	brq_job_outcome_clear(j);
	if (refused) {
		/* An earlier done_chain's specs were refused: never done without its chain. */
		j->outcome   = BROOQ_OUTCOME_FAIL;
		j->error     = bad;
		j->oom       = bad == NULL;
		j->chain_bad = true;
		return;
	}
	j->chain   = chain;
	j->n_chain = n_chain;
	if (oom) {
		/* An earlier done_chain ran out of memory: never done without its chain. */
		j->outcome = BROOQ_OUTCOME_FAIL;
		j->oom     = true;
		return;
	}
	if (json == NULL)
		return;
	j->result = mem_dup0(json, len > 0 ? len : strlen(json));
	if (j->result == NULL) {
		/* Never "done" without the result the handler meant to store. */
		j->outcome = BROOQ_OUTCOME_FAIL;
		j->oom     = true;
	}
}

static void
set_error_outcome(brooq_job_ctx *j, brooq_outcome oc, const char *error)
{
	brq_job_outcome_clear(j);
	j->outcome = oc;
	if (error != NULL) {
		j->error = brq_worker_error_copy(error);
		j->oom   = j->error == NULL;
	}
}

void
brooq_job_fail(brooq_job_ctx *j, const char *error)
{
	set_error_outcome(j, BROOQ_OUTCOME_FAIL, error);
}

void
brooq_job_delay(brooq_job_ctx *j, uint64_t delay_ms)
{
	brq_job_outcome_clear(j);
	j->outcome  = BROOQ_OUTCOME_DELAY;
	j->delay_ms = delay_ms < BRQ_DELAY_MS_MAX ? delay_ms : BRQ_DELAY_MS_MAX;
}

void
brooq_job_preserve(brooq_job_ctx *j, const char *error)
{
	set_error_outcome(j, BROOQ_OUTCOME_PRESERVE, error);
}

void
brooq_job_cancel(brooq_job_ctx *j)
{
	brq_job_outcome_clear(j);
	j->outcome = BROOQ_OUTCOME_CANCEL;
}

void
brooq_job_cancel_error(brooq_job_ctx *j, const char *error)
{
	set_error_outcome(j, BROOQ_OUTCOME_CANCEL, error);
}
