// SPDX-License-Identifier: MIT
// Tests for gateway/config/config.c: defaults, every variable, parsers, env files, all-problems-at-once,
// secrets.
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "brq_units.h"
#include "config/config.h"
#include "proto.h"
#include "config/config_parse.h"

// Directory of this file (CMake passes absolute source paths), for deploy/ files when
// the test runs outside ctest (which sets BROOQ_SOURCE_DIR).
static const char *
tests_dir(void)
{
	static char dir[512];
	snprintf(dir, sizeof(dir), "%s", __FILE__);
	char *slash = strrchr(dir, '/');
	if (slash != NULL) {
		*slash = '\0';
	} else {
		snprintf(dir, sizeof(dir), ".");
	}
	return dir;
}

#define SECRET   "S3cretPassw0rd"
#define GOOD_DSN "postgresql://brooq:" SECRET "@db.example/brooq?sslmode=require"

// A fake environment: NULL-terminated key/value table, passed through the lookup seam.
struct kv {
	const char *k, *v;
};

static const char *
tab_lookup(const char *name, void *arg)
{
	for (const struct kv *t = arg; t->k != NULL; t++) {
		if (strcmp(t->k, name) == 0) {
			return t->v;
		}
	}
	return NULL;
}

static brq_config          cfg;
static brq_config_problems probs;
static char                tmpdir[64];

static void
setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/brq_config_test_XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void
teardown(void)
{
	brq_config_fini(&cfg);
	brq_config_problems_fini(&probs);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0) {
		cr_log_warn("could not remove %s", tmpdir);
	}
}

TestSuite(config, .init = setup, .fini = teardown);

static int
load_file(const char *env_file, const struct kv *tab)
{
	return brq_config_load(&cfg, env_file, tab_lookup, (void *) tab, &probs);
}

static int
load(const struct kv *tab)
{
	return load_file(NULL, tab);
}

static bool
has_problem(const char *needle)
{
	for (size_t i = 0; i < probs.count; i++) {
		if (strstr(probs.lines[i], needle) != NULL) {
			return true;
		}
	}
	return false;
}

static void
dump_problems(void)
{
	for (size_t i = 0; i < probs.count; i++) {
		cr_log_info("problem: %s", probs.lines[i]);
	}
}

static void
assert_no_secret(void)
{
	for (size_t i = 0; i < probs.count; i++) {
		cr_assert_null(strstr(probs.lines[i], SECRET), "secret leaked: %s", probs.lines[i]);
	}
}

