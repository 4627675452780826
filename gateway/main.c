// SPDX-License-Identifier: MIT
// brooq-gateway: loads the configuration, starts the server, pool, janitor, monitor and HTTP, stops on
// SIGTERM/SIGINT.
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "auth.h"
#include "config.h"
#include "http.h"
#include "janitor.h"
#include "log.h"
#include "metrics.h"
#include "monitor.h"
#include "selfprobe.h"
#include "server.h"
#include "store.h"
#include "brq_version.h"

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: brooq-gateway [--env-file FILE] [--check-config] [--version]\n"
		"Configuration comes from BROOQ_* environment variables and the env file;\n"
		"see deploy/brooq-gateway.env.example.\n");
}

static void
print_problems(const struct brq_config_problems *p)
{
	fprintf(stderr, "brooq-gateway: invalid configuration (%zu problem%s):\n", p->count,
		p->count == 1 ? "" : "s");
	for (size_t i = 0; i < p->count; i++)
		fprintf(stderr, "  %s\n", p->lines[i]);
	if (p->is_oom)
		fprintf(stderr, "  (out of memory: more problems may exist)\n");
}

int
main(int argc, char **argv)
{
	const char                *env_file = NULL;
	bool                       check    = false;
	struct brq_config          cfg      = {0};
	struct brq_config_problems problems = {0};
	struct brq_auth            auth     = {0};
	struct brq_monitor        *mon      = NULL;
	brq_store                 *store    = NULL;
	struct brq_http           *http     = NULL;
	struct brq_selfprobe      *probe    = NULL;
	brq_server                 srv;
	brq_janitor                jan;
	sigset_t                   sigs;
	int                        sig, rc = 1;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--env-file") == 0 && i + 1 < argc) {
			env_file = argv[++i];
		} else if (strcmp(argv[i], "--check-config") == 0) {
			check = true;
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
	if (sodium_init() < 0) {
		fprintf(stderr, "brooq-gateway: libsodium failed to initialise\n");
		return 1;
	}
	if (brq_config_load(&cfg, env_file, NULL, NULL, &problems) != 0) {
		print_problems(&problems);
		brq_config_problems_fini(&problems);
		return 2;
	}
	brq_config_problems_fini(&problems);
	brq_config_problems_init(&problems);
	if (brq_auth_init_config(&auth, &cfg, &problems) != 0) {
		print_problems(&problems);
		brq_config_problems_fini(&problems);
		brq_config_fini(&cfg);
		return 2;
	}
	brq_config_problems_fini(&problems);
	brq_log_set_level(cfg.log_level);
	if (check) {
		printf("configuration ok\n");
		rc = 0;
		goto out_auth;
	}

	// Every thread started from here on inherits the blocked set, so the signals
	// reach only sigwait() below.
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (brq_metrics_init(BROOQ_VERSION) != 0)
		goto out_auth;
	BRQ_LOG_INFO("starting", "version=%s pool_size=%u lease_ms=%llu max_waiters=%u", BROOQ_VERSION,
		     cfg.pool_size, (unsigned long long) cfg.lease_ms, cfg.max_waiters);
	if (brq_selfprobe_new(&cfg, &auth, &probe) != 0) // adds its token: before the server
		goto out_metrics;
	if (brq_store_new(&cfg, &store) != 0)
		goto out_metrics;
	if (brq_server_start(&srv, &cfg, &auth, store) != 0)
		goto out_store;
	if (brq_janitor_start(&jan, &cfg, store) != 0)
		goto out_server;
	// The monitor's round doubles as the long-poll re-check for jobs that no
	// enqueue through this gateway announced.
	struct brq_monitor_opts mopts = {
		.interval_ms = cfg.poll_interval_ms, .on_ready = brq_server_wake_topic, .on_ready_arg = &srv};
	if (brq_monitor_start(store, &mopts, &mon) != 0)
		goto out_janitor;
	struct brq_http_check checks[] = {{brq_monitor_healthy, mon, "database unavailable"},
					  {brq_selfprobe_healthy, probe, "rpc listener not answering"}};
	if (brq_selfprobe_start(probe) != 0 ||
	    (cfg.http_enabled && brq_http_start_checks(&cfg, checks, 2, &http) != 0))
		goto out_monitor;
	BRQ_LOG_INFO("ready", "listen=%s", BRQ_LOG_Q(cfg.listen));

	sigwait(&sigs, &sig);
	BRQ_LOG_INFO("stopping", "signal=%s", sig == SIGTERM ? "SIGTERM" : "SIGINT");
	rc = 0;

	brq_http_stop(http);
out_monitor:
	brq_selfprobe_free(probe); // before the server stops: no failed probe while it drains
	probe = NULL;
	brq_monitor_stop(mon);
out_janitor:
	brq_janitor_stop(&jan);
out_server:
	brq_server_stop(&srv);
out_store:
	brq_store_free(store);
out_metrics:
	brq_selfprobe_free(probe); // when the server or janitor failed to start
	brq_metrics_fini();
out_auth:
	brq_auth_fini(&auth);
	brq_config_fini(&cfg);
	return rc;
}
