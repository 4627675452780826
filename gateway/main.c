// SPDX-License-Identifier: MIT
// brooq-gateway: loads the configuration, starts the server, pool, janitor, monitor and HTTP, tells systemd,
// reloads on SIGHUP and stops on SIGTERM/SIGINT.
#include <errno.h>
#include <pthread.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "auth.h"
#include "brq_clock.h"
#include "config/config.h"
#include "console/console.h"
#include "http.h"
#include "background/background.h"
#include "log/log.h"
#include "metrics/metrics.h"
#include "notify.h"
#include "reload.h"
#include "reload_creds.h"
#include "rpc/rpc.h"
#include "store/store.h"
#include "brq_version.h"

// The main loop wakes at least this often: log rate-limit summaries, the watchdog, a
// schema refused by a connection.
#define TICK_MS 1000
// Exit status of a gateway that refuses the database's schema: EX_CONFIG of
// sysexits.h, which systemctl status shows as "status=78/CONFIG". The unit's
// RestartPreventExitStatus= keeps systemd from restarting it into the same refusal.
#define EXIT_SCHEMA 78

struct args {
	const char *env_file;
	const char *credentials_dir; // --credentials-dir
	const char *reload_pid;      // --reload-credentials PID (reload_creds.h)
	bool        is_check;
	bool        is_journal; // stderr is systemd's journal stream
};

// Everything main starts, in start order; stopped in reverse.
struct services {
	brq_selfprobe       *probe;
	brq_store           *store;
	brq_server           srv;
	brq_janitor          jan;
	brq_sched            sched;
	brq_monitor         *mon;
	brq_history          hist; // the console's history writer
	brq_cancel_listener *listener;
	brq_http            *http;
	brq_console         *console;           // on http; freed after it stops
	bool                 is_schema_refused; // start failed on the database's schema (logged)
};

// The credentials' layout comes from the table the loader reads (config.h), so that
// this text, the code and the unit cannot say different things
// (tests/credentials_layout_test.sh compares it with the unit).
static void
usage(FILE *f)
{
	fprintf(f,
		"usage: brooq-gateway [--env-file FILE] [--credentials-dir DIR] [--check-config]\n"
		"       brooq-gateway --reload-credentials PID [--credentials-dir DIR]\n"
		"       brooq-gateway --version | --help\n"
		"Settings are BROOQ_* environment variables, or lines of the env file (every\n"
		"setting: man 8 brooq-gateway). Secrets arrive as systemd credentials in\n"
		"$CREDENTIALS_DIRECTORY; --credentials-dir reads them where the unit loads them\n"
		"from instead:\n");
	for (size_t i = 0; i < brq_unit_credentials_count; i++) {
		const brq_unit_credential *c = &brq_unit_credentials[i];
		char                       where[64];
		snprintf(where, sizeof(where), "DIR/%s%s", c->source, c->is_dir ? "/NAME" : "");
		fprintf(f, "  %-24s %s (credential %s%s)\n", where, c->doc, c->id, c->is_dir ? "_NAME" : "");
	}
	fprintf(f,
		"--check-config loads everything, prints every problem and exits 2, or prints\n"
		"\"configuration ok\"; with neither --credentials-dir nor $CREDENTIALS_DIRECTORY it\n"
		"reads the unit's %s, if it exists, as systemd will.\n"
		"SIGHUP reloads token files and the log level; SIGTERM stops gracefully.\n"
		"--reload-credentials (the unit's ExecReload=, as root) copies the token directories\n"
		"of %s (or DIR) into $RUNTIME_DIRECTORY/%s for the gateway PID,\n"
		"which systemd started, and sends it SIGHUP.\n",
		BRQ_UNIT_CREDENTIALS_DIR, BRQ_UNIT_CREDENTIALS_DIR, BRQ_RELOAD_CREDS_NAME);
}