// Creates tmpdir/name with content and mode; returns a static path.
static const char *
write_file(const char *name, const char *content, mode_t mode)
{
	static char path[8][256];
	static int  slot;
	char       *p = path[slot++ % 8];
	snprintf(p, 256, "%s/%s", tmpdir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
	cr_assert_geq(fd, 0, "create %s", p);
	cr_assert_eq(write(fd, content, strlen(content)), (ssize_t) strlen(content));
	close(fd);
	return p;
}

// The minimal valid environment plus `extra` pairs (extra first: they win).
#define ENV(...)                                                                                             \
	(const struct kv[])                                                                                  \
	{                                                                                                    \
		__VA_ARGS__, {"BROOQ_DSN", GOOD_DSN}, {"BROOQ_WORKER_TOKEN_FILES", "/run/w1"}, {NULL, NULL}, \
	}

static const struct kv minimal[] = {
	{"BROOQ_DSN", GOOD_DSN},
	{"BROOQ_WORKER_TOKEN_FILES", "/run/w1"},
	{NULL, NULL},
};

Test(config, applies_defaults_when_only_required_variables_are_set)
{
	cr_assert_eq(load(minimal), 0);
	cr_assert_eq(probs.count, 0);
	cr_assert_str_eq(cfg.dsn, GOOD_DSN);
	cr_assert_str_eq(cfg.listen, "ipc:///run/brooq/gateway.sock");
	cr_assert_eq(cfg.ipc_mode, 0660);
	cr_assert_eq(cfg.pool_size, 4);
	cr_assert_eq(cfg.lease_ms, 120000);
	cr_assert_eq(cfg.backoff_base_ms, 1000);
	cr_assert_eq(cfg.backoff_max_ms, 60000);
	cr_assert_eq(cfg.max_attempts, 5);
	cr_assert_eq(cfg.n_worker_token_files, 1);
	cr_assert_str_eq(cfg.worker_token_files[0], "/run/w1");
	cr_assert_eq(cfg.n_admin_token_files, 0);
	cr_assert_eq(cfg.max_batch, 1000);
	cr_assert_eq(cfg.max_payload_bytes, 1024 * 1024);
	cr_assert_eq(cfg.max_request_bytes, 4 * 1024 * 1024);
	cr_assert_eq(cfg.max_inflight_bytes, 64 * 1024 * 1024);
	cr_assert_eq(cfg.max_wait_ms, 300000);
	cr_assert_eq(cfg.max_waiters, 1000);
	cr_assert_eq(cfg.poll_interval_ms, 1000);
	cr_assert_eq(cfg.reaper_interval_ms, 30000, "max(5s, 2m/4)");
	cr_assert_eq(cfg.retention_ttl_ms, 30ull * 24 * 3600 * 1000);
	cr_assert_eq(cfg.retention_interval_ms, 60000);
	cr_assert_eq(cfg.retention_batch, 1000);
	cr_assert_eq(cfg.retention_max_batches, 100);
	cr_assert(cfg.http_enabled);
	cr_assert_str_eq(cfg.http_host, "127.0.0.1");
	cr_assert_eq(cfg.http_port, 8090);
	cr_assert_not(cfg.http_allow_nonloopback);
	cr_assert_eq(cfg.selfprobe_interval_ms, 5000);
	cr_assert_eq(cfg.log_level, BRQ_LOG_LVL_INFO);
	cr_assert_eq(cfg.shutdown_grace_ms, 10000);
	cr_assert_eq(cfg.n_topic_overrides, 0);
}

Test(config, reads_every_variable)
{
	const struct kv env[] = {
		{"BROOQ_DSN", "host=db user=brooq"},
		{"BROOQ_LISTEN", "tcp://0.0.0.0:7443"}, // tls+tcp:// (and its files): tls_config_test
		{"BROOQ_IPC_MODE", "0600"},
		{"BROOQ_POOL_SIZE", "16"},
		{"BROOQ_LEASE", "30s"},
		{"BROOQ_BACKOFF_BASE", "500ms"},
		{"BROOQ_BACKOFF_MAX", "10m"},
		{"BROOQ_MAX_ATTEMPTS", "7"},
		{"BROOQ_WORKER_TOKEN_FILES", "/a/w1, /a/w2 ,/a/w1"},
		{"BROOQ_ADMIN_TOKEN_FILES", "/a/adm"},
		{"BROOQ_MAX_BATCH", "10000"},
		{"BROOQ_MAX_PAYLOAD", "64KiB"},
		{"BROOQ_MAX_REQUEST", "2MiB"},
		{"BROOQ_MAX_INFLIGHT_BYTES", "8MiB"},
		{"BROOQ_MAX_WAIT", "1h"},
		{"BROOQ_MAX_WAITERS", "0"},
		{"BROOQ_POLL_INTERVAL", "250ms"},
		{"BROOQ_REAPER_INTERVAL", "3s"},
		{"BROOQ_RETENTION_TTL", "0"},
		{"BROOQ_RETENTION_INTERVAL", "5m"},
		{"BROOQ_RETENTION_BATCH", "500"},
		{"BROOQ_RETENTION_MAX_BATCHES", "7"},
		{"BROOQ_HTTP_LISTEN", "0.0.0.0:9100"},
		{"BROOQ_HTTP_ALLOW_NONLOOPBACK", "yes"},
		{"BROOQ_SELFPROBE_INTERVAL", "750ms"},
		{"BROOQ_LOG_LEVEL", "debug"},
		{"BROOQ_SHUTDOWN_GRACE", "0"},
		{"BROOQ_TOPIC_OVERRIDES", "email.send:lease=10s"},
		{NULL, NULL},
	};
	int rc = load(env);
	dump_problems();
	cr_assert_eq(rc, 0);
	cr_assert_str_eq(cfg.dsn, "host=db user=brooq");
	cr_assert_str_eq(cfg.listen, "tcp://0.0.0.0:7443");
	cr_assert_eq(cfg.ipc_mode, 0600);
	cr_assert_eq(cfg.pool_size, 16);
	cr_assert_eq(cfg.lease_ms, 30000);
	cr_assert_eq(cfg.backoff_base_ms, 500);
	cr_assert_eq(cfg.backoff_max_ms, 600000);
	cr_assert_eq(cfg.max_attempts, 7);
	cr_assert_eq(cfg.n_worker_token_files, 2, "blanks trimmed, duplicates dropped");
	cr_assert_str_eq(cfg.worker_token_files[0], "/a/w1");
	cr_assert_str_eq(cfg.worker_token_files[1], "/a/w2");
	cr_assert_eq(cfg.n_admin_token_files, 1);
	cr_assert_str_eq(cfg.admin_token_files[0], "/a/adm");
	cr_assert_eq(cfg.max_batch, 10000);
	cr_assert_eq(cfg.max_payload_bytes, 64 * 1024);
	cr_assert_eq(cfg.max_request_bytes, 2 * 1024 * 1024);
	cr_assert_eq(cfg.max_inflight_bytes, 8 * 1024 * 1024);
	cr_assert_eq(cfg.max_wait_ms, 3600000);
	cr_assert_eq(cfg.max_waiters, 0);
	cr_assert_eq(cfg.poll_interval_ms, 250);
	cr_assert_eq(cfg.reaper_interval_ms, 3000);
	cr_assert_eq(cfg.retention_ttl_ms, 0, "0 disables retention");
	cr_assert_eq(cfg.retention_interval_ms, 300000);
	cr_assert_eq(cfg.retention_batch, 500);
	cr_assert_eq(cfg.retention_max_batches, 7);
	cr_assert(cfg.http_enabled);
	cr_assert_str_eq(cfg.http_host, "0.0.0.0");
	cr_assert_eq(cfg.http_port, 9100);
	cr_assert(cfg.http_allow_nonloopback);
	cr_assert_eq(cfg.selfprobe_interval_ms, 750);
	cr_assert_eq(cfg.log_level, BRQ_LOG_LVL_DEBUG);
	cr_assert_eq(cfg.shutdown_grace_ms, 0);
	cr_assert_eq(cfg.n_topic_overrides, 1);
}

Test(config, treats_an_empty_variable_as_unset)
{
	const struct kv *env =
		ENV({"BROOQ_LEASE", ""}, {"BROOQ_POOL_SIZE", ""}, {"BROOQ_HTTP_LISTEN", ""},
		    {"BROOQ_LOG_LEVEL", ""}, {"BROOQ_ADMIN_TOKEN_FILES", ""}, {"BROOQ_RETENTION_TTL", ""});
	cr_assert_eq(load(env), 0);
	cr_assert_eq(cfg.lease_ms, 120000);
	cr_assert_eq(cfg.pool_size, 4);
	cr_assert(cfg.http_enabled, "empty is the default, not 'off'");
	cr_assert_str_eq(cfg.http_host, "127.0.0.1");
	cr_assert_eq(cfg.log_level, BRQ_LOG_LVL_INFO);
	cr_assert_eq(cfg.n_admin_token_files, 0);
	cr_assert_eq(cfg.retention_ttl_ms, 30ull * 24 * 3600 * 1000, "empty is not 0");
}

Test(config, an_empty_dsn_is_missing)
{
	const struct kv env[] = {
		{"BROOQ_DSN", ""}, {"BROOQ_DSN_FILE", ""}, {"BROOQ_WORKER_TOKEN_FILES", "/w"}, {NULL, NULL}};
	cr_assert_eq(load(env), BRQ_EINVAL);
	cr_assert_eq(probs.count, 1);
	cr_assert(has_problem("BROOQ_DSN: required"));
}

Test(config, parses_durations_with_units)
{
	static const struct {
		const char *in;
		uint64_t    ms;
	} ok[] = {
		{"0", 0},
		{"0s", 0},
		{"0ms", 0},
		{"000", 0},
		{"1500ms", 1500},
		{"120s", 120000},
		{"2m", 120000},
		{"1h", 3600000},
		{"30d", 2592000000ull},
		{"007s", 7000},
		{"18446744073709551615ms", UINT64_MAX},
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		uint64_t    v   = 1;
		const char *why = NULL;
		cr_assert_eq(brq_parse_duration_ms(ok[i].in, &v, &why), 0, "'%s': %s", ok[i].in, why);
		cr_assert_eq(v, ok[i].ms, "'%s'", ok[i].in);
	}
}

Test(config, rejects_bare_numbers_and_malformed_durations)
{
	static const struct {
		const char *in, *why;
	} bad[] = {
		{"120", "duration needs a unit (e.g. 120s)"},
		{"1", "needs a unit"},
		{"", "empty"},
		{"-1s", "not a duration"},
		{"+1s", "not a duration"},
		{" 1s", "not a duration"},
		{"1s ", "unknown unit"},
		{"1 s", "unknown unit"},
		{"1.5s", "unknown unit"},
		{"1x", "unknown unit"},
		{"1S", "unknown unit"},
		{"1sec", "unknown unit"},
		{"1m30s", "unknown unit"},
		{"s", "not a duration"},
		{"0x10s", "unknown unit"},
		{"18446744073709551616ms", "too large"},
		{"99999999999999999999999s", "too large"},
		{"18446744073709552s", "too large"},
		{"213503982335d", "too large"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t    v   = 77;
		const char *why = NULL;
		cr_assert_neq(brq_parse_duration_ms(bad[i].in, &v, &why), 0, "accepted '%s'", bad[i].in);
		cr_assert_eq(v, 77, "output written on failure for '%s'", bad[i].in);
		cr_assert_not_null(strstr(why, bad[i].why), "'%s': got '%s'", bad[i].in, why);
	}
}

Test(config, reports_a_bare_duration_by_variable_name)
{
	cr_assert_eq(load(ENV({"BROOQ_LEASE", "120"})), BRQ_EINVAL);
	cr_assert_eq(probs.count, 1);
	cr_assert_str_eq(probs.lines[0], "BROOQ_LEASE: duration needs a unit (e.g. 120s)");
}

Test(config, accepts_zero_without_a_unit_where_zero_is_in_range)
{
	cr_assert_eq(load(ENV({"BROOQ_MAX_WAIT", "0"}, {"BROOQ_RETENTION_TTL", "0"},
			      {"BROOQ_SHUTDOWN_GRACE", "0ms"})),
		     0);
	cr_assert_eq(cfg.max_wait_ms, 0);
	cr_assert_eq(cfg.retention_ttl_ms, 0);
	cr_assert_eq(cfg.shutdown_grace_ms, 0);
}

Test(config, rejects_durations_out_of_range)
{
	cr_assert_eq(load(ENV({"BROOQ_LEASE", "0"}, {"BROOQ_BACKOFF_BASE", "0"},
			      {"BROOQ_POLL_INTERVAL", "1ms"}, {"BROOQ_MAX_WAIT", "2h"},
			      {"BROOQ_RETENTION_INTERVAL", "999ms"}, {"BROOQ_REAPER_INTERVAL", "25h"})),
		     BRQ_EINVAL);
	dump_problems();
	cr_assert(has_problem("BROOQ_LEASE: must be between 1s and 1d"));
	cr_assert(has_problem("BROOQ_BACKOFF_BASE: must be between 1ms and 1d"));
	cr_assert(has_problem("BROOQ_POLL_INTERVAL: must be between 10ms and 10m"));
	cr_assert(has_problem("BROOQ_MAX_WAIT: must be between 0 and 1h"));
	cr_assert(has_problem("BROOQ_RETENTION_INTERVAL: must be between 1s and 1d"));
	cr_assert(has_problem("BROOQ_REAPER_INTERVAL: must be between 100ms and 1d"));
	cr_assert_eq(probs.count, 6);
}

Test(config, selfprobe_interval_is_zero_for_off_or_100ms_to_10m)
{
	cr_assert_eq(load(ENV({"BROOQ_SELFPROBE_INTERVAL", "0"})), 0);
	cr_assert_eq(cfg.selfprobe_interval_ms, 0);
	brq_config_fini(&cfg);
	brq_config_problems_fini(&probs);
	cr_assert_eq(load(ENV({"BROOQ_SELFPROBE_INTERVAL", "100ms"})), 0);
	cr_assert_eq(cfg.selfprobe_interval_ms, 100);
	brq_config_fini(&cfg);
	brq_config_problems_fini(&probs);
	static const char *const bad[] = {"99ms", "11m", "5", "-1s"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(load(ENV({"BROOQ_SELFPROBE_INTERVAL", bad[i]})), BRQ_EINVAL, "%s accepted",
			     bad[i]);
		cr_assert_eq(probs.count, 1, "%s", bad[i]);
		cr_assert(has_problem("BROOQ_SELFPROBE_INTERVAL:"), "%s", bad[i]);
		brq_config_fini(&cfg);
		brq_config_problems_fini(&probs);
	}
}

// The idle timeout outlasts a long-poll: its default follows BROOQ_MAX_WAIT, and a set
// value below BROOQ_MAX_WAIT + 10s is refused; 0 turns it (and the receive timeout) off.
Test(config, idle_timeout_outlasts_the_longest_long_poll)
{
	cr_assert_eq(load(ENV({"BROOQ_MAX_WAIT", "1h"})), 0);
	cr_assert_eq(cfg.idle_timeout_ms, 61 * 60 * 1000);
	brq_config_fini(&cfg);
	brq_config_problems_fini(&probs);
	cr_assert_eq(load(ENV({"BROOQ_IDLE_TIMEOUT", "0"}, {"BROOQ_RECV_TIMEOUT", "0"})), 0);
	cr_assert_eq(cfg.idle_timeout_ms, 0);
	cr_assert_eq(cfg.recv_timeout_ms, 0);
	brq_config_fini(&cfg);
	brq_config_problems_fini(&probs);
	cr_assert_eq(load(ENV({"BROOQ_MAX_WAIT", "1s"}, {"BROOQ_IDLE_TIMEOUT", "11s"})), 0);
	cr_assert_eq(cfg.idle_timeout_ms, 11000);
	brq_config_fini(&cfg);
	brq_config_problems_fini(&probs);
	cr_assert_eq(load(ENV({"BROOQ_MAX_WAIT", "5m"}, {"BROOQ_IDLE_TIMEOUT", "5m"})), BRQ_EINVAL);
	cr_assert(has_problem("BROOQ_IDLE_TIMEOUT: must be 0 (none) or at least BROOQ_MAX_WAIT + 10s"));
	brq_config_fini(&cfg);
	brq_config_problems_fini(&probs);
	static const struct kv bad[] = {{"BROOQ_RECV_TIMEOUT", "50ms"},
					{"BROOQ_HANDSHAKE_TIMEOUT", "0"},
					{"BROOQ_HANDSHAKE_TIMEOUT", "11m"}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(load(ENV({bad[i].k, bad[i].v})), BRQ_EINVAL, "%s=%s accepted", bad[i].k,
			     bad[i].v);
		cr_assert_eq(probs.count, 1, "%s=%s", bad[i].k, bad[i].v);
		brq_config_fini(&cfg);
		brq_config_problems_fini(&probs);
	}
}

Test(config, parses_sizes_with_units_only)
{
	static const struct {
		const char *in;
		uint64_t    v;
	} ok[] = {{"0", 0}, {"512B", 512}, {"64KiB", 65536}, {"16MiB", 16777216}, {"1GiB", 1073741824}};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		uint64_t    v;
		const char *why = NULL;
		cr_assert_eq(brq_parse_size(ok[i].in, &v, &why), 0, "'%s': %s", ok[i].in, why);
		cr_assert_eq(v, ok[i].v);
	}
	const char *bad[] = {"1024", "1mib",   "1MB", "1M", "1 MiB",
			     "-1B",  "1.5MiB", "MiB", "",   "17179869184GiB"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t    v;
		const char *why = NULL;
		cr_assert_neq(brq_parse_size(bad[i], &v, &why), 0, "accepted '%s'", bad[i]);
	}
	cr_assert_eq(load(ENV({"BROOQ_MAX_PAYLOAD", "1048576"})), BRQ_EINVAL);
	cr_assert(has_problem("BROOQ_MAX_PAYLOAD: size needs a unit"));
}

Test(config, parses_integers_strictly)
{
	uint64_t    v;
	const char *why;
	cr_assert_eq(brq_parse_u64("42", &v, &why), 0);
	cr_assert_eq(v, 42);
	cr_assert_eq(brq_parse_u64("18446744073709551615", &v, &why), 0);
	cr_assert_eq(v, UINT64_MAX);
	const char *bad[] = {"",
			     "-1",
			     "+1",
			     " 1",
			     "1 ",
			     "1e3",
			     "0x10",
			     "12abc",
			     "4.0",
			     "18446744073709551616",
			     "99999999999999999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_neq(brq_parse_u64(bad[i], &v, &why), 0, "accepted '%s'", bad[i]);
	}
	cr_assert_eq(load(ENV({"BROOQ_POOL_SIZE", "0"}, {"BROOQ_MAX_ATTEMPTS", "1001"},
			      {"BROOQ_MAX_BATCH", "-5"}, {"BROOQ_MAX_WAITERS", "100001"},
			      {"BROOQ_RETENTION_BATCH", "99999999999999999999999"})),
		     BRQ_EINVAL);
	cr_assert(has_problem("BROOQ_POOL_SIZE: must be between 1 and 256"));
	cr_assert(has_problem("BROOQ_MAX_ATTEMPTS: must be between 1 and 1000"));
	cr_assert(has_problem("BROOQ_MAX_BATCH: not a non-negative decimal integer"));
	cr_assert(has_problem("BROOQ_MAX_WAITERS: must be between 0 and 100000"));
	cr_assert(has_problem("BROOQ_RETENTION_BATCH: value too large"));
	cr_assert_eq(probs.count, 5);
}

Test(config, parses_booleans)
{
	const char *yes[] = {"true", "TRUE", "1", "yes", "Yes"};
	const char *no[]  = {"false", "0", "no", "NO"};
	const char *bad[] = {"", "y", "on", "2", "true "};
	bool        b;
	const char *why;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		b = false;
		cr_assert_eq(brq_config_parse_bool(yes[i], &b, &why), 0);
		cr_assert(b);
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		b = true;
		cr_assert_eq(brq_config_parse_bool(no[i], &b, &why), 0);
		cr_assert_not(b);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_neq(brq_config_parse_bool(bad[i], &b, &why), 0, "accepted '%s'", bad[i]);
	}
}

