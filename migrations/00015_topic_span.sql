-- SPDX-License-Identifier: MIT
-- The topics' spans of ids (issue 28): which ranges of 1,024 ids (bucket = id >> 10)
-- hold jobs of a topic. The console's list by topic reads the primary key only in its
-- topic's ranges, newest first (gateway/store/store_sql_jobs.c), instead of walking the
-- whole history for a topic whose jobs are few or old.
--
-- Written by a statement-level trigger, once per INSERT statement for its distinct
-- (topic, bucket) pairs, so every insert (enqueue, retry, schedules) is covered and a
-- batch of one topic is one probe: +1.27 % of PostgreSQL's instructions per job's life
-- (tests/bench/instructions.sh --enqueue; invariant 17's budget is 2 %; docs/
-- benchmarks.md, "Console reads"). A per-row trigger or index would cost every job.
-- Rows are never deleted: a bucket whose jobs are gone (retention, discard_done) costs
-- the list one empty range read.

-- +goose Up
CREATE TABLE job_topic_span (
    topic  text NOT NULL,
    bucket int8 NOT NULL,
    PRIMARY KEY (topic, bucket)
);
-- +goose StatementBegin
CREATE FUNCTION job_topic_span_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_topic_span (topic, bucket)
    SELECT DISTINCT topic, id >> 10 FROM job_topic_span_new
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER job_topic_span_add AFTER INSERT ON job
    REFERENCING NEW TABLE AS job_topic_span_new
    FOR EACH STATEMENT EXECUTE FUNCTION job_topic_span_add();
-- The jobs already there (the trigger holds off inserts until this commits).
INSERT INTO job_topic_span (topic, bucket)
SELECT DISTINCT topic, id >> 10 FROM job
ON CONFLICT DO NOTHING;

-- +goose Down
DROP TRIGGER job_topic_span_add ON job;
DROP FUNCTION job_topic_span_add();
DROP TABLE job_topic_span;