// `--NAME VALUE` or `--NAME=VALUE` (not empty) at argv[*i]: 1 and *out set (and *i
// past the value), 0 for another argument, -1 for the option without a value.
static int
take_value(int argc, char **argv, int *i, const char *name, const char **out)
{
	size_t len = strlen(name);
	if (strcmp(argv[*i], name) == 0) {
		if (*i + 1 >= argc)
			return -1;
		*out = argv[++*i];
		return 1;
	}
	if (strncmp(argv[*i], name, len) == 0 && argv[*i][len] == '=') {
		*out = argv[*i] + len + 1;
		return **out != '\0' ? 1 : -1;
	}
	return 0;
}

// Returns -1 to go on, else the exit status.
static int
parse_args(int argc, char **argv, struct args *a)
{
	for (int i = 1; i < argc; i++) {
		int env = take_value(argc, argv, &i, "--env-file", &a->env_file);
		int dir = env != 0 ? 0 : take_value(argc, argv, &i, "--credentials-dir", &a->credentials_dir);
		int pid = env != 0 || dir != 0
			? 0
			: take_value(argc, argv, &i, "--reload-credentials", &a->reload_pid);
		if (env < 0 || dir < 0 || pid < 0) {
			usage(stderr);
			return 2;
		} else if (env > 0 || dir > 0 || pid > 0) {
			continue;
		} else if (strcmp(argv[i], "--check-config") == 0) {
			a->is_check = true;
		} else if (strcmp(argv[i], "--version") == 0) {
			printf("brooq-gateway %s\n", BROOQ_VERSION);
			return 0;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	// The copy is a mode of its own: it reads no settings and starts nothing.
	if (a->reload_pid != NULL && (a->is_check || a->env_file != NULL)) {
		usage(stderr);
		return 2;
	}
	return -1;
}

// One problem per line, naming the variable or file. Under journald each line gets
// the error priority ("<3>"), so `journalctl -p err` shows why the start failed.
static void
print_problems(const brq_config_problems *p, bool is_journal)
{
	const char *prio = is_journal ? "<3>" : "";
	fprintf(stderr, "%sbrooq-gateway: invalid configuration (%zu problem%s):\n", prio, p->count,
		p->count == 1 ? "" : "s");
	for (size_t i = 0; i < p->count; i++)
		fprintf(stderr, "%s  %s\n", prio, p->lines[i]);
	if (p->is_oom)
		fprintf(stderr, "%s  (out of memory: more problems may exist)\n", prio);
}

// Configuration and tokens, every problem in one round. Returns -1 to go on, else the
// exit status (2: invalid configuration).
static int
load(const struct args *a, brq_config *cfg, brq_auth *auth)
{
	brq_config_problems problems;
	brq_auth_set       *set = NULL;

	if (sodium_init() < 0 || brq_auth_open(auth) != 0) {
		fprintf(stderr, "brooq-gateway: libsodium failed to initialise\n");
		return 1;
	}
	brq_reload_src src = {
		.env_file = a->env_file, .credentials_dir = a->credentials_dir, .is_check = a->is_check};
	int rc = brq_reload_load(&src, auth, cfg, &set, &problems);
	if (rc != 0) {
		print_problems(&problems, a->is_journal);
		brq_config_problems_fini(&problems);
		return rc == BRQ_EINVAL ? 2 : 1;
	}
	brq_config_problems_fini(&problems);
	brq_log_set_level(cfg->log_level);
	brq_auth_publish(auth, set);
	return -1;
}

static void
notify_or_log(const char *state)
{
	if (brq_notify(state) != 0)
		BRQ_LOG_WARN("notify_failed", "error=%s", BRQ_LOG_Q(strerror(errno)));
}

// Says at start which topics run without invariant 4 (discard_done, opt-in): an
// operator reading the log learns that their done jobs leave no row.
static void
log_discards(const brq_config *cfg)
{
	for (size_t i = 0; i < cfg->n_topic_overrides; i++)
		if (cfg->topic_overrides[i].discard_done)
			BRQ_LOG_INFO("discard_done", "topic=%s effect=\"done jobs are deleted at settle\"",
				     cfg->topic_overrides[i].topic);
}

// The one line that says why this gateway does not serve the database and what to do,
// and the same in systemctl status.
static void
log_schema_refused(const brq_schema_state *s)
{
	const char *hint = "run: brooqctl migrate up";
	if (s->verdict == BRQ_SCHEMA_UNREADABLE) {
		BRQ_LOG_ERROR("schema_unreadable", "need=%05lld error=%s hint=%s", (long long) s->need,
			      BRQ_LOG_Q(s->why),
			      BRQ_LOG_Q("grant SELECT ON goose_db_version to the gateway's role"));
		notify_or_log("STATUS=Refused: cannot read goose_db_version (see the log)");
		return;
	}
	// A version missing below the newest applied one (a hole) is named: `have` alone
	// would look new enough.
	if (s->missing < s->have)
		BRQ_LOG_ERROR("schema_too_old", "have=%05lld need=%05lld missing=%05lld hint=%s",
			      (long long) s->have, (long long) s->need, (long long) s->missing,
			      BRQ_LOG_Q(hint));
	else
		BRQ_LOG_ERROR("schema_too_old", "have=%05lld need=%05lld hint=%s", (long long) s->have,
			      (long long) s->need, BRQ_LOG_Q(hint));
	char status[160];
	snprintf(status, sizeof(status),
		 "STATUS=Refused: database schema %05lld, this gateway needs %05lld; %s", (long long) s->have,
		 (long long) s->need, hint);
	notify_or_log(status);
}

// Checks the database's schema before anything serves: false when this build refuses it
// (logged). A database that cannot be asked now is left to the connections, which check
// it as they connect (the gateway then stops within a tick of the first refusal).
static bool
schema_ok(const brq_store *st)
{
	brq_schema_state s;
	char             err[256];
	if (brq_store_schema_check(st, &s, err, sizeof(err)) != 0) {
		BRQ_LOG_WARN("schema_unchecked", "error=%s effect=%s", BRQ_LOG_Q(err),
			     BRQ_LOG_Q("each connection checks it as it connects"));
		return true;
	}
	if (s.verdict == BRQ_SCHEMA_NEWER)
		BRQ_LOG_INFO("schema_newer", "have=%05lld need=%05lld effect=%s", (long long) s.have,
			     (long long) s.need, BRQ_LOG_Q("served: migrations only add"));
	if (s.verdict != BRQ_SCHEMA_TOO_OLD && s.verdict != BRQ_SCHEMA_UNREADABLE)
		return true;
	log_schema_refused(&s);
	return false;
}

static int
start(struct services *sv, const brq_config *cfg, brq_auth *auth)
{
	if (brq_selfprobe_new(cfg, auth, &sv->probe) != 0) // adds its token: before the server
		return BRQ_EUNAVAIL;
	if (brq_store_new(cfg, &sv->store) != 0)
		goto out_probe;
	if (!schema_ok(sv->store)) {
		sv->is_schema_refused = true;
		goto out_store;
	}
	if (brq_server_start(&sv->srv, cfg, auth, sv->store) != 0)
		goto out_store;
	if (brq_janitor_start(&sv->jan, cfg, sv->store) != 0)
		goto out_server;
	if (brq_sched_start(&sv->sched, cfg, sv->store, brq_server_wake_topic, &sv->srv) != 0)
		goto out_janitor;
	// The monitor's round doubles as the long-poll re-check for jobs that no
	// enqueue through this gateway announced.
	brq_monitor_opts mopts = {.interval_ms  = cfg->poll_interval_ms,
				  .on_ready     = brq_server_wake_topic,
				  .on_ready_arg = &sv->srv,
				  .figures      = &sv->srv.figures};
	if (brq_monitor_start(sv->store, &mopts, &sv->mon) != 0)
		goto out_sched;
	if (brq_history_start(&sv->hist, sv->store) != 0)
		goto out_monitor;
	// Cancels of running jobs, whichever gateway made them, reach the watches of their
	// workers through it (rpc/watch.h).
	brq_cancel_listener_opts lopts = {
		.on_cancels = brq_server_cancels_heard, .on_live = brq_server_cancels_live, .arg = &sv->srv};
	if (brq_cancel_listener_start(sv->store, &lopts, &sv->listener) != 0)
		goto out_history;
	brq_http_check checks[] = {{brq_monitor_healthy, sv->mon, "database unavailable"},
				   {brq_selfprobe_healthy, sv->probe, "rpc listener not answering"}};
	if (brq_selfprobe_start(sv->probe) != 0 ||
	    (cfg->http_enabled && brq_http_start_checks(cfg, checks, 2, &sv->http) != 0))
		goto out_listener;
	brq_console_env cenv = {
		.cfg = cfg, .auth = auth, .pool = &sv->srv.pool, .ops = &sv->srv.ops, .lim = &sv->srv.lim};
	if (sv->http != NULL && cfg->console_enabled && brq_console_start(sv->http, &cenv, &sv->console) != 0)
		goto out_http;
	if (sv->http != NULL && !cfg->console_enabled)
		BRQ_LOG_INFO("console_off", "reason=%s",
			     brq_config_host_is_loopback(cfg->http_host)
				     ? "BROOQ_CONSOLE=off"
				     : "non-loopback BROOQ_HTTP_LISTEN without BROOQ_CONSOLE=on");
	return 0;
out_http:
	brq_http_stop(sv->http);
	sv->http = NULL;
out_listener:
	brq_selfprobe_free(sv->probe);
	sv->probe = NULL;
	brq_cancel_listener_stop(sv->listener);
out_history:
	brq_history_stop(&sv->hist);
out_monitor:
	brq_monitor_stop(sv->mon);
out_sched:
	brq_sched_stop(&sv->sched);
out_janitor:
	brq_janitor_stop(&sv->jan);
out_server:
	brq_server_stop(&sv->srv);
out_store:
	brq_store_free(sv->store);
out_probe:
	brq_selfprobe_free(sv->probe);
	return BRQ_EUNAVAIL;
}

static void
stop(struct services *sv)
{
	brq_http_stop(sv->http);       // waits for the console's requests on the pool
	brq_console_free(sv->console); // after the HTTP endpoint: its handler points at it
	brq_selfprobe_free(sv->probe); // before the server stops: no failed probe while it drains
	brq_cancel_listener_stop(sv->listener);
	brq_history_stop(&sv->hist);
	brq_monitor_stop(sv->mon);
	brq_sched_stop(&sv->sched);
	brq_janitor_stop(&sv->jan);
	brq_server_stop(&sv->srv);
	brq_store_free(sv->store);
}

// The last resort of a stop: what the grace and the statements' cancel could not end
// (a thread stuck where no cancel reaches) must not keep the process alive, since
// systemd, an operator or a test waits for it. Its jobs' leases go back through the
// reaper of another gateway, or this one's next start.
#define STOP_BACKSTOP_MS 10000

static void *
stop_backstop(void *arg)
{
	uint64_t        ms = *(const uint64_t *) arg + STOP_BACKSTOP_MS;
	struct timespec ts = {.tv_sec = (time_t) (ms / 1000), .tv_nsec = (long) (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
	}
	BRQ_LOG_ERROR("shutdown_forced", "after_ms=%llu", (unsigned long long) ms);
	brq_log_limit_flush(true);
	_exit(1);
}

// One SIGHUP: RELOADING=1 with the time (as systemd 253+ wants), reload, READY=1.
static void
reload(brq_reload *r)
{
	if (brq_notifyf("RELOADING=1\nMONOTONIC_USEC=%llu", (unsigned long long) brq_now_us()) != 0)
		BRQ_LOG_WARN("notify_failed", "error=%s", BRQ_LOG_Q(strerror(errno)));
	if (brq_reload_run(r) == 0)
		notify_or_log("READY=1\nSTATUS=Serving; last reload applied");
	else
		notify_or_log(
			"READY=1\nSTATUS=Serving; last reload failed (see the log), previous settings kept");
}

// Waits for SIGTERM/SIGINT (returned), reloading on SIGHUP; returns 0 when a connection
// refused the database's schema (logged). Every tick: log rate-limit summaries whose
// interval ended, WATCHDOG=1 every half period, and the schema.
static int
serve(const sigset_t *sigs, brq_reload *r, const brq_store *st)
{
	uint64_t wd_us   = brq_notify_watchdog_usec();
	uint64_t tick_ms = wd_us > 0 && wd_us / 2000 < TICK_MS ? wd_us / 2000 : TICK_MS;
	uint64_t next_wd = 0;

	if (tick_ms == 0)
		tick_ms = 1;
	for (;;) {
		struct timespec ts  = {.tv_sec  = (time_t) (tick_ms / 1000),
				       .tv_nsec = (long) (tick_ms % 1000) * 1000000L};
		int             sig = sigtimedwait(sigs, NULL, &ts);
		if (sig == SIGTERM || sig == SIGINT)
			return sig;
		if (sig == SIGHUP)
			reload(r);
		brq_schema_state s;
		if (brq_store_schema_refused(st, &s)) {
			log_schema_refused(&s);
			return 0;
		}
		brq_log_limit_flush(false);
		if (wd_us > 0 && brq_now_us() >= next_wd) {
			notify_or_log("WATCHDOG=1");
			next_wd = brq_now_us() + wd_us / 2;
		}
	}
}

int
main(int argc, char **argv)
{
	struct args     a    = {0};
	brq_config      cfg  = {0};
	brq_auth        auth = {0};
	struct services sv   = {0};
	sigset_t        sigs;
	int             rc = parse_args(argc, argv, &a);

	if (rc >= 0)
		return rc;
	if (a.reload_pid != NULL)
		return brq_reload_creds_main(a.reload_pid, a.credentials_dir);
	// Memory of a big request goes back to the system when it is freed. glibc raises
	// its mmap threshold to the size of each mmapped block freed (up to 32 MiB), after
	// which big requests come from the heap and stay there as free but resident
	// memory: fixing the threshold keeps them mmapped, and a lower trim threshold
	// returns the heap's free top sooner (issue 10.4).
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	mallopt(M_TRIM_THRESHOLD, 512 * 1024);
	a.is_journal = brq_log_detect_journal(STDERR_FILENO);
	rc           = load(&a, &cfg, &auth);
	if (rc >= 0)
		goto out_auth;
	if (a.is_check) {
		printf("configuration ok\n");
		rc = 0;
		goto out_auth;
	}
	// Every thread started from here on inherits the blocked set, so the signals
	// reach only sigtimedwait() in serve(). SIGHUP is blocked before any thread
	// exists: its default action would end the process.
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	brq_crash_install(STDERR_FILENO, a.is_journal);

	rc = 1;
	if (brq_metrics_init(BROOQ_VERSION) != 0)
		goto out_auth;
	BRQ_LOG_INFO("starting", "version=%s pool_size=%u lease_ms=%llu max_waiters=%u", BROOQ_VERSION,
		     cfg.pool_size, (unsigned long long) cfg.lease_ms, cfg.max_waiters);
	log_discards(&cfg);
	if (start(&sv, &cfg, &auth) != 0) {
		rc = sv.is_schema_refused ? EXIT_SCHEMA : 1;
		goto out_metrics;
	}
	BRQ_LOG_INFO("ready", "listen=%s", BRQ_LOG_Q(cfg.listen));
	notify_or_log("READY=1\nSTATUS=Serving");

	brq_reload r   = {.src       = {.env_file = a.env_file, .credentials_dir = a.credentials_dir},
			  .auth      = &auth,
			  .cfg       = &cfg,
			  .log_level = cfg.log_level};
	int        sig = serve(&sigs, &r, sv.store);
	if (sig != 0)
		BRQ_LOG_INFO("stopping", "signal=%s", sig == SIGTERM ? "SIGTERM" : "SIGINT");
	else
		BRQ_LOG_INFO("stopping", "reason=schema_refused");
	notify_or_log("STOPPING=1\nSTATUS=Stopping");
	pthread_t backstop;
	if (pthread_create(&backstop, NULL, stop_backstop, &cfg.shutdown_grace_ms) == 0)
		pthread_detach(backstop);
	stop(&sv);
	rc = sig != 0 ? 0 : EXIT_SCHEMA;
out_metrics:
	brq_metrics_fini();
out_auth:
	brq_log_limit_flush(true);
	brq_auth_fini(&auth);
	brq_config_fini(&cfg);
	return rc;
}