Test(config, validates_listen_url_and_ipc_mode)
{
	// tls+tcp:// needs its certificate and key: tls_config_test.
	const char *good[] = {"ipc:///tmp/x.sock", "tcp://127.0.0.1:7000", "tcp://[::]:7443"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		brq_config_fini(&cfg);
		brq_config_problems_fini(&probs);
		cr_assert_eq(load(ENV({"BROOQ_LISTEN", good[i]})), 0, "%s", good[i]);
		cr_assert_str_eq(cfg.listen, good[i]);
	}
	brq_config_fini(&cfg);
	brq_config_problems_fini(&probs);
	cr_assert_eq(load(ENV({"BROOQ_LISTEN", "http://x"}, {"BROOQ_IPC_MODE", "0778"})), BRQ_EINVAL);
	cr_assert(has_problem("BROOQ_LISTEN: must start with ipc://, tcp:// or tls+tcp://"));
	cr_assert(has_problem("BROOQ_IPC_MODE: must be an octal mode"));
	brq_config_problems_fini(&probs);
	cr_assert_eq(load(ENV({"BROOQ_LISTEN", "ipc://"}, {"BROOQ_IPC_MODE", "1000"})), BRQ_EINVAL);
	cr_assert(has_problem("BROOQ_LISTEN: address missing"));
	cr_assert(has_problem("BROOQ_IPC_MODE: must be at most 0777"));
	brq_config_problems_fini(&probs);
	cr_assert_eq(load(ENV({"BROOQ_IPC_MODE", "777"})), 0);
	cr_assert_eq(cfg.ipc_mode, 0777);
	brq_config_fini(&cfg);
	brq_config_problems_fini(&probs);
	const char *bad_modes[] = {"rw", "-0660", "0o660", "0660 ", "77777777777777777777777"};
	for (size_t i = 0; i < sizeof(bad_modes) / sizeof(bad_modes[0]); i++) {
		brq_config_problems_fini(&probs);
		cr_assert_eq(load(ENV({"BROOQ_IPC_MODE", bad_modes[i]})), BRQ_EINVAL, "%s", bad_modes[i]);
		cr_assert(has_problem("BROOQ_IPC_MODE"));
	}
}

Test(config, checks_cross_field_limits)
{
	cr_assert_eq(load(ENV({"BROOQ_BACKOFF_BASE", "2m"}, {"BROOQ_MAX_PAYLOAD", "32MiB"})), BRQ_EINVAL);
	cr_assert(has_problem("BROOQ_BACKOFF_MAX: must be at least BROOQ_BACKOFF_BASE"));
	cr_assert(has_problem("BROOQ_MAX_REQUEST: must be at least BROOQ_MAX_PAYLOAD"));
	cr_assert_eq(probs.count, 2);
	// The in-flight budget must hold one largest request with its transport margin.
	brq_config_problems_fini(&probs);
	cr_assert_eq(load(ENV({"BROOQ_MAX_REQUEST", "8MiB"}, {"BROOQ_MAX_INFLIGHT_BYTES", "8MiB"})),
		     BRQ_EINVAL);
	cr_assert(has_problem("BROOQ_MAX_INFLIGHT_BYTES: must hold one request of BROOQ_MAX_REQUEST"));
	cr_assert_eq(probs.count, 1);
	brq_config_problems_fini(&probs);
	cr_assert_eq(load(ENV({"BROOQ_MAX_REQUEST", "8MiB"}, {"BROOQ_MAX_INFLIGHT_BYTES", "11MiB"})), 0);
	cr_assert_eq(cfg.max_inflight_bytes, 11 * 1024 * 1024);
}

Test(config, reports_every_problem_at_once)
{
	const struct kv env[] = {
		{"BROOQ_LISTEN", "udp://x"},
		{"BROOQ_IPC_MODE", "999"},
		{"BROOQ_POOL_SIZE", "0"},
		{"BROOQ_LEASE", "120"},
		{"BROOQ_BACKOFF_BASE", "fast"},
		{"BROOQ_MAX_ATTEMPTS", "-1"},
		{"BROOQ_MAX_BATCH", "10001"},
		{"BROOQ_MAX_PAYLOAD", "1MB"},
		{"BROOQ_MAX_WAIT", "5"},
		{"BROOQ_POLL_INTERVAL", "0"},
		{"BROOQ_RETENTION_TTL", "-1d"},
		{"BROOQ_HTTP_LISTEN", "10.0.0.1:8090"},
		{"BROOQ_LOG_LEVEL", "verbose"},
		{"BROOQ_SHUTDOWN_GRACE", "10"},
		{"BROOQ_TOPIC_OVERRIDES", "Bad Topic:lease=1s"},
		{"BROOQ_ATTEMPT_TIMEOUT", "10m"},
		{"BROOQ_MAX_EXECUTION_TIME", "5m"},
		{NULL, NULL},
	};
	cr_assert_eq(load(env), BRQ_EINVAL);
	dump_problems();
	const char *expect[] = {
		"BROOQ_DSN: required",
		"BROOQ_LISTEN:",
		"BROOQ_IPC_MODE:",
		"BROOQ_POOL_SIZE:",
		"BROOQ_LEASE: duration needs a unit",
		"BROOQ_BACKOFF_BASE: not a duration",
		"BROOQ_MAX_ATTEMPTS:",
		"BROOQ_WORKER_TOKEN_FILES: no token configured",
		"BROOQ_MAX_BATCH:",
		"BROOQ_MAX_PAYLOAD:",
		"BROOQ_MAX_WAIT: duration needs a unit",
		"BROOQ_POLL_INTERVAL: must be between",
		"BROOQ_RETENTION_TTL:",
		"BROOQ_HTTP_LISTEN: host 10.0.0.1 is not loopback",
		"BROOQ_LOG_LEVEL:",
		"BROOQ_SHUTDOWN_GRACE: duration needs a unit",
		"BROOQ_TOPIC_OVERRIDES: entry 1: topic must match",
		"BROOQ_ATTEMPT_TIMEOUT: must not exceed BROOQ_MAX_EXECUTION_TIME",
	};
	for (size_t i = 0; i < sizeof(expect) / sizeof(expect[0]); i++) {
		cr_assert(has_problem(expect[i]), "missing problem: %s", expect[i]);
	}
	cr_assert_eq(probs.count, sizeof(expect) / sizeof(expect[0]));
	cr_assert_null(cfg.dsn, "config holds nothing on failure");
	cr_assert_null(cfg.listen);
}

