-- SPDX-License-Identifier: MIT
-- The console's history (issue 28.4): per topic and minute, the jobs started and
-- finished, the backlog, and how long started jobs had waited.
--
-- Written by the gateways' history threads (gateway/background/history.c), read by the
-- console (GET /console/api/history). Every gateway adds what it counted since its
-- last write to the current minute's row (INSERT ... ON CONFLICT DO UPDATE SET
-- started = started + excluded.started), so with several gateways a row holds their
-- sum and every console shows the same; the backlog columns are a count of the table
-- (the last gateway to write in the minute wins: they count the same rows). wait_hist
-- holds the enqueue-to-start waits of the minute's starts as counts per bucket
-- (gateway/metrics/metrics.h, BRQ_WAIT_BUCKETS), added element by element, from
-- which the console reads p50 and p99: percentiles of several gateways cannot be
-- added, histograms can. Rows older than 25 hours are deleted by the same writers,
-- so the table holds at most topics x 1,500 rows (docs/console.md, "History").
--
-- Not the job table: nothing on the hot path reads or writes it, and a job deleted
-- (discard_done, retention) keeps its place in the counts.

-- +goose Up
CREATE TABLE job_history (
    topic     text        NOT NULL,
    minute    timestamptz NOT NULL,
    started   bigint      NOT NULL DEFAULT 0,
    finished  bigint      NOT NULL DEFAULT 0,
    pending   bigint,
    ready     bigint,
    wait_hist bigint[],
    PRIMARY KEY (topic, minute),
    CONSTRAINT job_history_counts CHECK (started >= 0 AND finished >= 0)
);
-- The pruning, oldest minutes first.
CREATE INDEX job_history_minute_idx ON job_history (minute);

-- +goose Down
DROP TABLE job_history;
