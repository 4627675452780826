-- SPDX-License-Identifier: MIT
-- The chaos test's checker. tests/chaos/run.sh loads what the processes wrote into the
-- tables below (in the test's own database, beside `job` and the recorder of
-- shadow.sql) and calls chaos_check(N): one row per check, with the number of
-- violations and a few examples. Every check must say 0 for the run to pass, and
-- run.sh proves each one can fail by corrupting its input inside a rolled-back
-- transaction (chaos_selfcheck).

-- Handler runs from the workers' logs (an S line, and the E line if the run ended).
CREATE TABLE chaos_run (
    id       bigint  NOT NULL,
    attempt  integer NOT NULL,
    start_us bigint  NOT NULL,
    end_us   bigint,           -- NULL: no end line (its process was killed, or it never ended)
    pid      integer NOT NULL,
    tag      text    NOT NULL, -- the gateway the worker talked to
    outcome  text              -- done | fail | canceled; NULL without an end line
);
-- Worker processes the driver SIGKILLed, and when it saw them gone (waitpid): an upper
-- bound on the end of their unfinished runs.
CREATE TABLE chaos_kill (pid integer PRIMARY KEY, t_us bigint NOT NULL);
-- Every acknowledged enqueue: key k<seq> is job id.
CREATE TABLE chaos_ack (
    seq     bigint  NOT NULL,
    id      bigint  NOT NULL,
    t_us    bigint  NOT NULL,
    gw      integer NOT NULL,
    created integer NOT NULL
);
-- The faults, for the recovery figures: kind, start, end (the thing is back), detail
-- (the pid of a killed worker, the tag of a killed gateway).
CREATE TABLE chaos_fault (
    n      serial PRIMARY KEY,
    kind   text   NOT NULL,
    t0_us  bigint NOT NULL,
    t1_us  bigint NOT NULL,
    detail text   NOT NULL
);

-- Runs with the end each could at most reach: its end line, else the kill of its process,
-- else never (an unfinished run overlaps everything after it).
CREATE VIEW chaos_span AS
SELECT r.id, r.attempt, r.pid, r.start_us, r.outcome,
       coalesce(r.end_us, k.t_us, 9223372036854775807) AS end_us,
       r.end_us IS NULL AND k.pid IS NULL AS unended
  FROM chaos_run r LEFT JOIN chaos_kill k ON k.pid = r.pid;

CREATE FUNCTION chaos_check(jobs bigint)
RETURNS TABLE (name text, n bigint, examples text)
LANGUAGE sql AS $$
-- 1. Lost: a key never acknowledged (the producer gives up on none), an acknowledged
--    id with no row, or a row that is not the key's, or one not done (dead only when it
--    failed on its last attempt: a no-op handler never does).
SELECT 'unacknowledged', count(*), string_agg('k' || s, ' ' ORDER BY s) FILTER (WHERE s < 11)
  FROM generate_series(1, jobs) s
 WHERE NOT EXISTS (SELECT 1 FROM chaos_ack a WHERE a.seq = s)
UNION ALL
SELECT 'key_acknowledged_as_two_jobs', count(*), string_agg('k' || seq, ' ')
  FROM (SELECT seq FROM chaos_ack GROUP BY seq HAVING count(DISTINCT id) > 1 LIMIT 1000) x
UNION ALL
SELECT 'lost', count(*), string_agg(id || '(k' || seq || ')', ' ') FILTER (WHERE rn < 11)
  FROM (SELECT DISTINCT ON (a.seq) a.seq, a.id, row_number() OVER () AS rn
          FROM chaos_ack a LEFT JOIN job j ON j.id = a.id
         WHERE j.id IS NULL OR j.idempotency_key IS DISTINCT FROM 'k' || a.seq) x
UNION ALL
SELECT 'not_done', count(*), string_agg(id || ':' || state, ' ') FILTER (WHERE rn < 11)
  FROM (SELECT j.id, j.state, row_number() OVER () AS rn
          FROM job j
         WHERE j.id IN (SELECT id FROM chaos_ack) AND j.state <> 'done'
           AND NOT (j.state = 'dead' AND EXISTS (
                   SELECT 1 FROM chaos_run r WHERE r.id = j.id AND r.outcome = 'fail'
                      AND r.attempt = j.attempts AND r.attempt >= j.max_attempts))) x
UNION ALL
SELECT 'jobs_never_acknowledged', count(*), string_agg(id::text, ' ') FILTER (WHERE rn < 11)
  FROM (SELECT j.id, row_number() OVER () AS rn FROM job j
         WHERE NOT EXISTS (SELECT 1 FROM chaos_ack a WHERE a.id = j.id)) x
