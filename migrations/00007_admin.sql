-- SPDX-License-Identifier: MIT
-- Operators' tools (issue 15 parts 5-7): a handler's result, retries that keep the audit
-- trail, and an index for the job list.

-- +goose Up
-- The JSON a handler attached when it settled `done` (size-limited like payloads at the
-- gateway). NULL: none. Nullable without a default: adding it rewrites nothing.
ALTER TABLE job ADD COLUMN result jsonb;

-- A retry is a new job; retry_of names the terminal job it re-runs. The original row is
-- never changed (invariant 3: terminal states are final), so it stays as the audit trail:
-- its attempts, last_error and times are what happened. One retry per job: retrying the
-- same job again finds this row (the request is idempotent); to retry a retry that
-- failed too, retry that one (the chain is the history). No foreign key: retention may
-- delete the original first, and the link then simply names a job that is gone.
ALTER TABLE job ADD COLUMN retry_of bigint;
ALTER TABLE job ADD CONSTRAINT job_retry_of_positive CHECK (retry_of >= 1);
CREATE UNIQUE INDEX job_retry_of_uq ON job (retry_of) WHERE retry_of IS NOT NULL;

-- The job list of terminal rows by topic and state, newest first (docs/operations.md,
-- "Listing jobs"). Partial on the terminal states, like job_retention_idx: a job enters
-- it once, when it settles for good; enqueue, claim, heartbeat and retried settles never
-- touch it. Active rows are listed through the backlog's partial indexes (since 00006:
-- job_claim_priority_idx and job_running_idx).
CREATE INDEX job_list_terminal_idx ON job (topic, state, id)
    WHERE state IN ('done', 'dead', 'canceled');

-- +goose Down
DROP INDEX job_list_terminal_idx;
DROP INDEX job_retry_of_uq;
ALTER TABLE job DROP CONSTRAINT job_retry_of_positive;
ALTER TABLE job DROP COLUMN retry_of;
ALTER TABLE job DROP COLUMN result;
