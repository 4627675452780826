// SPDX-License-Identifier: MIT
// The SQL the gateway runs: every statement in one place, built once at start-up.
#define _GNU_SOURCE // open_memstream is POSIX 2008, vasprintf is not needed
#include "sql.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[BRQ_STMT__COUNT] = {
	[BRQ_STMT_ENQUEUE] = "brq_enqueue",     [BRQ_STMT_ENQUEUE_LOOKUP] = "brq_enqueue_lookup",
	[BRQ_STMT_CLAIM] = "brq_claim",         [BRQ_STMT_HEARTBEAT] = "brq_heartbeat",
	[BRQ_STMT_SETTLE] = "brq_settle",       [BRQ_STMT_TOPICS_OF] = "brq_topics_of",
	[BRQ_STMT_CANCEL] = "brq_cancel",       [BRQ_STMT_JOB] = "brq_job",
	[BRQ_STMT_STATS] = "brq_stats",         [BRQ_STMT_REAP] = "brq_reap",
	[BRQ_STMT_RETENTION] = "brq_retention",
};

const char *
brq_sql_name(brq_stmt st)
{
	return (unsigned) st < BRQ_STMT__COUNT ? names[st] : "?";
}

// Which per-topic setting a CASE expression selects.
enum setting { LEASE_MS, BACKOFF_BASE_MS, BACKOFF_MAX_MS };

// Writes "CASE <col> WHEN 'a' THEN 1 ... ELSE <default> END" for one setting, or just
// the default when no override sets it.
static void
topic_case(FILE *f, const struct brq_config *cfg, const char *col, enum setting which)
{
	uint64_t def = which == LEASE_MS   ? cfg->lease_ms
		: which == BACKOFF_BASE_MS ? cfg->backoff_base_ms
					   : cfg->backoff_max_ms;
	bool     any = false;
	for (size_t i = 0; i < cfg->n_topic_overrides; i++) {
		const struct brq_topic_override *o = &cfg->topic_overrides[i];
		bool                             has;
		uint64_t                         v;
		switch (which) {
		case LEASE_MS: has = o->has_lease, v = o->lease_ms; break;
		case BACKOFF_BASE_MS: has = o->has_backoff_base, v = o->backoff_base_ms; break;
		default: has = o->has_backoff_max, v = o->backoff_max_ms; break;
		}
		if (!has)
			continue;
		if (!any)
			fprintf(f, "(CASE %s", col);
		any = true;
		// Topic names are validated [a-z0-9._-]: no quote can appear in them.
		fprintf(f, " WHEN '%s' THEN %llu", o->topic, (unsigned long long) v);
	}
	if (any)
		fprintf(f, " ELSE %llu END)", (unsigned long long) def);
	else
		fprintf(f, "%llu", (unsigned long long) def);
}

// The backoff of SPEC §3 in milliseconds, for attempts expression `a` of topic column
// `col`: d = min(base * 2^(a-1), max), drawn uniformly from [d/2, d]. The exponent is
// clamped before exponentiation and the arithmetic is float8, so no attempt count can
// overflow (2^62 * 24h in ms is far inside float8's range).
static void
backoff_ms(FILE *f, const struct brq_config *cfg, const char *col, const char *a)
{
	fputs("(least(", f);
	topic_case(f, cfg, col, BACKOFF_BASE_MS);
	fprintf(f, "::float8 * power(2::float8, least(greatest(%s - 1, 0), 62)), ", a);
	topic_case(f, cfg, col, BACKOFF_MAX_MS);
	fputs("::float8) * (0.5 + random() * 0.5))", f);
}