-- 2. Two runs of one job overlapping in time ([start, end) intersect), and runs whose
--    end nobody can bound.
UNION ALL
SELECT 'unended_runs', count(*), string_agg(id || '/' || attempt || '@' || pid, ' ') FILTER (WHERE rn < 11)
  FROM (SELECT *, row_number() OVER () AS rn FROM chaos_span WHERE unended) x
UNION ALL
SELECT 'overlapping_runs', count(*),
       string_agg(format('%s: attempt %s [%s..%s] pid %s / attempt %s [%s..%s] pid %s', id, a1, s1, e1, p1,
                         a2, s2, e2, p2), '; ') FILTER (WHERE rn < 6)
  FROM (SELECT a.id, a.attempt a1, a.start_us s1, a.end_us e1, a.pid p1,
               b.attempt a2, b.start_us s2, b.end_us e2, b.pid p2, row_number() OVER () AS rn
          FROM chaos_span a JOIN chaos_span b
            ON a.id = b.id AND (a.start_us, a.pid, a.attempt) < (b.start_us, b.pid, b.attempt)
           AND a.start_us < b.end_us AND b.start_us < a.end_us) x
-- 3. An outcome written twice: one lease ended twice (two settles, or a settle after
--    the reap), a second terminal write, a done row whose final attempt never ran to
--    its end (a stale writer), and the recorder's own consistency (attempts = claims
--    less the attempts given back: the gateway's unclaim of an undeliverable claim).
UNION ALL
SELECT 'lease_ended_twice', count(*), string_agg(id || ':' || token, ' ') FILTER (WHERE rn < 6)
  FROM (SELECT id, token, row_number() OVER () AS rn FROM chaos_transition
         WHERE kind = 'exit' GROUP BY id, token HAVING count(*) > 1) x
UNION ALL
SELECT 'terminal_written_twice', count(*), string_agg(id::text, ' ') FILTER (WHERE rn < 11)
  FROM (SELECT id, row_number() OVER () AS rn FROM chaos_transition
         WHERE kind = 'terminal' GROUP BY id HAVING count(*) > 1) x
UNION ALL
SELECT 'done_without_its_run', count(*), string_agg(id || '/' || attempts, ' ') FILTER (WHERE rn < 11)
  FROM (SELECT j.id, j.attempts, row_number() OVER () AS rn FROM job j
         WHERE j.state = 'done' AND NOT EXISTS (
               SELECT 1 FROM chaos_run r
                WHERE r.id = j.id AND r.attempt = j.attempts AND r.outcome = 'done')) x
UNION ALL
SELECT 'terminal_not_recorded', count(*), string_agg(id::text, ' ') FILTER (WHERE rn < 11)
  FROM (SELECT j.id, row_number() OVER () AS rn FROM job j
         WHERE j.state IN ('done', 'dead', 'canceled') AND NOT EXISTS (
               SELECT 1 FROM chaos_transition t WHERE t.id = j.id AND t.kind = 'terminal')) x
UNION ALL
SELECT 'attempts_not_claims', count(*), string_agg(id || ':' || attempts || '/' || claims, ' ') FILTER (WHERE rn < 11)
  FROM (SELECT j.id, j.attempts, coalesce(c.claims, 0) AS claims, row_number() OVER () AS rn
          FROM job j LEFT JOIN (SELECT id, count(*) FILTER (WHERE kind = 'claim')
                                         - coalesce(sum(old_attempts - attempts)
                                                    FILTER (WHERE kind = 'exit'), 0) AS claims
                                  FROM chaos_transition GROUP BY id) c ON c.id = j.id
         WHERE j.attempts <> coalesce(c.claims, 0)) x
$$;

