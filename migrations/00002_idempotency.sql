-- SPDX-License-Identifier: MIT
-- Idempotency: one job per (topic, key) for the whole life of the row (invariant 8).

-- +goose Up
-- NULL keys are never deduplicated: a unique index ignores NULLs, and the
-- partial predicate keeps the index to keyed rows only.
CREATE UNIQUE INDEX job_idempotency_uq ON job (topic, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- +goose Down
DROP INDEX job_idempotency_uq;
