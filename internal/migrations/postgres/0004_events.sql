-- 0004: the event log, connections and session leases (durability); the
-- same version as sqlite/0004.
--
-- events is append-only: a trigger refuses updates. Rows leave it only when
-- their session is deleted or through the retention option (frame events
-- older than a cut-off; lifecycle and projection events are kept).

CREATE TABLE connections (
    id         text COLLATE "C" NOT NULL PRIMARY KEY,
    pid        bigint      NOT NULL,
    host       text        NOT NULL,
    started_at timestamptz NOT NULL
);

-- One row per stream (a session id or a connection id): the seq counter. The
-- upsert that bumps it locks the row, so seqs are gap-free, in commit order,
-- and never reused even after pruning.
CREATE TABLE event_streams (
    stream    text COLLATE "C" NOT NULL PRIMARY KEY,
    last_seq  bigint NOT NULL DEFAULT 0,
    last_turn bigint NOT NULL DEFAULT 0
);

CREATE TABLE events (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    stream        text COLLATE "C" NOT NULL,
    seq           bigint      NOT NULL,
    connection_id text        NOT NULL DEFAULT '',
    at            timestamptz NOT NULL,
    direction     text        NOT NULL DEFAULT '',
    turn          bigint      NOT NULL DEFAULT 0,
    kind          text        NOT NULL,
    method        text        NOT NULL DEFAULT '',
    body          bytea       NOT NULL,
    UNIQUE (stream, seq)
);

CREATE INDEX events_at ON events (at) WHERE direction <> '';

CREATE FUNCTION events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'events are append-only';
END $$;

CREATE TRIGGER events_append_only BEFORE UPDATE ON events
    FOR EACH ROW EXECUTE FUNCTION events_append_only();

CREATE TABLE session_leases (
    session_id   text COLLATE "C" NOT NULL PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    owner        text        NOT NULL,
    pid          bigint      NOT NULL,
    host         text        NOT NULL,
    acquired_at  timestamptz NOT NULL,
    heartbeat_at timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL
);

CREATE INDEX session_leases_owner ON session_leases (owner);

-- Deleting a session (an explicit user action) takes its events with it.
CREATE FUNCTION sessions_delete_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM events WHERE stream = OLD.id;
    DELETE FROM event_streams WHERE stream = OLD.id;
    RETURN OLD;
END $$;

CREATE TRIGGER sessions_delete_events AFTER DELETE ON sessions
    FOR EACH ROW EXECUTE FUNCTION sessions_delete_events();
