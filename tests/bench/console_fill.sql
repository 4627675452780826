-- SPDX-License-Identifier: MIT
-- The console scenario's table (tests/bench/run.sh --console, issue 28): :rows jobs made
-- in SQL, ids in creation order over the last 30 days. With R = :rows (10M for the
-- published table), by id g = 1..R, the first rule that matches:
--   g > R - 20            fresh      pending: a topic that has only just appeared
--   g <= R/20, g % 4 = 0  old.0..4   done (1 in 50 dead): topics with only old rows
--   g % 10 = 1            big        done: R/10 terminal rows in one topic
--   g % 10 = 2            pending, R/10 in all: paused.0/1 (1 % each, paused), backlog
--                         (30 %), work.0..9; 1 in 50 of them due tomorrow
--   g % (R/100) = 3       small      done: 100 rows spread over the whole history
--   g % 1000 = 7          discard.0..2 (discard_done on the gateway): pending, 1 in 3 dead
--   otherwise             topic.0..75: done, ~1 % each dead, canceled, failed, processing
-- 1 in 10 rows has an idempotency key 'k<g>'. 100 topics. VACUUM ANALYZE at the end.
\set ON_ERROR_STOP on
SET synchronous_commit = off;
SET maintenance_work_mem = '256MB';
TRUNCATE job, job_topic_span;
-- The ids start again at 1: the janitor maps them from 0 (migration 00015).
UPDATE job_topic_span_mark SET mapped = 0, cand = NULL, cand_at = NULL, seal = NULL;
DELETE FROM topic_policy;
INSERT INTO topic_policy (topic, paused) VALUES ('paused.0', true), ('paused.1', true);
INSERT INTO job (id, topic, state, attempts, available_at, locked_by, locked_until,
                 lease_token, claimed_at, last_error, idempotency_key, created_at, updated_at)
SELECT g, topic, state, CASE WHEN state = 'pending' THEN 0 ELSE 1 END,
       CASE WHEN state = 'failed' OR (state = 'pending' AND g % 50 = 12)
            THEN now() + interval '1 day' ELSE t END,
       CASE WHEN state = 'processing' THEN 'bench' END,
       CASE WHEN state = 'processing' THEN now() + interval '1 hour' END,
       CASE WHEN state = 'processing' THEN gen_random_uuid() END,
       CASE WHEN state <> 'pending' THEN t END,
       CASE WHEN state IN ('dead', 'failed') THEN 'boom' END,
       CASE WHEN g % 10 = 5 THEN 'k' || g END,
       t, t + interval '1 second'
FROM (SELECT g, t,
        CASE WHEN g > :rows - 20 THEN 'fresh'
             WHEN g <= :rows / 20 AND g % 4 = 0 THEN 'old.' || (g / 4 % 5)
             WHEN g % 10 = 1 THEN 'big'
             WHEN g % 10 = 2 THEN CASE g % 100 WHEN 2 THEN 'paused.0' WHEN 12 THEN 'paused.1'
                                  WHEN 22 THEN 'backlog' WHEN 32 THEN 'backlog' WHEN 42 THEN 'backlog'
                                  ELSE 'work.' || (g / 100 % 10) END
             WHEN g % (:rows / 100) = 3 THEN 'small'
             WHEN g % 1000 = 7 THEN 'discard.' || (g / 1000 % 3)
             ELSE 'topic.' || (g % 76) END AS topic,
        CASE WHEN g > :rows - 20 THEN 'pending'
             WHEN g <= :rows / 20 AND g % 4 = 0 THEN CASE WHEN g % 200 = 0 THEN 'dead' ELSE 'done' END
             WHEN g % 10 = 1 THEN 'done'
             WHEN g % 10 = 2 THEN 'pending'
             WHEN g % (:rows / 100) = 3 THEN 'done'
             WHEN g % 1000 = 7 THEN CASE WHEN g % 3000 = 7 THEN 'dead' ELSE 'pending' END
             WHEN g % 97 = 0 THEN 'dead' WHEN g % 89 = 0 THEN 'canceled'
             WHEN g % 83 = 0 THEN 'failed' WHEN g % 79 = 0 THEN 'processing'
             ELSE 'done' END AS state
      FROM (SELECT g, now() - (:rows - g) * (interval '30 days' / :rows) AS t
            FROM generate_series(1, :rows) g) s) x;
SELECT setval('job_id_seq', :rows);
VACUUM ANALYZE job;
