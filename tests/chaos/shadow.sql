-- SPDX-License-Identifier: MIT
-- The chaos test's recorder, installed in its own database after the migrations: every
-- change of a job's lease or outcome, written by a trigger in the same transaction as
-- the change itself (so a crash keeps both or neither). The checker (check.sql) finds
-- an outcome written twice from it. Heartbeats (processing -> processing, same lease)
-- are not recorded.
--   claim     a new lease: pending/failed -> processing (token = the new lease)
--   exit      a lease ends: processing -> anything else (settle, reap, cancel, and the
--             gateway's own unclaim of a claim whose reply it could not deliver, which
--             gives the attempt back), or replaced by another (token = the lease that
--             ended)
--   terminal  a write of done/dead/canceled (token = the lease it ended, if any)

CREATE TABLE chaos_transition (
    seq       bigserial   PRIMARY KEY,
    id        bigint      NOT NULL,
    kind      text        NOT NULL,
    token     uuid,
    old_attempts integer  NOT NULL,
    attempts  integer     NOT NULL,
    old_state text        NOT NULL,
    new_state text        NOT NULL,
    at        timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE FUNCTION chaos_record() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.state = 'processing' AND
       (NEW.state <> 'processing' OR NEW.lease_token IS DISTINCT FROM OLD.lease_token) THEN
        INSERT INTO chaos_transition (id, kind, token, old_attempts, attempts, old_state, new_state)
        VALUES (OLD.id, 'exit', OLD.lease_token, OLD.attempts, NEW.attempts, OLD.state, NEW.state);
    END IF;
    IF NEW.state = 'processing' AND NEW.lease_token IS DISTINCT FROM OLD.lease_token THEN
        INSERT INTO chaos_transition (id, kind, token, old_attempts, attempts, old_state, new_state)
        VALUES (NEW.id, 'claim', NEW.lease_token, OLD.attempts, NEW.attempts, OLD.state, NEW.state);
    END IF;
    IF NEW.state IN ('done', 'dead', 'canceled') THEN
        INSERT INTO chaos_transition (id, kind, token, old_attempts, attempts, old_state, new_state)
        VALUES (NEW.id, 'terminal', OLD.lease_token, OLD.attempts, NEW.attempts, OLD.state, NEW.state);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER chaos_record AFTER UPDATE ON job
    FOR EACH ROW EXECUTE FUNCTION chaos_record();