Test(config, never_shows_the_dsn_in_problems)
{
	// A valid DSN with a password, next to other mistakes.
	cr_assert_eq(load(ENV({"BROOQ_POOL_SIZE", "x"}, {"BROOQ_LEASE", "1"})), BRQ_EINVAL);
	assert_no_secret();
	brq_config_problems_fini(&probs);

	// Malformed DSNs that libpq's own message would quote.
	const char *bad[] = {
		("host=db password=" SECRET " bogus"),
		("host=db " SECRET "=1"),
		("postgresql://u:" SECRET "@db/x?sslmode"),
		("postgresql://u:" SECRET "@db/x?" SECRET "=1"),
		("password='" SECRET),
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const struct kv env[] = {
			{"BROOQ_DSN", bad[i]}, {"BROOQ_WORKER_TOKEN_FILES", "/w"}, {NULL, NULL}};
		brq_config_problems_fini(&probs);
		cr_assert_eq(load(env), BRQ_EINVAL, "accepted dsn %zu", i);
		cr_assert(has_problem("BROOQ_DSN: not a valid libpq connection string"));
		assert_no_secret();
	}

	// Same through a DSN file and through a broken env file line.
	const char     *dsn_path = write_file("dsn", "host=db password=" SECRET " bogus\n", 0600);
	const struct kv env2[]   = {
		  {"BROOQ_DSN_FILE", dsn_path}, {"BROOQ_WORKER_TOKEN_FILES", "/w"}, {NULL, NULL}};
	brq_config_problems_fini(&probs);
	cr_assert_eq(load(env2), BRQ_EINVAL);
	cr_assert(has_problem("BROOQ_DSN_FILE: not a valid libpq connection string"));
	assert_no_secret();

	const char *envf = write_file("env",
				      "BROOQ_DSN postgresql://u:" SECRET "@h/x\n"
				      "BROOQ_DSN=\"postgresql://u:" SECRET "@h/x\n",
				      0600);
	brq_config_problems_fini(&probs);
	cr_assert_eq(load_file(envf, minimal), BRQ_EINVAL);
	dump_problems();
	cr_assert(has_problem("line 1: expected KEY=VALUE"));
	cr_assert(has_problem("line 2: unterminated quote"));
	assert_no_secret();
}

Test(config, reads_the_dsn_from_a_file_trimmed)
{
	const char     *p     = write_file("dsn", "  \n" GOOD_DSN "\n\n", 0600);
	const struct kv env[] = {{"BROOQ_DSN_FILE", p}, {"BROOQ_WORKER_TOKEN_FILES", "/w"}, {NULL, NULL}};
	cr_assert_eq(load(env), 0);
	cr_assert_str_eq(cfg.dsn, GOOD_DSN);
}

Test(config, rejects_two_dsn_sources_and_unreadable_or_empty_dsn_files)
{
	const struct kv both[] = {{"BROOQ_DSN", GOOD_DSN},
				  {"BROOQ_DSN_FILE", "/x"},
				  {"BROOQ_WORKER_TOKEN_FILES", "/w"},
				  {NULL, NULL}};
	cr_assert_eq(load(both), BRQ_EINVAL);
	cr_assert(has_problem("BROOQ_DSN: set either BROOQ_DSN or BROOQ_DSN_FILE, not both"));

	const struct kv missing[] = {{"BROOQ_DSN_FILE", "/nonexistent/brooq/dsn"},
				     {"BROOQ_WORKER_TOKEN_FILES", "/w"},
				     {NULL, NULL}};
	brq_config_problems_fini(&probs);
	cr_assert_eq(load(missing), BRQ_EINVAL);
	cr_assert(has_problem("BROOQ_DSN_FILE: cannot read /nonexistent/brooq/dsn"));

	const char     *empty = write_file("empty", " \n\t\n", 0600);
	const struct kv emp[] = {{"BROOQ_DSN_FILE", empty}, {"BROOQ_WORKER_TOKEN_FILES", "/w"}, {NULL, NULL}};
	brq_config_problems_fini(&probs);
	cr_assert_eq(load(emp), BRQ_EINVAL);
	cr_assert(has_problem("is empty"));
}

Test(config, parses_an_env_file_and_lets_the_environment_override_it)
{
	const char     *envf  = write_file("gateway.env",
					   "# brooq gateway\n"
						"\n"
						"   # indented comment\n"
						"BROOQ_DSN='" GOOD_DSN "'\n"
						"BROOQ_WORKER_TOKEN_FILES = /run/w1 , /run/w2\r\n"
						"BROOQ_LEASE=30s\n"
						"BROOQ_POOL_SIZE=8\n"
						"BROOQ_LISTEN=\"ipc:///tmp/with \\\"quote\\\".sock\"\n"
						"BROOQ_LOG_LEVEL=warn   \n"
						"BROOQ_MAX_BATCH=10\n"
						"BROOQ_MAX_BATCH=20\n"
						"BROOQ_RETENTION_BATCH=\n"
						"OTHER_TOOL_SETTING=whatever # not ours\n"
						"BROOQ_MAX_WAITERS=7",
					   0600);
	const struct kv env[] = {{"BROOQ_POOL_SIZE", "12"}, {"BROOQ_LEASE", ""}, {NULL, NULL}};
	int             rc    = load_file(envf, env);
	dump_problems();
	cr_assert_eq(rc, 0);
	cr_assert_str_eq(cfg.dsn, GOOD_DSN, "single quotes stripped");
	cr_assert_eq(cfg.n_worker_token_files, 2);
	cr_assert_str_eq(cfg.worker_token_files[1], "/run/w2", "CRLF tolerated");
	cr_assert_eq(cfg.lease_ms, 30000, "empty env value falls through to the file");
	cr_assert_eq(cfg.pool_size, 12, "environment wins over the file");
	cr_assert_str_eq(cfg.listen, "ipc:///tmp/with \"quote\".sock");
	cr_assert_eq(cfg.log_level, BRQ_LOG_LVL_WARN, "trailing blanks trimmed");
	cr_assert_eq(cfg.max_batch, 20, "last line wins");
	cr_assert_eq(cfg.retention_batch, 1000, "empty in the file is unset too");
	cr_assert_eq(cfg.max_waiters, 7, "last line without newline");
}

Test(config, reports_env_file_mistakes_by_line)
{
	const char *envf = write_file("bad.env",
				      "BROOQ_DSN=" GOOD_DSN "\n"
				      "BROOQ_WORKER_TOKEN_FILES=/w\n"
				      "BROOQ_LEASEE=30s\n"
				      "no equals sign\n"
				      "1BROOQ=x\n"
				      "export BROOQ_LEASE=30s\n"
				      "# a comment that ends in a backslash \\\n"
				      "OTHER=\xff\xfe\n"
				      "BROOQ_LOG_LEVEL='info\n",
				      0600);
	cr_assert_eq(load_file(envf, (const struct kv[]) {{NULL, NULL}}), BRQ_EINVAL);
	dump_problems();
	cr_assert(has_problem("line 3: unknown variable BROOQ_LEASEE"));
	cr_assert(has_problem("line 4: expected KEY=VALUE"));
	cr_assert(has_problem("line 5: invalid variable name"));
	cr_assert(has_problem("line 6: \"export\" is not EnvironmentFile= syntax"));
	cr_assert(has_problem("line 7: comment ends with a backslash"));
	cr_assert(has_problem("line 8: value is not valid UTF-8"));
	cr_assert(has_problem("line 9: unterminated quote"));
	cr_assert_eq(probs.count, 7);

	brq_config_problems_fini(&probs);
	cr_assert_eq(load_file("/nonexistent/brooq.env", minimal), BRQ_EINVAL);
	cr_assert(has_problem("env file /nonexistent/brooq.env: No such file or directory"));
}

