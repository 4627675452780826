-- SPDX-License-Identifier: MIT
-- The job list's index of terminal rows holds the dead and canceled ones only
-- (issue 15: the drain must not be slower than before the list existed).
--
-- job_list_terminal_idx (00007) held every terminal row, `done` included, so every
-- job's final settle wrote one more index entry: measured on the drain benchmark at
-- concurrency 32, PostgreSQL CPU per job 17.4-17.7 µs with it vs 15.4-15.5 µs
-- without, and 10 % fewer jobs per second (docs/benchmarks.md). Dead and canceled
-- rows are the ones operators list and retry, and they are few; a job that settles
-- `done` now enters only job_pkey and job_retention_idx, as before 00007. `done`
-- rows are listed by walking job_pkey backwards (docs/operations.md, "What the list
-- reads"): done is the bulk of the history, so a page is found near the top.

-- +goose Up
CREATE INDEX job_list_dead_idx ON job (topic, state, id)
    WHERE state IN ('dead', 'canceled');
DROP INDEX job_list_terminal_idx;

-- +goose Down
CREATE INDEX job_list_terminal_idx ON job (topic, state, id)
    WHERE state IN ('done', 'dead', 'canceled');
DROP INDEX job_list_dead_idx;