-- Each check fails on the corruption it exists for: chaos_inject(name) corrupts the
-- loaded input so that check `name` must find it; the caller runs chaos_check and rolls
-- the transaction back.
CREATE FUNCTION chaos_inject(fault text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    victim bigint := (SELECT min(id) FROM chaos_ack);
BEGIN
    CASE fault
    WHEN 'unacknowledged' THEN         -- the producer gave up on a key
        DELETE FROM chaos_ack WHERE seq = (SELECT min(seq) FROM chaos_ack);
    WHEN 'key_acknowledged_as_two_jobs' THEN -- idempotency broken: one key, two ids
        INSERT INTO chaos_ack SELECT seq, id + 1000000000, t_us, gw, 1 FROM chaos_ack
         WHERE seq = (SELECT min(seq) FROM chaos_ack) LIMIT 1;
    WHEN 'lost' THEN                   -- PostgreSQL loses an acknowledged job
        DELETE FROM job WHERE id = victim;
    WHEN 'not_done' THEN               -- a done write is lost, the job is back to failed
        ALTER TABLE job DISABLE TRIGGER USER;
        UPDATE job SET state = 'failed' WHERE id = victim;
    WHEN 'jobs_never_acknowledged' THEN -- a job nobody enqueued (a duplicate)
        INSERT INTO job (topic) VALUES ('chaos');
    WHEN 'unended_runs' THEN           -- a run vanished without an end and without a kill
        UPDATE chaos_run SET end_us = NULL, outcome = NULL
         WHERE (id, attempt, pid) = (SELECT id, attempt, pid FROM chaos_run
                                      WHERE end_us IS NOT NULL
                                        AND pid NOT IN (SELECT pid FROM chaos_kill)
                                      ORDER BY id LIMIT 1);
    WHEN 'overlapping_runs' THEN       -- a second run starts 1 us before the first one ends
        INSERT INTO chaos_run
        SELECT id, attempt + 1, end_us - 1, end_us + 1000, pid + 1, tag, 'done'
          FROM chaos_run WHERE end_us IS NOT NULL ORDER BY id LIMIT 1;
    WHEN 'lease_ended_twice' THEN      -- one lease settled twice
        INSERT INTO chaos_transition (id, kind, token, old_attempts, attempts, old_state, new_state)
        SELECT id, kind, token, old_attempts, attempts, old_state, new_state
          FROM chaos_transition WHERE kind = 'exit' ORDER BY seq LIMIT 1;
    WHEN 'terminal_written_twice' THEN -- a second done write
        INSERT INTO chaos_transition (id, kind, token, old_attempts, attempts, old_state, new_state)
        SELECT id, kind, token, old_attempts, attempts, old_state, new_state
          FROM chaos_transition WHERE kind = 'terminal' ORDER BY seq LIMIT 1;
    WHEN 'done_without_its_run' THEN   -- done written for an attempt whose run did not end done
        UPDATE chaos_run SET outcome = 'canceled'
         WHERE id = victim AND attempt = (SELECT attempts FROM job WHERE id = victim);
    WHEN 'terminal_not_recorded' THEN  -- the recorder missed a write
        DELETE FROM chaos_transition WHERE id = victim AND kind = 'terminal';
    WHEN 'attempts_not_claims' THEN    -- the recorder missed a claim
        DELETE FROM chaos_transition
         WHERE seq = (SELECT min(seq) FROM chaos_transition WHERE id = victim AND kind = 'claim');
    ELSE
        RAISE EXCEPTION 'unknown fault %', fault;
    END CASE;
END
$$;

-- Recovery after each fault (seconds). down_s: how long the thing was away as the driver
-- saw it (a killed worker: until waitpid; a gateway: until it answered a ping again;
-- PostgreSQL: the immediate stop and the start with its crash recovery). next_claim_s:
-- from the fault to the next handler start, for a worker anywhere, for a gateway by one
-- of its own workers once it was back, for PostgreSQL anywhere once it was back (a start
-- just after the fault may still be a claim answered before it). next_ack_s: likewise
-- the next acknowledged enqueue. orphans_rerun_s: for a killed worker, when the last of
-- the runs it left unfinished started again elsewhere (lease expiry + a reaper round).
CREATE VIEW chaos_recovery AS
SELECT f.n, f.kind, f.detail,
       round((f.t1_us - f.t0_us) / 1e6, 2) AS down_s,
       round(((SELECT min(r.start_us) FROM chaos_run r
                WHERE r.start_us > CASE f.kind WHEN 'worker_kill' THEN f.t0_us ELSE f.t1_us END
                  AND (f.kind <> 'gateway_kill' OR r.tag = f.detail)) - f.t0_us) / 1e6, 2) AS next_claim_s,
       round(((SELECT min(a.t_us) FROM chaos_ack a
                WHERE a.t_us > CASE f.kind WHEN 'worker_kill' THEN f.t0_us ELSE f.t1_us END
                  AND (f.kind <> 'gateway_kill' OR a.gw = ascii(f.detail) - ascii('a')))
               - f.t0_us) / 1e6, 2) AS next_ack_s,
       round(((SELECT max((SELECT min(r2.start_us) FROM chaos_run r2
                             WHERE r2.id = r.id AND r2.start_us > r.start_us))
                 FROM chaos_run r
                WHERE f.kind = 'worker_kill' AND r.pid::text = f.detail AND r.end_us IS NULL)
               - f.t0_us) / 1e6, 2) AS orphans_rerun_s
  FROM chaos_fault f;
