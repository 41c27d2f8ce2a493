-- 0005: lease fencing.
--
-- session_leases.generation rises by one each time a session's lease is
-- acquired; a turn's writes carry the generation they were granted and are
-- refused once it is no longer the session's live lease. A released lease
-- keeps its row (no owner, expired) so that the next holder continues the
-- count; a lease taken over that still has an owner was abandoned, and
-- messages_streaming then finds its writer's unfinished replies without
-- scanning the session.

ALTER TABLE session_leases ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;

CREATE INDEX messages_streaming ON messages (session_id) WHERE status = 'streaming';
