-- SPDX-License-Identifier: MIT
-- The topics' spans of ids (issue 28.2): which ranges of 1,024 ids (bucket = id >> 10)
-- hold jobs of a topic. The console's list by topic reads the primary key only in its
-- topic's ranges, newest first (gateway/store/store_sql_jobs.c), instead of walking the
-- whole history for a topic whose jobs are few or old.
--
-- Written after the fact by the gateways' janitors (gateway/background/janitor.c,
-- BRQ_STMT_SPAN_MAP), never by the hot path: an index or trigger that knew a job's topic
-- at insert costs every job 5-9 % of PostgreSQL's work (docs/benchmarks.md, "Console
-- reads"), over invariant 17's 2 %. job_topic_span_mark.mapped is the id up to which
-- every committed job has its span; the list walks the primary key above it (the ids
-- the janitor has not reached, under a second's worth).
--
-- How the mark moves without missing a job whose transaction was still open (its id
-- drawn, its row not yet visible): a pass reads the sequence's last value as `cand`;
-- a later pass (>= 100 ms on) takes a snapshot `seal`, by when every transaction that
-- drew an id <= cand has its transaction id (drawn and written in one statement); once
-- every transaction running at `seal` has ended (xmin of a new snapshot >= xmax of
-- seal), the ids up to cand are all committed or gone, and are mapped. Rows are never
-- rewritten (id and topic do not change); spans below the oldest id are pruned with
-- retention; a span whose jobs are gone costs the list one empty range read.

-- +goose Up
CREATE TABLE job_topic_span (
    topic  text NOT NULL,
    bucket int8 NOT NULL,
    PRIMARY KEY (topic, bucket)
);
CREATE TABLE job_topic_span_mark (
    one     bool        PRIMARY KEY DEFAULT true CHECK (one),
    mapped  int8        NOT NULL,
    cand    int8,
    cand_at timestamptz,
    seal    pg_snapshot
);
-- The jobs already there, exactly: SHARE waits for every transaction writing `job` to
-- end and holds new writes off until this commits (about a second per million rows).
LOCK TABLE job IN SHARE MODE;
INSERT INTO job_topic_span (topic, bucket)
SELECT DISTINCT topic, id >> 10 FROM job;
INSERT INTO job_topic_span_mark (mapped) SELECT coalesce(max(id), 0) FROM job;

-- +goose Down
DROP TABLE job_topic_span_mark;
DROP TABLE job_topic_span;
