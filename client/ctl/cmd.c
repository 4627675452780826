/* SPDX-License-Identifier: MIT */
/* brooqctl's gateway commands (ping, enqueue, job, cancel, stats) over libbrooq-client. */
#include "cmd.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "brq_clock.h"
#include "brq_units.h"
#include "fmt.h"

/* Largest payload read from stdin ("-"); the gateway enforces its own limit. */
#define STDIN_MAX (64u << 20)

/* ---- errors ---------------------------------------------------------------------------- */

static int
exit_code(brooq_err err)
{
	switch (err) {
	case BROOQ_OK: return BRQ_EXIT_OK;
	case BROOQ_EINVAL: return BRQ_EXIT_USAGE;
	case BROOQ_ETIMEDOUT:
	case BROOQ_ECONNECT:
	case BROOQ_EUNAVAILABLE:
	case BROOQ_ERESOURCE_EXHAUSTED: return BRQ_EXIT_UNREACHABLE;
	case BROOQ_ETOKEN:
	case BROOQ_EUNAUTHENTICATED:
	case BROOQ_EPERMISSION_DENIED: return BRQ_EXIT_AUTH;
	default: return BRQ_EXIT_FAIL;
	}
}

/* Stable names for --json error objects' "code": the protocol's status code where the
 * gateway gave one (docs/protocol.md §6), else what failed on this side. */
static const char *
err_name(brooq_err err)
{
	switch (err) {
	case BROOQ_OK: return "ok";
	case BROOQ_EINVAL: return "invalid";
	case BROOQ_ENOMEM: return "out_of_memory";
	case BROOQ_ETIMEDOUT: return "timed_out";
	case BROOQ_ECONNECT: return "unreachable";
	case BROOQ_EPROTO: return "bad_reply";
	case BROOQ_ETOKEN: return "token";
	case BROOQ_EINVALID_ARGUMENT: return "invalid_argument";
	case BROOQ_EUNAUTHENTICATED: return "unauthenticated";
	case BROOQ_EPERMISSION_DENIED: return "permission_denied";
	case BROOQ_ENOT_FOUND: return "not_found";
	case BROOQ_EUNAVAILABLE: return "unavailable";
	case BROOQ_ETOO_LARGE: return "too_large";
	case BROOQ_ERESOURCE_EXHAUSTED: return "resource_exhausted";
	case BROOQ_EINTERNAL: return "internal";
	case BROOQ_ECONFLICT: return "conflict";
	}
	return "unknown";
}

