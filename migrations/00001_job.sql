-- SPDX-License-Identifier: MIT
-- The job table: one row per job, its lease and its outcome (SPEC §2).

-- +goose Up
CREATE TABLE job (
    id              bigserial   PRIMARY KEY,
    topic           text        NOT NULL,
    payload         jsonb       NOT NULL DEFAULT '{}'::jsonb,
    state           text        NOT NULL DEFAULT 'pending',
    attempts        integer     NOT NULL DEFAULT 0,
    max_attempts    integer     NOT NULL DEFAULT 5,
    available_at    timestamptz NOT NULL DEFAULT now(),
    -- The lease: who holds the job (free text, for humans), until when, and the
    -- random token that every later write by the holder must present.
    locked_by       text,
    locked_until    timestamptz,
    lease_token     uuid,
    last_error      text,
    idempotency_key text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),

    CONSTRAINT job_topic_format CHECK (
        topic ~ '^[a-z0-9][a-z0-9._-]*$' AND octet_length(topic) <= 128),
    CONSTRAINT job_state_known CHECK (
        state IN ('pending', 'processing', 'failed', 'done', 'dead', 'canceled')),
    CONSTRAINT job_attempts_range CHECK (attempts >= 0),
    CONSTRAINT job_max_attempts_range CHECK (max_attempts BETWEEN 1 AND 1000),
    -- Invariant 1: a processing job always has a lease, and only a processing job
    -- has one. Holder, expiry and token are set and cleared together.
    CONSTRAINT job_lease_iff_processing CHECK (
        (state = 'processing') = (locked_by IS NOT NULL)
        AND (locked_by IS NULL) = (locked_until IS NULL)
        AND (locked_by IS NULL) = (lease_token IS NULL)),
    -- Invariant 8: an empty key means "no key" and is stored as NULL.
    CONSTRAINT job_idempotency_key_not_empty CHECK (idempotency_key <> ''),
    CONSTRAINT job_last_error_size CHECK (octet_length(last_error) <= 4096)
);

-- Claim path: ready rows in (available_at, id) order. Partial, so terminal rows
-- (the bulk of the table over time) cost the claim nothing.
CREATE INDEX job_claim_idx ON job (available_at, id)
    WHERE state IN ('pending', 'failed');

-- Reaper path: expired leases.
CREATE INDEX job_lease_expiry_idx ON job (locked_until)
    WHERE state = 'processing';

-- Invariant 3: terminal states are never overwritten. The WHEN clause is
-- evaluated in C before the function is called, so live rows pay nothing.
-- +goose StatementBegin
CREATE FUNCTION job_terminal_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'job %: state % is terminal and cannot be changed', OLD.id, OLD.state
        USING ERRCODE = 'check_violation';
END
$$;
-- +goose StatementEnd

CREATE TRIGGER job_terminal_guard
    BEFORE UPDATE ON job
    FOR EACH ROW
    WHEN (OLD.state IN ('done', 'dead', 'canceled'))
    EXECUTE FUNCTION job_terminal_guard();

-- +goose Down
DROP TABLE job;
DROP FUNCTION job_terminal_guard();
