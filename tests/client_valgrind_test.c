/* SPDX-License-Identifier: MIT */
/* Runs client_valgrind under valgrind against a real gateway: no definite or indirect leaks, no errors. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <criterion/criterion.h>

#include "gw.h"
#include "testdb.h"

#ifndef BRQ_VALGRIND
#error "BRQ_VALGRIND (the valgrind program) must be defined by the build"
#endif

static char  *dsn;
static brq_gw gw;

static void
setup(void)
{
	/* Timeouts for the worker part of client_valgrind: vg.slow's attempts time out,
	 * vg.hang's run past their maximum execution time. */
	static const char *const env[] = {
		"BROOQ_TOPIC_OVERRIDES=vg.slow:attempt_timeout=200ms;vg.hang:max_execution_time=700ms", NULL};
	dsn = brq_testdb_create(true);
	brq_gw_start(&gw, dsn, env);
}

static void
teardown(void)
{
	brq_gw_stop(&gw);
	brq_testdb_drop(dsn);
}

TestSuite(client_valgrind, .init = setup, .fini = teardown, .timeout = 280);

Test(client_valgrind, the_client_library_leaks_nothing_and_valgrind_finds_no_errors)
{
	char cmd[2048], log[400];
	snprintf(log, sizeof(log), "%s/valgrind.log", gw.dir);
	snprintf(cmd, sizeof(cmd),
		 "%s --quiet --leak-check=full --errors-for-leak-kinds=definite,indirect "
		 "--error-exitcode=1 --log-file=%s %s ipc://%s/gw.sock %s %s ipc://%s/nobody.sock",
		 BRQ_VALGRIND, log, BRQ_VALGRIND_PROG, gw.dir, gw.worker_token_file, gw.admin_token_file,
		 gw.dir);
	int st = system(cmd);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		char show[500];
		snprintf(show, sizeof(show), "cat %s >&2", log);
		(void) system(show);
	}
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "valgrind run failed (status 0x%x); log above", st);
}