// Values as systemd's EnvironmentFile= reads them (systemd.exec(5)), one case per rule.
Test(config, reads_the_env_file_as_systemd_environmentfile_does)
{
	const char *envf = write_file("systemd.env",
				      "; a semicolon comment\n"
				      "   # an indented comment\n"
				      "BROOQ_DSN=" GOOD_DSN "\n"
				      "BROOQ_WORKER_TOKEN_FILES = /a , /b   \n"
				      "BROOQ_LISTEN=ipc:///tmp/x\\\n"
				      "y.sock\n"
				      "BROOQ_LOG_LEVEL=\"w\"'arn'\n"
				      "BROOQ_TOPIC_OVERRIDES=\"t:lease=9s;\\\n"
				      "u:lease=8s\"\n"
				      "BROOQ_HTTP_LISTEN='127.0.0.1:'\"9\"9\\9\\1\n"
				      "BROOQ_IPC_MODE=0640 # not a comment\n"
				      "K1=a\\ b\\\\c\\\"d \t\n"
				      "K2=\"x\\$y\\`z\\\\w\\q\\\"\"\n"
				      "K3=  'lit\\eral \"q\"'  \n"
				      "K4=unquoted 'quotes' \"stay\"\n"
				      "K5=\"a\"  \"b\"  c  \r\n"
				      "K6=\"multi\nline\"\n",
				      0600);
	// K1..K6 are no gateway variables: ask through the internal source lookup.
	int rc = load_file(envf, (const struct kv[]) {{NULL, NULL}});
	dump_problems();
	cr_assert_eq(rc, BRQ_EINVAL, "BROOQ_IPC_MODE's value includes the '# ...'");
	cr_assert(has_problem("BROOQ_IPC_MODE: must be an octal mode"));
	cr_assert_eq(probs.count, 1);

	struct loader L = {
		.src = {.lookup = tab_lookup, .lookup_arg = (void *) (const struct kv[]) {{NULL, NULL}}},
		.p   = &probs};
	brq_config_problems_fini(&probs);
	brq_config_problems_init(&probs);
	brq_cfg_load_env_file(&L, envf);
	cr_assert_eq(probs.count, 0);
	static const struct kv want[] = {
		{"BROOQ_WORKER_TOKEN_FILES", "/a , /b"},
		{"BROOQ_LISTEN", "ipc:///tmp/xy.sock"},
		{"BROOQ_LOG_LEVEL", "warn"},
		{"BROOQ_TOPIC_OVERRIDES", "t:lease=9s;u:lease=8s"},
		{"BROOQ_HTTP_LISTEN", "127.0.0.1:9991"},
		{"BROOQ_IPC_MODE", "0640 # not a comment"},
		{"K1", "a b\\c\"d"},
		{"K2", "x$y`z\\w\\q\""},
		{"K3", "lit\\eral \"q\""},
		{"K4", "unquoted 'quotes' \"stay\""},
		{"K5", "abc"},
		{"K6", "multi\nline"},
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const char *got = brq_cfg_src_get(&L.src, want[i].k);
		cr_assert_not_null(got, "%s missing", want[i].k);
		cr_assert_str_eq(got, want[i].v, "%s", want[i].k);
	}
	brq_cfg_env_entries_free(L.src.file, L.src.n_file);
}

