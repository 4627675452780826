-- SPDX-License-Identifier: MIT
-- Retention: find old terminal rows cheaply, and vacuum a churning table early (SPEC §4).

-- +goose Up
CREATE INDEX job_retention_idx ON job (updated_at)
    WHERE state IN ('done', 'dead', 'canceled');

-- Every job is inserted, updated 2+ times and eventually deleted: dead tuples
-- pile up fast, and SKIP LOCKED scans slow down over them. Vacuum after 2 % of
-- the table (default 20 %) changed.
ALTER TABLE job SET (autovacuum_vacuum_scale_factor = 0.02,
                     autovacuum_vacuum_threshold = 100);

-- +goose Down
ALTER TABLE job RESET (autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold);
DROP INDEX job_retention_idx;
