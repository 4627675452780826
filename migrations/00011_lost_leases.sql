-- SPDX-License-Identifier: MIT
-- Crash-loop quarantine (SPEC invariant 18): how many of a job's leases ran out
-- without a recorded outcome.
--
-- An expired lease is not an attempt failure (invariant 7), so a handler that kills
-- or wedges its worker never moved its job towards `dead`: the reaper put it back,
-- the next worker took it and died too, forever (issue 26). The reaper now counts
-- each lease it takes back here, and at the topic's max_lost_leases writes `dead`
-- in the same statement (gateway/store/store_sql.c, reap). A retry is a new row, so
-- it starts at 0. A constant default adds the column without rewriting job; the
-- CHECK is added NOT VALID so that the migration does not read every row to prove
-- it (each of them holds the default, 0): new and updated rows are checked all the
-- same.

-- +goose Up
ALTER TABLE job ADD COLUMN lost_leases integer NOT NULL DEFAULT 0;
ALTER TABLE job ADD CONSTRAINT job_lost_leases_range CHECK (lost_leases >= 0) NOT VALID;

-- +goose Down
ALTER TABLE job DROP COLUMN lost_leases;
