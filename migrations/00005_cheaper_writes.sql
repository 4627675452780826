-- SPDX-License-Identifier: MIT
-- Cheaper writes on the hot path: the topic rule checked only when a topic is written,
-- and the claim time kept in the row.

-- +goose Up
-- A table CHECK runs on every UPDATE of the row, whatever the columns changed: the
-- topic's regular expression ran on every claim, heartbeat and settle. A domain's
-- CHECK runs only when a value is stored in the column (an INSERT, or an UPDATE that
-- sets topic): the same rule, paid once per job.
CREATE DOMAIN job_topic AS text
    CONSTRAINT job_topic_format CHECK (VALUE ~ '^[a-z0-9][a-z0-9._-]*$' AND octet_length(VALUE) <= 128);
ALTER TABLE job ALTER COLUMN topic TYPE job_topic;
ALTER TABLE job DROP CONSTRAINT job_topic_format;

-- When the current (or last) attempt was claimed. The settle reports the attempt's
-- duration from it instead of reading the row a second time; it also tells an
-- operator when a running job started.
ALTER TABLE job ADD COLUMN claimed_at timestamptz;

-- +goose Down
ALTER TABLE job DROP COLUMN claimed_at;
ALTER TABLE job ALTER COLUMN topic TYPE text;
ALTER TABLE job ADD CONSTRAINT job_topic_format CHECK (
    topic ~ '^[a-z0-9][a-z0-9._-]*$' AND octet_length(topic) <= 128);
DROP DOMAIN job_topic;