/* msg without a leading "CMD: " (the line names the command already). */
static const char *
unprefixed(const brq_ctl *ctl, const char *msg)
{
	size_t n = strlen(ctl->cmd);
	if (strncmp(msg, ctl->cmd, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ')
		return msg + n + 2;
	return msg;
}

static int
vfail(const brq_ctl *ctl, int exit_code, const char *name, const char *desc, const char *fmt, va_list ap)
{
	char        text[2048];
	const char *msg;
	(void) vsnprintf(text, sizeof(text), fmt, ap);
	msg = unprefixed(ctl, text);
	fputs("brooqctl: ", stderr);
	if (strcmp(ctl->cmd, "brooqctl") != 0)
		fprintf(stderr, "%s: ", ctl->cmd);
	if (desc != NULL && msg[0] != '\0')
		fprintf(stderr, "%s: ", desc);
	brq_ctl_print_safe(stderr, msg[0] != '\0' ? msg : desc != NULL ? desc : "failed");
	fputc('\n', stderr);
	if (ctl->json) {
		/* The protocol's error reply, code and msg, and the exit code. */
		printf("{\"code\":\"%s\",\"msg\":", name);
		brq_ctl_json_cstr(stdout, msg[0] != '\0' ? msg : desc != NULL ? desc : "failed");
		printf(",\"exit\":%d}\n", exit_code);
	}
	return exit_code;
}

int
brq_ctl_fail(const brq_ctl *ctl, int exit_code, const char *name, const char *desc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = vfail(ctl, exit_code, name, desc, fmt, ap);
	va_end(ap);
	return rc;
}

int
brq_ctl_usage(const brq_ctl *ctl, const char *fmt, ...)
{
	char    text[1024];
	va_list ap;
	va_start(ap, fmt);
	(void) vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (strcmp(ctl->cmd, "brooqctl") == 0)
		return brq_ctl_fail(ctl, BRQ_EXIT_USAGE, "usage", NULL, "%s (see brooqctl --help)", text);
	return brq_ctl_fail(ctl, BRQ_EXIT_USAGE, "usage", NULL, "%s (see brooqctl %s --help)", text,
			    ctl->cmd);
}

/* Reports a failed library call and returns its exit code. */
int
brq_ctl_report(const brq_ctl *ctl, brooq_err err)
{
	return brq_ctl_fail(ctl, exit_code(err), err_name(err), brooq_strerror(err), "%s",
			    brooq_last_message());
}

int
brq_ctl_open_client(const brq_ctl *ctl, brooq_client **c)
{
	brooq_client_opts o   = {.size            = sizeof(brooq_client_opts),
				 .url             = ctl->url,
				 .token_file      = ctl->token_file,
				 .timeout_ms      = ctl->timeout_ms,
				 .tls_ca_file     = ctl->tls_ca_file,
				 .tls_cert_file   = ctl->tls_cert_file,
				 .tls_key_file    = ctl->tls_key_file,
				 .tls_server_name = ctl->tls_server_name};
	brooq_err         err = brooq_client_open(&o, c);
	return err == BROOQ_OK ? BRQ_EXIT_OK : brq_ctl_report(ctl, err);
}

int
brq_ctl_parse_id(const brq_ctl *ctl, int argc, char **argv, uint64_t *id)
{
	if (argc != 1)
		return brq_ctl_usage(ctl, "expected exactly one job ID");
	if (brq_ctl_parse_u64(argv[0], 1, INT64_MAX, id) != 0)
		return brq_ctl_usage(ctl, "the job ID must be a positive integer, not '%s'", argv[0]);
	return BRQ_EXIT_OK;
}

int
brq_ctl_run_for_id(const brq_ctl *ctl, int argc, char **argv,
		   int (*fn)(const brq_ctl *ctl, brooq_client *c, uint64_t id))
{
	brooq_client *c;
	uint64_t      id;
	int           rc = brq_ctl_parse_id(ctl, argc, argv, &id);
	if (rc == BRQ_EXIT_OK && (rc = brq_ctl_open_client(ctl, &c)) == BRQ_EXIT_OK) {
		rc = fn(ctl, c, id);
		brooq_client_close(c);
	}
	return rc;
}

/* ---- ping --------------------------------------------------------------------------------- */

/* A command without arguments: checks there are none, then opens the client. */
static int
open_noargs(const brq_ctl *ctl, int argc, brooq_client **c)
{
	if (argc != 0)
		return brq_ctl_usage(ctl, "takes no arguments");
	return brq_ctl_open_client(ctl, c);
}

int
brq_ctl_ping(const brq_ctl *ctl, int argc, char **argv)
{
	brooq_client *c;
	char          server[256];
	int           rc;
	(void) argv;

	if ((rc = open_noargs(ctl, argc, &c)) != BRQ_EXIT_OK)
		return rc;
	uint64_t  t0  = brq_now_us();
	brooq_err err = brooq_ping(c, server, sizeof(server));
	uint64_t  rtt = brq_now_us() - t0;
	if (err != BROOQ_OK) {
		rc = brq_ctl_report(ctl, err);
	} else if (ctl->json) {
		/* Integers only, as every duration of the JSON form; a round trip is well under
		 * a millisecond on one machine, so microseconds. */
		fputs("{\"server\":", stdout);
		brq_ctl_json_cstr(stdout, server);
		printf(",\"rtt_us\":%llu}\n", (unsigned long long) rtt);
	} else {
		brq_ctl_print_safe(stdout, server);
		printf(" (%.1f ms)\n", (double) rtt / 1000.0);
	}
	brooq_client_close(c);
	return rc;
}

/* ---- enqueue --------------------------------------------------------------------------------- */

/* Reads all of stdin into a malloc'd NUL-terminated buffer; NULL on error or over STDIN_MAX. */
static char *
read_stdin(size_t *len)
{
	size_t cap = 4096, n = 0;
	char  *buf = malloc(cap);
	while (buf != NULL) {
		if (n + 1 >= cap) {
			char *grown = cap < STDIN_MAX ? realloc(buf, cap * 2) : NULL;
			if (grown == NULL) {
				free(buf);
				return NULL;
			}
			buf = grown;
			cap *= 2;
		}
		size_t got = fread(buf + n, 1, cap - n - 1, stdin);
		n += got;
		if (got == 0) {
			if (ferror(stdin)) {
				free(buf);
				return NULL;
			}
			buf[n] = '\0';
			*len   = n;
			return buf;
		}
	}
	return NULL;
}

int
brq_ctl_enqueue(const brq_ctl *ctl, int argc, char **argv)
{
	brooq_client        *c;
	brooq_enqueue_result r     = BROOQ_ENQUEUE_RESULT_INIT;
	char                *owned = NULL;
	size_t               plen  = 0;
	int                  rc;

	if (argc != 2)
		return brq_ctl_usage(ctl, "expected TOPIC and JSON");
	const char *payload = argv[1];
	if (strcmp(payload, "-") == 0) {
		if ((owned = read_stdin(&plen)) == NULL)
			return brq_ctl_fail(ctl, BRQ_EXIT_FAIL, "input", NULL,
					    "cannot read the payload from stdin (at most %u bytes)",
					    STDIN_MAX);
		payload = owned;
	} else {
		plen = strlen(payload);
	}
	if (plen == 0) {
		free(owned);
		return brq_ctl_usage(ctl, "the JSON payload is empty");
	}
	brooq_job_spec spec = {
		.size         = sizeof(brooq_job_spec),
		.topic        = argv[0],
		.payload      = payload,
		.payload_len  = plen,
		.key          = ctl->key,
		.delay_ms     = ctl->delay_ms,
		.max_attempts = ctl->max_attempts,
		.priority     = ctl->priority,
	};
	if ((rc = brq_ctl_open_client(ctl, &c)) != BRQ_EXIT_OK) {
		free(owned);
		return rc;
	}
	brooq_err err = brooq_enqueue(c, &spec, 1, &r);
	if (err != BROOQ_OK)
		rc = brq_ctl_report(ctl, err);
	else if (ctl->json)
		printf("{\"id\":%" PRIu64 ",\"created\":%s}\n", r.id, r.created ? "true" : "false");
	else if (r.created)
		printf("enqueued job %" PRIu64 "\n", r.id);
	else
		printf("job %" PRIu64 " already exists with this key (not enqueued again)\n", r.id);
	brooq_client_close(c);
	free(owned);
	return rc;
}

/* ---- job ------------------------------------------------------------------------------------------ */

/* JSON text as the gateway's jsonb printed it (a payload, a result): embedded as it is;
 * null when there is none. */
static void
json_text(const char *name, const char *text)
{
	printf(",\"%s\":%s", name, text != NULL && text[0] != '\0' ? text : "null");
}

/* ,"NAME":"text" or ,"NAME":null. */
static void
json_member(const char *name, const char *s)
{
	printf(",\"%s\":", name);
	brq_ctl_json_cstr(stdout, s);
}

void
brq_ctl_print_job_json(const brooq_job_info *j)
{
	/* The job map of docs/protocol.md §7.8, every key in its order, in its JSON form
	 * (§11): each instant twice, nil and absent keys null (the library's 0). */
	printf("{\"id\":%" PRIu64, j->id);
	json_member("topic", j->topic);
	json_text("payload", j->payload);
	printf(",\"state\":\"%s\",\"attempts\":%" PRIu32 ",\"max_attempts\":%" PRIu32,
	       brooq_state_name(j->state), j->attempts, j->max_attempts);
	brq_ctl_json_instant(stdout, "available_at", j->available_at_ms, true);
	json_member("locked_by", j->locked_by);
	brq_ctl_json_instant(stdout, "locked_until", j->locked_until_ms, j->locked_until_ms != 0);
	json_member("last_error", j->last_error);
	json_member("key", j->key);
	brq_ctl_json_instant(stdout, "created_at", j->created_at_ms, true);
	brq_ctl_json_instant(stdout, "updated_at", j->updated_at_ms, true);
	brq_ctl_json_opt_u64(stdout, "priority", j->priority, j->priority > 0);
	json_text("result", j->result);
	brq_ctl_json_opt_u64(stdout, "retry_of", j->retry_of, j->retry_of != 0);
	brq_ctl_json_instant(stdout, "claimed_at", j->claimed_at_ms, j->claimed_at_ms != 0);
	brq_ctl_json_instant(stdout, "attempt_deadline", j->attempt_deadline_ms, j->attempt_deadline_ms != 0);
	brq_ctl_json_instant(stdout, "max_execution_deadline", j->max_execution_deadline_ms,
			     j->max_execution_deadline_ms != 0);
	printf(",\"lost_leases\":%" PRIu32, j->lost_leases);
	/* The attempts' errors, oldest first: the job reply's; null in a list's rows. */
	if (!j->has_errors) {
		fputs(",\"errors\":null}", stdout);
		return;
	}
	fputs(",\"errors\":[", stdout);
	for (size_t i = 0; i < j->n_errors; i++) {
		printf("%s{\"attempt\":%" PRIu32, i > 0 ? "," : "", j->errors[i]->attempt);
		brq_ctl_json_instant(stdout, "at", j->errors[i]->at_ms, true);
		json_member("error", j->errors[i]->error);
		fputc('}', stdout);
	}
	fputs("]}", stdout);
}

static void
row(const char *name, const char *value)
{
	printf("%-13s ", name);
	brq_ctl_print_safe(stdout, value);
	fputc('\n', stdout);
}

static void
row_time(const char *name, int64_t ms, bool has)
{
	char t[BRQ_TIME_TEXT_MAX];
	row(name, has ? brq_fmt_time_ms(t, sizeof(t), ms) : NULL);
}

static void
print_job_table(const brooq_job_info *j)
{
	char buf[64];
	snprintf(buf, sizeof(buf), "%" PRIu64, j->id);
	row("id", buf);
	row("topic", j->topic);
	row("state", brooq_state_name(j->state));
	snprintf(buf, sizeof(buf), "%" PRIu32 " of %" PRIu32, j->attempts, j->max_attempts);
	row("attempts", buf);
	/* Leases that ran out without an outcome (SPEC invariant 18): shown once there is
	 * one, as a crash loop's trace. */
	if (j->lost_leases > 0) {
		snprintf(buf, sizeof(buf), "%" PRIu32, j->lost_leases);
		row("lost_leases", buf);
	}
	if (j->priority > 0) {
		snprintf(buf, sizeof(buf), "%" PRIu32, j->priority);
		row("priority", buf);
	}
	row_time("available_at", j->available_at_ms, true);
	row("locked_by", j->locked_by);
	row_time("locked_until", j->locked_until_ms, j->locked_until_ms != 0);
	row("last_error", j->last_error);
	row("key", j->key);
	row_time("created_at", j->created_at_ms, true);
	row_time("updated_at", j->updated_at_ms, true);
	if (j->retry_of != 0) {
		snprintf(buf, sizeof(buf), "%" PRIu64, j->retry_of);
		row("retry_of", buf);
	}
	row_time("claimed_at", j->claimed_at_ms, j->claimed_at_ms != 0);
	/* Only while processing, and only when the topic has them. */
	if (j->attempt_deadline_ms != 0)
		row_time("deadline", j->attempt_deadline_ms, true);
	if (j->max_execution_deadline_ms != 0)
		row_time("max_exec_end", j->max_execution_deadline_ms, true);
	row("payload", j->payload);
	row("result", j->result);
	/* The attempts' errors, oldest first: the attempt, when, and what. */
	for (size_t i = 0; i < j->n_errors; i++) {
		char name[32], t[BRQ_TIME_TEXT_MAX];
		snprintf(name, sizeof(name), "error #%" PRIu32, j->errors[i]->attempt);
		printf("%-13s %s ", name, brq_fmt_time_ms(t, sizeof(t), j->errors[i]->at_ms));
		brq_ctl_print_safe(stdout, j->errors[i]->error);
		fputc('\n', stdout);
	}
}

static int
job_show(const brq_ctl *ctl, brooq_client *c, uint64_t id)
{
	brooq_job_info *j;
	brooq_err       err = brooq_job_get(c, id, &j);
	if (err != BROOQ_OK)
		return brq_ctl_report(ctl, err);
	if (ctl->json) {
		/* The reply's form: the job under "job", as the console gives it. */
		fputs("{\"job\":", stdout);
		brq_ctl_print_job_json(j);
		fputs("}\n", stdout);
	} else {
		print_job_table(j);
	}
	brooq_job_info_free(j);
	return BRQ_EXIT_OK;
}

int
brq_ctl_job(const brq_ctl *ctl, int argc, char **argv)
{
	return brq_ctl_run_for_id(ctl, argc, argv, job_show);
}

/* ---- cancel ----------------------------------------------------------------------------------------- */

static int
cancel_one(const brq_ctl *ctl, brooq_client *c, uint64_t id)
{
	brooq_state st;
	bool        canceled;
	int         rc  = BRQ_EXIT_OK;
	brooq_err   err = brooq_cancel(c, id, &st, &canceled);
	if (err != BROOQ_OK) {
		rc = brq_ctl_report(ctl, err);
	} else if (st != BROOQ_CANCELED) {
		/* Done or dead: it cannot be canceled (nothing changed). An error, with the
		 * keys every error carries, and the job's state. */
		rc = BRQ_EXIT_FAIL;
		fprintf(stderr,
			"brooqctl: cancel: not cancelable: job %" PRIu64 " is already %s; nothing changed\n",
			id, brooq_state_name(st));
		if (ctl->json)
			printf("{\"code\":\"not_cancelable\",\"msg\":\"job %" PRIu64
			       " is already %s; nothing changed\",\"exit\":%d,\"id\":%" PRIu64
			       ",\"state\":\"%s\",\"canceled\":false}\n",
			       id, brooq_state_name(st), rc, id, brooq_state_name(st));
	} else if (ctl->json) {
		/* Canceled now or before: the job will not run. */
		printf("{\"id\":%" PRIu64 ",\"state\":\"canceled\",\"canceled\":%s}\n", id,
		       canceled ? "true" : "false");
	} else if (canceled) {
		printf("job %" PRIu64 " canceled\n", id);
	} else {
		printf("job %" PRIu64 " is already canceled; nothing changed\n", id);
	}
	return rc;
}

int
brq_ctl_cancel(const brq_ctl *ctl, int argc, char **argv)
{
	return brq_ctl_run_for_id(ctl, argc, argv, cancel_one);
}

/* ---- stats ----------------------------------------------------------------------------------------------
 */

static const brooq_state state_order[] = {BROOQ_PENDING, BROOQ_PROCESSING, BROOQ_FAILED,
					  BROOQ_DONE,    BROOQ_DEAD,       BROOQ_CANCELED};
#define N_STATES (sizeof(state_order) / sizeof(state_order[0]))

/* The stats reply's JSON form (docs/protocol.md §7.9, §11): every key of each topic, the
 * policy keys too (false and null for a topic without a policy). */
static void
print_stats_json(brooq_topic_stats *const *s, size_t n, const brooq_stats_meta *m)
{
	fputs("{", stdout);
	if (m->terminal_age_ms != BROOQ_AGE_UNKNOWN)
		printf("\"terminal_age_ms\":%" PRIu64, m->terminal_age_ms);
	else
		fputs("\"terminal_age_ms\":null", stdout);
	// As the reply's JSON form: present only when true.
	if (m->terminal_estimated)
		fputs(",\"terminal_estimated\":true", stdout);
	fputs(",\"topics\":[", stdout);
	for (size_t i = 0; i < n; i++) {
		fputs(i > 0 ? ",{\"topic\":" : "{\"topic\":", stdout);
		brq_ctl_json_cstr(stdout, s[i]->topic);
		for (size_t k = 0; k < N_STATES; k++)
			printf(",\"%s\":%" PRIu64, brooq_state_name(state_order[k]),
			       s[i]->count[state_order[k]]);
		printf(",\"oldest_ready_age_ms\":%" PRIu64 ",\"paused\":%s", s[i]->oldest_ready_age_ms,
		       s[i]->paused ? "true" : "false");
		brq_ctl_json_opt_u64(stdout, "max_running", s[i]->max_running, s[i]->max_running > 0);
		brq_ctl_json_opt_u64(stdout, "rate_per_s", s[i]->rate_per_s, s[i]->rate_per_s > 0);
		fputs("}", stdout);
	}
	fputs("]}\n", stdout);
}

// estimated: the terminal counts are an estimate (brooq_stats_meta): each is marked "~",
// and a line under the table says so.
static void
print_stats_table(brooq_topic_stats *const *s, size_t n, bool estimated)
{
	int w = 5;
	for (size_t i = 0; i < n; i++) {
		int len = (int) strlen(s[i]->topic);
		w       = len > w ? len : w;
	}
	if (n == 0) {
		printf("no jobs\n");
		return;
	}
	printf("%-*s %10s %10s %10s %10s %10s %10s  %s\n", w, "TOPIC", "PENDING", "PROCESSING", "FAILED",
	       "DONE", "DEAD", "CANCELED", "OLDEST_READY");
	for (size_t i = 0; i < n; i++) {
		char age[32];
		brq_ctl_human_ms(s[i]->oldest_ready_age_ms, age, sizeof(age));
		brq_ctl_print_safe(stdout, s[i]->topic);
		printf("%*s", w - (int) strlen(s[i]->topic), "");
		for (size_t k = 0; k < N_STATES; k++) {
			brooq_state st = state_order[k];
			bool        mark =
				estimated && (st == BROOQ_DONE || st == BROOQ_DEAD || st == BROOQ_CANCELED);
			printf(mark ? " ~%9" PRIu64 : " %10" PRIu64, s[i]->count[st]);
		}
		printf("  %s", s[i]->oldest_ready_age_ms > 0 ? age : "-");
		if (s[i]->paused)
			printf("  (paused)");
		fputc('\n', stdout);
	}
	if (estimated)
		printf("~ estimated from a sample of the table (it outgrew the monitor's counting budget)\n");
}

int
brq_ctl_stats(const brq_ctl *ctl, int argc, char **argv)
{
	brooq_client       *c;
	brooq_topic_stats **s;
	size_t              n;
	int                 rc;
	(void) argv;

	if ((rc = open_noargs(ctl, argc, &c)) != BRQ_EXIT_OK)
		return rc;
	brooq_stats_meta m   = BROOQ_STATS_META_INIT;
	brooq_err        err = brooq_stats_ex(c, &s, &n, &m);
	if (err != BROOQ_OK) {
		rc = brq_ctl_report(ctl, err);
	} else {
		if (ctl->json)
			print_stats_json(s, n, &m);
		else
			print_stats_table(s, n, m.terminal_estimated);
		brooq_stats_free(s, n);
	}
	brooq_client_close(c);
	return rc;
}
