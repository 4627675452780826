-- SPDX-License-Identifier: MIT
-- Each attempt's error (issue 28.6): the errors of a job's latest attempts, kept in its row
-- beside last_error, which stays as it was (the last one).
--
-- A jsonb array, oldest first, of at most 10 objects {"attempt": n, "at_ms": t, "error":
-- text}: the attempt the error belongs to (attempts as the settle found it), when it was
-- recorded (Unix ms of the database clock), and the error as last_error holds it (cut by
-- the gateway to 4096 bytes at a character boundary). The statements that write
-- last_error append to it in the same UPDATE (gateway/store/store_sql.c: the settle, and
-- the reaper when it quarantines a job), dropping the oldest entry beyond 10: the hot
-- path gets no second statement, and a settle without an error (the common `done`) keeps
-- the column as it is. At most about 41 KB a row, TOASTed beyond ~2 KB like a payload.
-- NULL: no error recorded yet (and every row that existed before this migration).
-- Nullable without a default: adding it rewrites nothing. No CHECK: a table CHECK runs on
-- every UPDATE of the row (claims and heartbeats too, see 00005), and would read the
-- array each time; the bound is kept by the only statements that write it.

-- +goose Up
ALTER TABLE job ADD COLUMN errors jsonb;

-- +goose Down
ALTER TABLE job DROP COLUMN errors;