// Value of KEY in the environment.d generator's output ("KEY=value" lines, where a
// value that needs it is in double quotes with C escapes: \n, \t, \\, \", \ooo ...).
// Returns a static buffer, or NULL when KEY is not there.
static const char *
generator_value(const char *out, const char *key)
{
	static char val[1024];
	char        pat[64];
	size_t      n = 0;
	snprintf(pat, sizeof(pat), "\n%s=", key);
	const char *p = strstr(out, pat);
	if (p == NULL) {
		return NULL;
	}
	p += strlen(pat);
	if (*p != '"') {
		while (*p != '\0' && *p != '\n' && n < sizeof(val) - 1) {
			val[n++] = *p++;
		}
		val[n] = '\0';
		return val;
	}
	static const char esc_in[] = "ntrabfv", esc_out[] = "\n\t\r\a\b\f\v";
	for (p++; *p != '\0' && *p != '"' && n < sizeof(val) - 1; p++) {
		if (*p != '\\') {
			val[n++] = *p;
		} else if (p[1] >= '0' && p[1] <= '7') {
			val[n++] = (char) ((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
			p += 3;
		} else {
			const char *e = strchr(esc_in, *++p);
			val[n++]      = e != NULL ? esc_out[e - esc_in] : *p;
		}
	}
	val[n] = '\0';
	return val;
}

// systemd's own parser, as the environment.d generator runs it, is the reference: every
// value our parser reads from a file must be the one systemd reads. (The generator
// also expands $VARS, so the cases have no '$'.)
Test(config, reads_values_exactly_as_systemds_own_parser)
{
	static const char gen[] =
		"/usr/lib/systemd/user-environment-generators/30-systemd-environment-d-generator";
	cr_assert_eq(access(gen, X_OK), 0, "%s missing: deploy/deps.sh installs systemd", gen);
	char dir[256], cmd[1024], out_path[256];
	snprintf(dir, sizeof(dir), "%s/environment.d", tmpdir);
	cr_assert_eq(mkdir(dir, 0700), 0);
	static const char cases[] = "K01=plain\n"
				    "  K02 =  spaced value  \t \n"
				    "K03=\"double  quoted\"\n"
				    "K04='single \"q\" \\n kept'\n"
				    "K05=\"a\"b'c'd\n"
				    "K06=unquoted \"quotes\" 'kept'\n"
				    "K07=back\\\\slash\\ space\\\"q\n"
				    "K08=\"esc \\\" \\\\ \\` x \\n y\"\n"
				    "K09=continued\\\nline\n"
				    "K10=\"multi\nline\"\n"
				    "K11='multi\nline too'\n"
				    "; semicolon comment\n"
				    "# hash comment\n"
				    "   # indented comment\n"
				    "K12=# not a comment\n"
				    "K13=trailing tab\t\n"
				    "K14=crlf\r\n"
				    "K16=\"x\" \"y\"  z  \n"
				    "K17=a\\\n   b\n"
				    "K19=\"cont\\\ninued\"\n"
				    "K20=tail";
	snprintf(cmd, sizeof(cmd), "%s/10-cases.conf", dir);
	FILE *f = fopen(cmd, "w");
	cr_assert_not_null(f);
	fputs(cases, f);
	fclose(f);
	snprintf(out_path, sizeof(out_path), "%s/systemd.env", tmpdir);
	// A leading newline so that every KEY= of the output follows one.
	snprintf(cmd, sizeof(cmd), "(echo; env -i XDG_CONFIG_HOME=%s HOME=/nonexistent %s) >%s 2>&1", tmpdir,
		 gen, out_path);
	cr_assert_eq(system(cmd), 0);

	char  *out     = NULL;
	size_t out_len = 0;
	cr_assert_eq(brq_cfg_read_small_file(out_path, 65536, &out, &out_len), 0);
	cr_log_info("systemd read:\n%s", out);
	struct loader ours = {
		.src = {.lookup = tab_lookup, .lookup_arg = (void *) (const struct kv[]) {{NULL, NULL}}},
		.p   = &probs};
	snprintf(cmd, sizeof(cmd), "%s/10-cases.conf", dir);
	brq_cfg_load_env_file(&ours, cmd);
	dump_problems();
	cr_assert_eq(probs.count, 0);
	cr_assert_eq(ours.src.n_file, 18, "read %zu", ours.src.n_file);
	for (size_t i = 0; i < ours.src.n_file; i++) {
		const char *k = ours.src.file[i].key;
		const char *v = generator_value(out, k);
		cr_assert_not_null(v, "systemd did not read %s", k);
		cr_assert_str_eq(ours.src.file[i].val, v, "%s: ours vs systemd's", k);
	}
	free(out);
	brq_cfg_env_entries_free(ours.src.file, ours.src.n_file);
}

Test(config, reports_unknown_brooq_variables_in_the_environment)
{
	char              *envp[] = {"BROOQ_DSN=x",
				     "BROOQ_LEAES=30s",
				     "PATH=/bin",
				     "BROOQ_URL=ipc:///x",
				     "BROOQ_TOKEN_FILE=/t",
				     "BROOQ_MIGRATIONS_DIR=/m",
				     "BROOQ_TEST_BIN_DIR=/b",
				     "BROOQ_BENCH_URL=/u",
				     "BROOQ_SOURCE_DIR=/s",
				     "BROOQ_=",
				     "BROOQ_POOL_SIZE",
				     NULL};
	brq_config_sources src    = {.lookup = tab_lookup, .lookup_arg = (void *) minimal, .envp = envp};
	cr_assert_eq(brq_config_load_from(&cfg, &src, &probs), BRQ_EINVAL);
	dump_problems();
	cr_assert(has_problem("environment: unknown variable BROOQ_LEAES"));
	bool has_bare = false;
	for (size_t i = 0; i < probs.count; i++) {
		has_bare = has_bare || strcmp(probs.lines[i], "environment: unknown variable BROOQ_") == 0;
	}
	cr_assert(has_bare);
	cr_assert_eq(probs.count, 2, "other programs' and the harness's variables pass");
}

struct check_arg {
	int calls;
	int rc;
};

static int
fake_check(const brq_config *c, void *arg, brq_config_problems *p)
{
	struct check_arg *a = arg;
	a->calls++;
	cr_assert_eq(c->n_worker_token_files, 1, "the token lists are there even with other problems");
	if (a->rc != 0) {
		brq_config_problem_add(p, "worker token file %s: token too short", c->worker_token_files[0]);
	}
	return a->rc;
}

Test(config, reports_a_later_stages_problems_in_the_same_round)
{
	struct check_arg   a   = {.rc = BRQ_EINVAL};
	brq_config_sources src = {.lookup     = tab_lookup,
				  .lookup_arg = (void *) ENV({"BROOQ_LEASE", "120"}),
				  .check      = fake_check,
				  .check_arg  = &a};
	cr_assert_eq(brq_config_load_from(&cfg, &src, &probs), BRQ_EINVAL);
	cr_assert_eq(a.calls, 1);
	cr_assert(has_problem("BROOQ_LEASE: duration needs a unit"));
	cr_assert(has_problem("worker token file /run/w1: token too short"));
	cr_assert_eq(probs.count, 2);

	brq_config_problems_fini(&probs);
	a.rc           = 0;
	src.lookup_arg = (void *) minimal;
	cr_assert_eq(brq_config_load_from(&cfg, &src, &probs), 0);
	cr_assert_eq(a.calls, 2);
	brq_config_fini(&cfg);
	brq_config_problems_fini(&probs);
	a.rc = BRQ_EINVAL; // a check's verdict alone fails the load too
	cr_assert_eq(brq_config_load_from(&cfg, &src, &probs), BRQ_EINVAL);
	cr_assert_eq(probs.count, 1);
}

Test(config, parses_topic_overrides)
{
	cr_assert_eq(load(ENV({"BROOQ_TOPIC_OVERRIDES",
			       "email.send:max_attempts=10,backoff_base=2s,backoff_max=5m,lease=30s;"
			       " report.build : lease = 10m "})),
		     0);
	dump_problems();
	cr_assert_eq(cfg.n_topic_overrides, 2);
	const brq_topic_override *o = &cfg.topic_overrides[0];
	cr_assert_str_eq(o->topic, "email.send");
	cr_assert(o->has_max_attempts && o->has_backoff_base && o->has_backoff_max && o->has_lease);
	cr_assert_eq(o->max_attempts, 10);
	cr_assert_eq(o->backoff_base_ms, 2000);
	cr_assert_eq(o->backoff_max_ms, 300000);
	cr_assert_eq(o->lease_ms, 30000);
	o = &cfg.topic_overrides[1];
	cr_assert_str_eq(o->topic, "report.build");
	cr_assert_not(o->has_max_attempts || o->has_backoff_base || o->has_backoff_max);
	cr_assert(o->has_lease);
	cr_assert_eq(o->lease_ms, 600000);

	uint32_t att;
	uint64_t base, max, lease;
	brq_config_topic_settings(&cfg, "report.build", &att, &base, &max, &lease);
	cr_assert_eq(att, 5, "inherited");
	cr_assert_eq(base, 1000);
	cr_assert_eq(max, 60000);
	cr_assert_eq(lease, 600000);
	brq_config_topic_settings(&cfg, "other", &att, NULL, NULL, &lease);
	cr_assert_eq(att, 5);
	cr_assert_eq(lease, 120000);
	cr_assert_eq(cfg.reaper_interval_ms, 7500, "default follows the shortest lease: 30s/4");
}

Test(config, parses_topic_limits)
{
	cr_assert_eq(load(ENV({"BROOQ_TOPIC_OVERRIDES", "a:concurrency=4,rate=100;b:rate=0;c:lease=5s"})), 0);
	dump_problems();
	cr_assert_eq(cfg.n_topic_overrides, 3);
	const brq_topic_override *o = &cfg.topic_overrides[0];
	cr_assert(o->has_concurrency && o->has_rate);
	cr_assert_eq(o->concurrency, 4);
	cr_assert_eq(o->rate, 100);
	o = &cfg.topic_overrides[1];
	cr_assert(!o->has_concurrency && o->has_rate);
	cr_assert_eq(o->rate, 0, "0: no limit");
	cr_assert(!cfg.topic_overrides[2].has_concurrency && !cfg.topic_overrides[2].has_rate);
}

/* SPEC invariant 18: the crash-loop quarantine's threshold, 5 unless set, 0 = never,
 * per topic over the global one. */
Test(config, parses_max_lost_leases_global_and_per_topic)
{
	cr_assert_eq(load(minimal), 0);
	cr_assert_eq(cfg.max_lost_leases, 5, "the default");
	brq_config_fini(&cfg);
	brq_config_problems_fini(&probs);
	cr_assert_eq(
		load(ENV({"BROOQ_MAX_LOST_LEASES", "0"},
			 {"BROOQ_TOPIC_OVERRIDES", "a:max_lost_leases=2;b:max_lost_leases=0;c:lease=5s"})),
		0);
	dump_problems();
	cr_assert_eq(cfg.max_lost_leases, 0);
	cr_assert(cfg.topic_overrides[0].has_max_lost_leases);
	cr_assert_eq(cfg.topic_overrides[0].max_lost_leases, 2);
	cr_assert(cfg.topic_overrides[1].has_max_lost_leases);
	cr_assert_eq(cfg.topic_overrides[1].max_lost_leases, 0);
	cr_assert_not(cfg.topic_overrides[2].has_max_lost_leases);
	brq_config_fini(&cfg);
	brq_config_problems_fini(&probs);
	cr_assert_eq(load(ENV({"BROOQ_MAX_LOST_LEASES", "1001"})), BRQ_EINVAL);
	cr_assert(has_problem("BROOQ_MAX_LOST_LEASES: must be between 0 and 1000"));
}

/* discard_done is opt-in per topic (SPEC invariant 17): off unless a topic says true. */
Test(config, parses_discard_done_per_topic)
{
	cr_assert_eq(load(ENV({"BROOQ_TOPIC_OVERRIDES", "a:discard_done=true;b:discard_done=no;c:lease=5s"})),
		     0);
	dump_problems();
	cr_assert_eq(cfg.n_topic_overrides, 3);
	cr_assert(cfg.topic_overrides[0].has_discard_done && cfg.topic_overrides[0].discard_done);
	cr_assert(cfg.topic_overrides[1].has_discard_done && !cfg.topic_overrides[1].discard_done);
	cr_assert(!cfg.topic_overrides[2].has_discard_done && !cfg.topic_overrides[2].discard_done);
	cr_assert(brq_config_discards_done(&cfg));
	brq_config_fini(&cfg);
	brq_config_problems_fini(&probs);
	cr_assert_eq(load(ENV({"BROOQ_TOPIC_OVERRIDES", "b:discard_done=false"})), 0);
	cr_assert_not(brq_config_discards_done(&cfg), "false is the default: nothing discarded");
}

Test(config, rejects_every_malformed_topic_override)
{
	static char long_topic[200];
	memset(long_topic, 'a', 129);
	memcpy(long_topic + 129, ":lease=1s", 10);
	static const struct {
		const char *in, *why;
	} bad[] = {
		{"email.send", "entry 1: expected topic:key=value"},
		{":lease=1s", "entry 1: topic must match"},
		{"Email:lease=1s", "entry 1: topic must match"},
		{".x:lease=1s", "entry 1: topic must match"},
		{"-x:lease=1s", "entry 1: topic must match"},
		{"a b:lease=1s", "entry 1: topic must match"},
		{"a/b:lease=1s", "entry 1: topic must match"},
		{NULL, "entry 1: topic must match"}, // 129-byte topic, filled in below
		{"a:lease=1s;a:lease=2s", "a: topic listed twice"},
		{"a:", "a: no settings"},
		{"a: ", "a: no settings"},
		{"a:bogus=1", "a: unknown key"},
		{"a:Lease=1s", "a: unknown key"},
		{"a:lease", "a: expected key=value"},
		{"a:lease=", "a: lease: empty value"},
		{"a:lease=120", "a: lease: duration needs a unit"},
		{"a:lease=0", "a: lease: must be between 1s and 1d"},
		{"a:lease=2d", "a: lease: must be between 1s and 1d"},
		{"a:lease=1s,lease=2s", "a: lease given twice"},
		{"a:max_attempts=0", "a: max_attempts: must be between 1 and 1000"},
		{"a:max_attempts=x", "a: max_attempts: not a non-negative decimal integer"},
		{"a:max_attempts=5s", "a: max_attempts: not a non-negative"},
		{"a:backoff_base=10s,backoff_max=1s", "a: backoff_max must be at least backoff_base"},
		{"a:backoff_base=2m", "a: backoff_max must be at least backoff_base"},
		{"a:backoff_base=1", "a: backoff_base: duration needs a unit"},
		{"a:backoff_max=8d", "a: backoff_max: must be between"},
		{"a:lease=1s;", "entry 2 is empty"},
		{";a:lease=1s", "entry 1 is empty"},
		{";", "entry 1 is empty"},
		{"a:lease=1s,,max_attempts=2", "a: empty setting"},
		{"a:lease=1s,", "a: empty setting"},
		{"a:lease=1s:2s", "a: lease: unknown unit"},
		{"a:concurrency=1000001", "a: concurrency: must be between 0 (no limit) and 1000000"},
		{"a:rate=-1", "a: rate: not a non-negative"},
		{"a:rate=1/s", "a: rate: not a non-negative"},
		{"a:concurrency=1,concurrency=2", "a: concurrency given twice"},
		{"a:attempt_timeout=50ms", "a: attempt_timeout: must be 0 (none) or 100ms..7d"},
		{"a:max_execution_time=8d", "a: max_execution_time: must be between"},
		{"a:attempt_timeout=2m,max_execution_time=1m",
		 "a: attempt_timeout must not exceed max_execution_time"},
		{"a:discard_done=maybe", "a: discard_done: "},
		{"a:discard_done=", "a: discard_done: empty value"},
		{"a:discard_done=true,discard_done=false", "a: discard_done given twice"},
		{"a:max_lost_leases=1001", "a: max_lost_leases: must be between 0 (never) and 1000"},
		{"a:max_lost_leases=-1", "a: max_lost_leases: not a non-negative"},
		{"a:max_lost_leases=", "a: max_lost_leases: empty value"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *in = bad[i].in != NULL ? bad[i].in : long_topic;
		brq_config_fini(&cfg);
		brq_config_problems_fini(&probs);
		cr_assert_eq(load(ENV({"BROOQ_TOPIC_OVERRIDES", in})), BRQ_EINVAL, "accepted '%s'", in);
		dump_problems();
		cr_assert(has_problem(bad[i].why), "'%s': expected '%s'", in, bad[i].why);
		for (size_t j = 0; j < probs.count; j++) {
			cr_assert(strncmp(probs.lines[j], "BROOQ_TOPIC_OVERRIDES: ", 23) == 0,
				  "'%s': unrelated problem %s", in, probs.lines[j]);
		}
	}
	// The longest valid topic (128 bytes) is fine.
	memcpy(long_topic + 128, ":lease=1s", 10);
	brq_config_problems_fini(&probs);
	cr_assert_eq(load(ENV({"BROOQ_TOPIC_OVERRIDES", long_topic})), 0);
	cr_assert_eq(strlen(cfg.topic_overrides[0].topic), 128);
}

// Attempt timeout and maximum execution time: 0 is none, a topic inherits and may
// override either, and an attempt timeout above the maximum execution time (the
// topic's effective values included) is refused with every other problem.
Test(config, timeouts_per_topic_and_their_order)
{
	uint64_t at, mx;
	cr_assert_eq(load(ENV({"BROOQ_ATTEMPT_TIMEOUT", "30s"}, {"BROOQ_MAX_EXECUTION_TIME", "5m"},
			      {"BROOQ_TOPIC_OVERRIDES",
			       "slow:attempt_timeout=4m;free:attempt_timeout=0,"
			       "max_execution_time=0;tight:max_execution_time=30s"})),
		     0);
	brq_config_topic_timeouts(&cfg, "other", &at, &mx);
	cr_assert_eq(at, 30000);
	cr_assert_eq(mx, 300000);
	brq_config_topic_timeouts(&cfg, "slow", &at, &mx);
	cr_assert_eq(at, 240000);
	cr_assert_eq(mx, 300000);
	brq_config_topic_timeouts(&cfg, "free", &at, &mx);
	cr_assert_eq(at, 0);
	cr_assert_eq(mx, 0);
	brq_config_topic_timeouts(&cfg, "tight", &at, &mx);
	cr_assert_eq(at, 30000, "equal is fine");
	cr_assert_eq(mx, 30000);
	brq_config_fini(&cfg);
	brq_config_problems_fini(&probs);

	// No maximum: any attempt timeout. Defaults: none.
	cr_assert_eq(load(ENV({"BROOQ_ATTEMPT_TIMEOUT", "7d"})), 0);
	cr_assert_eq(cfg.max_execution_ms, 0);
	brq_config_fini(&cfg);
	brq_config_problems_fini(&probs);

	cr_assert_eq(load(ENV({"BROOQ_ATTEMPT_TIMEOUT", "10m"}, {"BROOQ_MAX_EXECUTION_TIME", "5m"},
			      {"BROOQ_POOL_SIZE", "0"},
			      {"BROOQ_TOPIC_OVERRIDES", "a:max_execution_time=1m;b:attempt_timeout=1s"})),
		     BRQ_EINVAL);
	dump_problems();
	cr_assert(has_problem("BROOQ_ATTEMPT_TIMEOUT: must not exceed BROOQ_MAX_EXECUTION_TIME"));
	cr_assert(
		has_problem("BROOQ_TOPIC_OVERRIDES: a: attempt_timeout must not exceed max_execution_time"));
	cr_assert(has_problem("BROOQ_POOL_SIZE:"), "listed with every other problem");
	cr_assert_eq(probs.count, 3, "b is fine: 1s <= 5m");
	brq_config_problems_fini(&probs);

	cr_assert_eq(load(ENV({"BROOQ_ATTEMPT_TIMEOUT", "10"}, {"BROOQ_MAX_EXECUTION_TIME", "99ms"})),
		     BRQ_EINVAL);
	cr_assert(has_problem("BROOQ_ATTEMPT_TIMEOUT: duration needs a unit"));
	cr_assert(has_problem("BROOQ_MAX_EXECUTION_TIME: must be 0 (none) or 100ms..7d"));
	cr_assert_eq(probs.count, 2);
}

Test(config, requires_permission_for_a_non_loopback_http_listener)
{
	const char *loopback[] = {"127.0.0.1:8090",  "127.3.4.5:1", "localhost:8090",
				  "LOCALHOST:65535", "[::1]:8090",  "[::ffff:127.0.0.1]:80"};
	for (size_t i = 0; i < sizeof(loopback) / sizeof(loopback[0]); i++) {
		brq_config_fini(&cfg);
		brq_config_problems_fini(&probs);
		cr_assert_eq(load(ENV({"BROOQ_HTTP_LISTEN", loopback[i]})), 0, "%s", loopback[i]);
		cr_assert(cfg.http_enabled);
	}
	cr_assert_str_eq(cfg.http_host, "::ffff:127.0.0.1");
	cr_assert_eq(cfg.http_port, 80);

	const char *remote[] = {"0.0.0.0:8090", "10.1.2.3:8090", "[::]:8090", "metrics.example:80",
				"128.0.0.1:80"};
	for (size_t i = 0; i < sizeof(remote) / sizeof(remote[0]); i++) {
		brq_config_fini(&cfg);
		brq_config_problems_fini(&probs);
		cr_assert_eq(load(ENV({"BROOQ_HTTP_LISTEN", remote[i]})), BRQ_EINVAL, "%s", remote[i]);
		cr_assert(has_problem("is not loopback; set BROOQ_HTTP_ALLOW_NONLOOPBACK=true"));
		brq_config_problems_fini(&probs);
		cr_assert_eq(
			load(ENV({"BROOQ_HTTP_LISTEN", remote[i]}, {"BROOQ_HTTP_ALLOW_NONLOOPBACK", "true"})),
			0, "%s", remote[i]);
	}

	brq_config_fini(&cfg);
	brq_config_problems_fini(&probs);
	cr_assert_eq(load(ENV({"BROOQ_HTTP_LISTEN", "off"})), 0);
	cr_assert_not(cfg.http_enabled);
	cr_assert_null(cfg.http_host);

	const char *bad[] = {"127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536", ":8090",         "::1:8090",
			     "[::1]8090", "[::1",        "[nothost]:80",    "127.0.0.1:80x", "bad_host:80",
			     "OFF"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		brq_config_fini(&cfg);
		brq_config_problems_fini(&probs);
		cr_assert_eq(load(ENV({"BROOQ_HTTP_LISTEN", bad[i]}, {"BROOQ_HTTP_ALLOW_NONLOOPBACK", "1"})),
			     BRQ_EINVAL, "accepted %s", bad[i]);
		cr_assert(has_problem("BROOQ_HTTP_LISTEN: "));
	}

	brq_config_problems_fini(&probs);
	cr_assert_eq(load(ENV({"BROOQ_HTTP_ALLOW_NONLOOPBACK", "maybe"})), BRQ_EINVAL);
	cr_assert(has_problem("BROOQ_HTTP_ALLOW_NONLOOPBACK: not a boolean"));
}

Test(config, discovers_dsn_and_tokens_in_the_credentials_directory)
{
	write_file("dsn", GOOD_DSN "\n", 0600);
	write_file("worker-token-b", "x", 0600);
	write_file("worker-token", "x", 0600);
	write_file("admin-token.2026", "x", 0600);
	write_file("unrelated", "x", 0600);
	write_file("my-worker-token", "x", 0600);
	char sub[128];
	snprintf(sub, sizeof(sub), "%s/worker-token-dir", tmpdir);
	cr_assert_eq(mkdir(sub, 0700), 0);
	char explicit_path[128];
	snprintf(explicit_path, sizeof(explicit_path), "%s/worker-token", tmpdir);

	const struct kv env[] = {{"CREDENTIALS_DIRECTORY", tmpdir},
				 {"BROOQ_WORKER_TOKEN_FILES", explicit_path},
				 {"BROOQ_ADMIN_TOKEN_FILES", "/etc/adm"},
				 {NULL, NULL}};
	int             rc    = load(env);
	dump_problems();
	cr_assert_eq(rc, 0);
	cr_assert_str_eq(cfg.dsn, GOOD_DSN);
	cr_assert_eq(cfg.n_worker_token_files, 2, "explicit path not repeated, dir skipped");
	cr_assert_str_eq(cfg.worker_token_files[0], explicit_path);
	char want[160];
	snprintf(want, sizeof(want), "%s/worker-token-b", tmpdir);
	cr_assert_str_eq(cfg.worker_token_files[1], want);
	cr_assert_eq(cfg.n_admin_token_files, 2);
	cr_assert_str_eq(cfg.admin_token_files[0], "/etc/adm");
	snprintf(want, sizeof(want), "%s/admin-token.2026", tmpdir);
	cr_assert_str_eq(cfg.admin_token_files[1], want);
}

Test(config, credentials_directory_alone_is_enough)
{
	write_file("dsn", GOOD_DSN, 0600);
	write_file("admin-token", "x", 0600);
	const struct kv env[] = {{"CREDENTIALS_DIRECTORY", tmpdir}, {NULL, NULL}};
	cr_assert_eq(load(env), 0);
	cr_assert_eq(cfg.n_worker_token_files, 0);
	cr_assert_eq(cfg.n_admin_token_files, 1);

	brq_config_fini(&cfg);
	brq_config_problems_fini(&probs);
	const struct kv gone[] = {{"CREDENTIALS_DIRECTORY", "/nonexistent/creds"}, {NULL, NULL}};
	cr_assert_eq(load(gone), BRQ_EINVAL);
	dump_problems();
	cr_assert(has_problem("CREDENTIALS_DIRECTORY: cannot open /nonexistent/creds"));
	cr_assert(has_problem("BROOQ_DSN: required"));
}

Test(config, rejects_an_empty_element_in_a_token_file_list)
{
	cr_assert_eq(load(ENV({"BROOQ_ADMIN_TOKEN_FILES", "/a,,/b"})), BRQ_EINVAL);
	cr_assert(has_problem("BROOQ_ADMIN_TOKEN_FILES: empty path in the list"));
	cr_assert_eq(probs.count, 1);
}

Test(config, reaper_default_is_at_least_five_seconds_and_a_quarter_lease)
{
	cr_assert_eq(load(ENV({"BROOQ_LEASE", "1h"})), 0);
	cr_assert_eq(cfg.reaper_interval_ms, 900000);
	brq_config_fini(&cfg);
	brq_config_problems_fini(&probs);
	cr_assert_eq(load(ENV({"BROOQ_LEASE", "10s"})), 0);
	cr_assert_eq(cfg.reaper_interval_ms, 5000);
}

Test(config, uses_the_process_environment_without_a_lookup)
{
	// Criterion runs each test in its own process, so setenv() stays local.
	cr_assert_eq(setenv("BROOQ_DSN", GOOD_DSN, 1), 0);
	cr_assert_eq(setenv("BROOQ_WORKER_TOKEN_FILES", "/w", 1), 0);
	cr_assert_eq(setenv("BROOQ_POOL_SIZE", "9", 1), 0);
	unsetenv("CREDENTIALS_DIRECTORY");
	cr_assert_eq(brq_config_load(&cfg, NULL, NULL, NULL, &probs), 0);
	cr_assert_eq(cfg.pool_size, 9);
}

Test(config, fini_is_safe_twice_and_on_zeroed_structs)
{
	brq_config c;
	memset(&c, 0, sizeof(c));
	brq_config_fini(&c);
	brq_config_fini(NULL);
	cr_assert_eq(load(minimal), 0);
	brq_config_fini(&cfg);
	brq_config_fini(&cfg);
	brq_config_problems_fini(&probs);
	brq_config_problems_fini(&probs);
	brq_config_problems_fini(NULL);
}

// The shipped example must parse, and every value it shows must be the real default.
Test(config, example_env_file_shows_the_real_defaults)
{
	char        path[1024];
	const char *src = getenv("BROOQ_SOURCE_DIR");
	int         plen;
	if (src != NULL && src[0] != '\0') {
		plen = snprintf(path, sizeof(path), "%s/deploy/brooq-gateway.env.example", src);
	} else {
		plen = snprintf(path, sizeof(path), "%s/../deploy/brooq-gateway.env.example", tests_dir());
	}
	cr_assert_lt(plen, (int) sizeof(path));
	FILE *in = fopen(path, "r");
	cr_assert_not_null(in, "cannot open %s", path);
	char out_path[128];
	snprintf(out_path, sizeof(out_path), "%s/uncommented.env", tmpdir);
	FILE *out = fopen(out_path, "w");
	cr_assert_not_null(out);
	char line[1024];
	int  n_vars = 0;
	while (fgets(line, sizeof(line), in) != NULL) {
		// Uncomment "#BROOQ_X=..." lines, except the second DSN source and the TLS
		// files (example paths for a tls+tcp:// listener: tls_config_test).
		if (strncmp(line, "#BROOQ_", 7) == 0 && strncmp(line, "#BROOQ_DSN_FILE=", 16) != 0 &&
		    strncmp(line, "#BROOQ_TLS_CERT_FILE=", 21) != 0 &&
		    strncmp(line, "#BROOQ_TLS_KEY_FILE=", 20) != 0 &&
		    strncmp(line, "#BROOQ_TLS_CA_FILE=", 19) != 0 &&
		    strncmp(line, "#BROOQ_HTTP_TLS_", 16) != 0) {
			fputs(line + 1, out);
			n_vars++;
		} else {
			fputs(line, out);
		}
	}
	fclose(in);
	fclose(out);
	cr_assert_eq(n_vars, 47, "every variable but BROOQ_DSN_FILE and the TLS files appears once");

	// As shipped (all commented): only defaults.
	cr_assert_eq(load_file(path, minimal), 0);
	brq_config_fini(&cfg);
	brq_config_problems_fini(&probs);

	const struct kv env[] = {{"BROOQ_WORKER_TOKEN_FILES", "/w"}, {NULL, NULL}};
	int             rc    = load_file(out_path, env);
	dump_problems();
	cr_assert_eq(rc, 0);
	brq_config def;
	cr_assert_eq(brq_config_init_defaults(&def), 0);
	cr_assert_str_eq(cfg.listen, def.listen);
	cr_assert_eq(cfg.ipc_mode, def.ipc_mode);
	cr_assert_eq(cfg.pool_size, def.pool_size);
	cr_assert_eq(cfg.lease_ms, def.lease_ms);
	cr_assert_eq(cfg.backoff_base_ms, def.backoff_base_ms);
	cr_assert_eq(cfg.backoff_max_ms, def.backoff_max_ms);
	cr_assert_eq(cfg.max_attempts, def.max_attempts);
	cr_assert_eq(cfg.max_lost_leases, def.max_lost_leases);
	cr_assert_eq(cfg.attempt_timeout_ms, def.attempt_timeout_ms);
	cr_assert_eq(cfg.max_execution_ms, def.max_execution_ms);
	cr_assert_eq(cfg.max_batch, def.max_batch);
	cr_assert_eq(cfg.max_payload_bytes, def.max_payload_bytes);
	cr_assert_eq(cfg.max_request_bytes, def.max_request_bytes);
	cr_assert_eq(cfg.max_inflight_bytes, def.max_inflight_bytes);
	cr_assert_eq(cfg.handshake_timeout_ms, def.handshake_timeout_ms);
	cr_assert_eq(cfg.recv_timeout_ms, def.recv_timeout_ms);
	cr_assert_eq(cfg.idle_timeout_ms, def.idle_timeout_ms);
	cr_assert_eq(cfg.max_wait_ms, def.max_wait_ms);
	cr_assert_eq(cfg.max_waiters, def.max_waiters);
	cr_assert_eq(cfg.poll_interval_ms, def.poll_interval_ms);
	cr_assert_eq(cfg.reaper_interval_ms, def.reaper_interval_ms);
	cr_assert_eq(cfg.retention_ttl_ms, def.retention_ttl_ms);
	cr_assert_eq(cfg.retention_interval_ms, def.retention_interval_ms);
	cr_assert_eq(cfg.retention_batch, def.retention_batch);
	cr_assert_eq(cfg.retention_max_batches, def.retention_max_batches);
	cr_assert_eq(cfg.http_enabled, def.http_enabled);
	cr_assert_str_eq(cfg.http_host, def.http_host);
	cr_assert_eq(cfg.http_port, def.http_port);
	cr_assert_eq(cfg.http_header_timeout_ms, def.http_header_timeout_ms);
	cr_assert_eq(cfg.http_idle_timeout_ms, def.http_idle_timeout_ms);
	cr_assert_eq(cfg.http_max_connections, def.http_max_connections);
	cr_assert_eq(cfg.http_allow_nonloopback, def.http_allow_nonloopback);
	cr_assert_eq(cfg.selfprobe_interval_ms, def.selfprobe_interval_ms);
	cr_assert_eq(cfg.log_level, def.log_level);
	cr_assert_eq(cfg.shutdown_grace_ms, def.shutdown_grace_ms);
	cr_assert_eq(cfg.tls_client_auth, def.tls_client_auth);
	cr_assert_eq(cfg.n_topic_overrides, 2);
	brq_config_fini(&def);
}

Test(config, schedules_are_parsed_and_checked)
{
	cr_assert_eq(load(ENV({"BROOQ_SCHEDULES",
			       " nightly | topic=report | cron=30 2 * * mon-fri | "
			       "tz=Europe/Berlin | misfire=catch_up | catch_up_max=3 ;\n"
			       "beat|topic=ping|every=15s|payload={\"a\":1}|max_attempts=2;"},
			      {"BROOQ_SCHEDULE_TICK", "250ms"})),
		     0);
	dump_problems();
	cr_assert_eq(cfg.schedule_tick_ms, 250);
	cr_assert_eq(cfg.n_schedules, 2);
	cr_assert(brq_str_eq(cfg.schedules[0].name, "nightly") &&
		  brq_str_eq(cfg.schedules[0].topic, "report") &&
		  brq_str_eq(cfg.schedules[0].cron, "30 2 * * mon-fri") &&
		  brq_str_eq(cfg.schedules[0].tz, "Europe/Berlin") && cfg.schedules[0].catch_up &&
		  cfg.schedules[0].catch_up_max == 3);
	cr_assert(brq_str_eq(cfg.schedules[1].name, "beat") && cfg.schedules[1].every_ms == 15000 &&
		  brq_str_eq(cfg.schedules[1].payload, "{\"a\":1}") && cfg.schedules[1].max_attempts == 2 &&
		  brq_str_eq(cfg.schedules[1].tz, "UTC") && cfg.schedules[1].catch_up_max == 1);

	static const struct {
		const char *in, *why;
	} bad[] = {
		{"a|topic=t", "a: cron: give exactly one of cron and every_ms"},
		{"a|topic=t|cron=* * * *", "a: cron: expected 5 fields"},
		{"a|topic=t|cron=0 3 * * *|tz=Mars/Olympus", "a: tz: no such zone"},
		{"a|topic=t|every=500ms", "a: every_ms: must be between"},
		{"a|topic=t|every=1s|misfire=later", "a: misfire: must be skip or catch_up"},
		{"a|topic=t|every=1s|colour=red", "a: unknown key"},
		{"a|topic=t|every=1s|payload={", "a: payload: invalid JSON"},
		{"a|topic=t|every=1s|payload=[1e1000]",
		 "a: payload: number at byte 1 would print as 1001 characters"},
		{"a|topic=t|every=1s;a|topic=u|every=2s", "a: listed twice"},
		{"Bad Name|topic=t|every=1s", "entry 1: name: must match"},
		{"a|topic=t|every", "a: expected key=value"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		brq_config_fini(&cfg);
		brq_config_problems_fini(&probs);
		cr_assert_eq(load(ENV({"BROOQ_SCHEDULES", bad[i].in})), BRQ_EINVAL, "accepted '%s'",
			     bad[i].in);
		cr_assert(has_problem(bad[i].why), "'%s': expected '%s'", bad[i].in, bad[i].why);
	}
	brq_config_fini(&cfg);
	brq_config_problems_fini(&probs);
	cr_assert_eq(load(ENV({"BROOQ_SCHEDULE_TICK", "50ms"})), BRQ_EINVAL);
	cr_assert(has_problem("BROOQ_SCHEDULE_TICK: must be 0 (off) or 100ms..1h"));
}