static char *
build(const struct brq_config *cfg, brq_stmt st)
{
	char  *buf = NULL;
	size_t len = 0;
	FILE  *f   = open_memstream(&buf, &len);
	if (f == NULL)
		return NULL;

	switch (st) {
	case BRQ_STMT_ENQUEUE:
		// $1 topics text[], $2 payloads jsonb[], $3 keys text[] (NULL = no key),
		// $4 delay_ms int8[] (NULL = none), $5 run_at_ms int8[] (NULL = none),
		// $6 max_attempts int4[]. Ids are drawn first so that the reply can tell,
		// per input row, whether this statement created it; a key that conflicts
		// returns the existing row's id (invariant 8). A conflict with a row this
		// statement cannot see (same batch, or committed after its snapshot)
		// yields NULL: the caller resolves those with BRQ_STMT_ENQUEUE_LOOKUP.
		// Every conflict is resolved that way, in one batch: a join back to job
		// here got a plan made on a small table (a scan of all of job) that
		// stayed: 860 us per insert instead of 230 us (docs/benchmarks.md).
		fputs("WITH input AS MATERIALIZED ("
		      " SELECT nextval('job_id_seq'::regclass) AS id, t.*"
		      " FROM unnest($1::text[], $2::jsonb[], $3::text[], $4::int8[], $5::int8[], $6::int4[])"
		      "  WITH ORDINALITY AS t(topic, payload, key, delay_ms, run_at_ms, max_attempts, ord)"
		      "), ins AS ("
		      " INSERT INTO job (id, topic, payload, idempotency_key, available_at, max_attempts)"
		      " SELECT id, topic, payload, key,"
		      "  CASE WHEN run_at_ms IS NOT NULL"
		      "   THEN greatest(now(), to_timestamp(run_at_ms / 1000.0))"
		      "   ELSE now() + coalesce(delay_ms, 0) * interval '1 millisecond' END,"
		      "  max_attempts"
		      " FROM input ORDER BY ord"
		      " ON CONFLICT (topic, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING"
		      " RETURNING id"
		      ") SELECT ins.id, ins.id IS NOT NULL"
		      " FROM input i LEFT JOIN ins ON ins.id = i.id"
		      " ORDER BY i.ord",
		      f);
		break;
	case BRQ_STMT_ENQUEUE_LOOKUP:
		// $1 topics text[], $2 keys text[]: the ids of existing keyed jobs, by
		// the position (1-based) of their (topic, key) in the arrays.
		fputs("SELECT i.ord, j.id FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS i(topic, "
		      "key, ord)"
		      " JOIN job j ON j.topic = i.topic AND j.idempotency_key = i.key",
		      f);
		break;
	case BRQ_STMT_CLAIM:
		// $1 topics text[], $2 n, $3 worker, $4 lease tokens uuid[] (n of them,
		// from libsodium), $5 lease_ms (NULL = the topic's default).
		// One statement claims the batch (invariant 2); attempts are counted here
		// (invariant 6); order is available_at, then id (invariant 9).
		// 1. One ordered index scan per distinct topic (job_claim_topic_idx),
		//    each locking at most n rows, merged by (available_at, id): ready
		//    jobs of topics not asked for cost nothing. Extra rows locked for a
		//    multi-topic claim are released when the statement commits.
		// 2. The locked ids travel as one array and the update finds them
		//    through the primary key (`id = ANY(...)`): with a parameter for
		//    LIMIT the generic plan expects thousands of rows, and a join here
		//    became a sequential scan of the table (60 ms at 100k rows, not
		//    0.4 ms). A token's index in $4 is its id's position in the array.
		fputs("WITH c AS MATERIALIZED ("
		      " SELECT l.id FROM (SELECT DISTINCT unnest($1::text[])) AS t(topic) CROSS JOIN LATERAL "
		      "("
		      "  SELECT id, available_at FROM job"
		      "  WHERE topic = t.topic AND state IN ('pending', 'failed') AND available_at <= now()"
		      "  ORDER BY available_at, id LIMIT $2"
		      "  FOR NO KEY UPDATE SKIP LOCKED) l"
		      " ORDER BY l.available_at, l.id LIMIT $2"
		      "), ids AS MATERIALIZED (SELECT array_agg(id) AS a FROM c)"
		      " UPDATE job j SET state = 'processing', attempts = j.attempts + 1, locked_by = $3,"
		      "  lease_token = ($4::uuid[])[array_position((SELECT a FROM ids), j.id)],"
		      "  updated_at = now(), locked_until = now() + coalesce($5::int8, ",
		      f);
		topic_case(f, cfg, "j.topic", LEASE_MS);
		fputs(") * interval '1 millisecond'"
		      " WHERE j.id = ANY((SELECT a FROM ids)::int8[])"
		      " RETURNING j.id, j.topic, j.payload::text, j.attempts, j.max_attempts,"
		      "  array_position((SELECT a FROM ids), j.id),"
		      "  (extract(epoch FROM j.locked_until) * 1000)::int8,"
		      "  (extract(epoch FROM j.created_at) * 1000)::int8",
		      f);
		break;
	case BRQ_STMT_HEARTBEAT:
		// $1 ids int8[], $2 tokens uuid[], $3 lease_ms (NULL = the topic's default).
		// Guard: still processing and still this lease (invariant 2).
		fputs("UPDATE job j SET locked_until = now() + coalesce($3::int8, ", f);
		topic_case(f, cfg, "j.topic", LEASE_MS);
		fputs(") * interval '1 millisecond'"
		      " FROM unnest($1::int8[], $2::uuid[]) AS h(id, token)"
		      // `id = ANY($1)` gives the planner the primary key path whatever its
		      // estimate of processing rows (else it may scan all of them).
		      " WHERE j.id = ANY($1::int8[]) AND j.id = h.id AND j.state = 'processing'"
		      " AND j.lease_token = h.token"
		      " RETURNING j.id, (extract(epoch FROM j.locked_until) * 1000)::int8",
		      f);
		break;
	case BRQ_STMT_SETTLE:
		// $1 ids int8[], $2 tokens uuid[], $3 outcomes text[], $4 errors text[]
		// (NULL = keep last_error), $5 delay_ms int8[].
		// Guarded like heartbeat; a row whose lease is gone matches nothing and is
		// reported "not applied". `o` is the row as it was before this statement:
		// its updated_at is the claim time (heartbeats do not touch it).
		fputs("UPDATE job j SET"
		      " state = CASE s.outcome WHEN 'done' THEN 'done' WHEN 'cancel' THEN 'canceled'"
		      "  WHEN 'preserve' THEN 'failed'"
		      "  ELSE CASE WHEN j.attempts >= j.max_attempts THEN 'dead' ELSE 'failed' END END,"
		      " attempts = CASE WHEN s.outcome = 'preserve' THEN greatest(j.attempts - 1, 0) ELSE "
		      "j.attempts END,"
		      " available_at = CASE s.outcome"
		      "  WHEN 'fail' THEN now() + ",
		      f);
		backoff_ms(f, cfg, "j.topic", "j.attempts");
		fputs(" * interval '1 millisecond'"
		      "  WHEN 'preserve' THEN now() + ",
		      f);
		backoff_ms(f, cfg, "j.topic", "j.attempts");
		fputs(" * interval '1 millisecond'"
		      "  WHEN 'delay' THEN now() + least(s.delay_ms, ",
		      f);
		topic_case(f, cfg, "j.topic", BACKOFF_MAX_MS);
		fputs(") * interval '1 millisecond'"
		      "  ELSE j.available_at END,"
		      " last_error = coalesce(s.error, j.last_error),"
		      " locked_by = NULL, locked_until = NULL, lease_token = NULL, updated_at = now()"
		      " FROM unnest($1::int8[], $2::uuid[], $3::text[], $4::text[], $5::int8[])"
		      "  AS s(id, token, outcome, error, delay_ms), job o"
		      " WHERE j.id = ANY($1::int8[]) AND j.id = s.id AND o.id = s.id"
		      " AND j.state = 'processing' AND j.lease_token = s.token"
		      " RETURNING j.id, j.state, j.topic, extract(epoch FROM now() - o.updated_at)",
		      f);
		break;
	case BRQ_STMT_TOPICS_OF:
		// $1 ids int8[]: topics of jobs whose lease was lost, for the metrics.
		fputs("SELECT topic FROM job WHERE id = ANY($1::int8[])", f);
		break;
	case BRQ_STMT_CANCEL:
		// $1 id. Terminal rows are left alone and reported as they are.
		fputs("WITH c AS ("
		      " UPDATE job SET state = 'canceled', locked_by = NULL, locked_until = NULL,"
		      "  lease_token = NULL, updated_at = now()"
		      " WHERE id = $1 AND state IN ('pending', 'failed', 'processing')"
		      " RETURNING topic"
		      ") SELECT 'canceled', true, topic FROM c"
		      " UNION ALL SELECT state, false, topic FROM job"
		      " WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM c)",
		      f);
		break;
	case BRQ_STMT_JOB:
		fputs("SELECT id, topic, payload::text, state, attempts, max_attempts,"
		      " (extract(epoch FROM available_at) * 1000)::int8, locked_by,"
		      " (extract(epoch FROM locked_until) * 1000)::int8, last_error, idempotency_key,"
		      " (extract(epoch FROM created_at) * 1000)::int8,"
		      " (extract(epoch FROM updated_at) * 1000)::int8"
		      " FROM job WHERE id = $1",
		      f);
		break;
	case BRQ_STMT_STATS:
		// A full scan: an operator's question, not a hot path (see docs/operations.md).
		fputs("SELECT topic,"
		      " count(*) FILTER (WHERE state = 'pending'),"
		      " count(*) FILTER (WHERE state = 'processing'),"
		      " count(*) FILTER (WHERE state = 'failed'),"
		      " count(*) FILTER (WHERE state = 'done'),"
		      " count(*) FILTER (WHERE state = 'dead'),"
		      " count(*) FILTER (WHERE state = 'canceled'),"
		      " coalesce((extract(epoch FROM now() - min(available_at)"
		      "  FILTER (WHERE state IN ('pending', 'failed') AND available_at <= now())) * "
		      "1000)::int8, 0)"
		      " FROM job GROUP BY topic ORDER BY topic",
		      f);
		break;
	case BRQ_STMT_REAP:
		// $1 batch size. Expired leases go back to pending, attempts unchanged: an
		// expired lease is not a failure (invariant 7). SKIP LOCKED makes several
		// gateways reaping at once safe: each row is reaped by exactly one.
		fputs("UPDATE job j SET state = 'pending', available_at = now(), locked_by = NULL,"
		      " locked_until = NULL, lease_token = NULL, updated_at = now()"
		      " WHERE j.id = ANY(ARRAY(SELECT id FROM job WHERE state = 'processing' AND "
		      "locked_until < now()"
		      "  ORDER BY locked_until LIMIT $1 FOR NO KEY UPDATE SKIP LOCKED))"
		      " AND j.state = 'processing' AND j.locked_until < now()"
		      " RETURNING j.topic",
		      f);
		break;
	case BRQ_STMT_RETENTION:
		// $1 ttl_ms, $2 batch size. Only terminal rows, oldest first.
		// Both janitor statements reach rows through `id = ANY(ARRAY(...))` on
		// the primary key, like the claim: a join to a LIMIT $n subquery gets a
		// generic plan that may scan the whole table.
		fputs("DELETE FROM job j WHERE j.id = ANY(ARRAY(SELECT id FROM job"
		      "  WHERE state IN ('done', 'dead', 'canceled')"
		      "  AND updated_at < now() - $1::int8 * interval '1 millisecond'"
		      "  ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED))"
		      " AND j.state IN ('done', 'dead', 'canceled')"
		      " RETURNING j.topic",
		      f);
		break;
	default: break;
	}
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

int
brq_sql_build(brq_sql *s, const struct brq_config *cfg)
{
	static const int nparams[BRQ_STMT__COUNT] = {
		[BRQ_STMT_ENQUEUE] = 6,   [BRQ_STMT_ENQUEUE_LOOKUP] = 2,
		[BRQ_STMT_CLAIM] = 5,     [BRQ_STMT_HEARTBEAT] = 3,
		[BRQ_STMT_SETTLE] = 5,    [BRQ_STMT_TOPICS_OF] = 1,
		[BRQ_STMT_CANCEL] = 1,    [BRQ_STMT_JOB] = 1,
		[BRQ_STMT_STATS] = 0,     [BRQ_STMT_REAP] = 1,
		[BRQ_STMT_RETENTION] = 2,
	};
	memset(s, 0, sizeof(*s));
	for (int i = 0; i < BRQ_STMT__COUNT; i++) {
		s->text[i] = build(cfg, (brq_stmt) i);
		if (s->text[i] == NULL) {
			brq_sql_fini(s);
			return -1;
		}
		s->nparams[i] = nparams[i];
	}
	return 0;
}

void
brq_sql_fini(brq_sql *s)
{
	for (int i = 0; i < BRQ_STMT__COUNT; i++) {
		free(s->text[i]);
		s->text[i] = NULL;
	}
}
