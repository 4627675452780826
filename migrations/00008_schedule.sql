-- SPDX-License-Identifier: MIT
-- Periodic jobs: one row per schedule (a cron expression in a time zone, or a fixed
-- interval), the next slot it owes, and what to do with slots missed while no gateway
-- ran (SPEC invariant 16; docs/operations.md "Periodic jobs").

-- +goose Up
CREATE TABLE schedule (
    name         text        PRIMARY KEY,
    topic        job_topic   NOT NULL,
    payload      jsonb       NOT NULL DEFAULT '{}'::jsonb,
    -- Exactly one of cron (5 fields, read in time zone tz) and every_ms (slots at
    -- whole multiples of every_ms since the Unix epoch).
    cron         text,
    tz           text        NOT NULL DEFAULT 'UTC',
    every_ms     bigint,
    -- Slots missed while no gateway ran (over a minute late): 'skip' enqueues the
    -- latest one only when no slot is on time; 'catch_up' the latest catch_up_max
    -- of them, oldest first.
    misfire      text        NOT NULL DEFAULT 'skip',
    catch_up_max integer     NOT NULL DEFAULT 1,
    max_attempts integer,
    enabled      boolean     NOT NULL DEFAULT true,
    -- The earliest slot not yet enqueued. A gateway enqueues a due slot's job (with
    -- the idempotency key "schedule:<name>@<slot>") and advances next_slot in one
    -- transaction, holding the row (FOR UPDATE SKIP LOCKED): one job per slot.
    next_slot    timestamptz,
    last_slot    timestamptz,
    -- Who declared it: 'config' (BROOQ_SCHEDULE_<NAME>, upserted at start) or
    -- 'admin' (schedule_add).
    source       text        NOT NULL DEFAULT 'admin',
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),

    CONSTRAINT schedule_name_format CHECK (
        name ~ '^[a-z0-9][a-z0-9._-]*$' AND octet_length(name) <= 128),
    CONSTRAINT schedule_one_kind CHECK ((cron IS NULL) <> (every_ms IS NULL)),
    CONSTRAINT schedule_every_range CHECK (every_ms BETWEEN 1000 AND 31622400000),
    CONSTRAINT schedule_misfire_known CHECK (misfire IN ('skip', 'catch_up')),
    CONSTRAINT schedule_catch_up_range CHECK (catch_up_max BETWEEN 1 AND 1000),
    CONSTRAINT schedule_max_attempts_range CHECK (max_attempts BETWEEN 1 AND 1000),
    CONSTRAINT schedule_source_known CHECK (source IN ('config', 'admin')),
    CONSTRAINT schedule_next_when_enabled CHECK (NOT enabled OR next_slot IS NOT NULL)
);

-- The scheduler's question every tick: which enabled schedules are due?
CREATE INDEX schedule_due_idx ON schedule (next_slot) WHERE enabled;

-- +goose Down
DROP TABLE schedule;
