-- SPDX-License-Identifier: MIT
-- Job priorities, and per-topic policy: pause, concurrency limit, rate limit.

-- +goose Up
-- 1 runs first, 9 last, and 1 is the default, as in River: "priority 1" reads as
-- "first", and work that may wait is given a higher number (2..9). The default is
-- the first priority so that the claim of ordinary jobs reads one index range and
-- stops there, as before priorities (gateway/store_sql.c claim_sql). Strict: a
-- ready job of priority 1 always goes before one of priority 2, so a steady flood
-- of them starves the others (docs/operations.md). A constant default adds the
-- column without rewriting job; the CHECK is a comparison of two small integers,
-- nothing like the topic's regex.
ALTER TABLE job ADD COLUMN priority smallint NOT NULL DEFAULT 1
    CONSTRAINT job_priority_range CHECK (priority BETWEEN 1 AND 9);

-- The claim reads one (topic, priority) range at a time, in (available_at, id)
-- order, so a range stops at its first job not yet due: delayed and backed-off jobs
-- cost a claim nothing, as with job_claim_topic_idx (gateway/store_sql.c).
CREATE INDEX job_claim_priority_idx ON job (topic, priority, available_at, id)
    WHERE state IN ('pending', 'failed');
DROP INDEX job_claim_topic_idx;

-- Jobs processing, by topic: what a concurrency limit counts at claim time (one
-- range of this index), and what the reaper reads (all of it: the jobs held right
-- now, a small index). It replaces job_lease_expiry_idx rather than joining it: a
-- claim writes one index entry per job into each partial index of `processing`, so
-- a second one would cost every claim, limited or not.
CREATE INDEX job_running_idx ON job (topic, locked_until) WHERE state = 'processing';
DROP INDEX job_lease_expiry_idx;

-- One row per topic with a policy; a topic without a row has none (not paused, no
-- limits). The claim of a limited topic locks its row, so that gateways deciding how
-- many of the topic's jobs to start take turns (exact limits across gateways).
-- rate_window is the second (of the database clock) that rate_started counts the
-- starts of: at most rate_per_s jobs start in each whole second.
CREATE TABLE topic_policy (
    topic        job_topic   PRIMARY KEY,
    paused       boolean     NOT NULL DEFAULT false,
    max_running  integer     CONSTRAINT topic_policy_max_running_range
                             CHECK (max_running BETWEEN 1 AND 1000000),
    rate_per_s   integer     CONSTRAINT topic_policy_rate_range
                             CHECK (rate_per_s BETWEEN 1 AND 1000000),
    rate_window  timestamptz,
    rate_started integer     NOT NULL DEFAULT 0,
    updated_at   timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE topic_policy;
CREATE INDEX job_lease_expiry_idx ON job (locked_until) WHERE state = 'processing';
DROP INDEX job_running_idx;
CREATE INDEX job_claim_topic_idx ON job (topic, available_at, id)
    WHERE state IN ('pending', 'failed');
DROP INDEX job_claim_priority_idx;
ALTER TABLE job DROP COLUMN priority;
