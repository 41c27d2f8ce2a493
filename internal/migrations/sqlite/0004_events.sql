-- 0004: the event log, connections and session leases (durability).
--
-- events is append-only: a trigger refuses updates. Rows leave it only when
-- their session is deleted or through the retention option (frame events
-- older than a cut-off; lifecycle and projection events are kept).

CREATE TABLE connections (
    id         TEXT    NOT NULL PRIMARY KEY,
    pid        INTEGER NOT NULL,
    host       TEXT    NOT NULL,
    started_at INTEGER NOT NULL
) STRICT;

-- One row per stream (a session id or a connection id): the seq counter, so
-- seqs stay gap-free and are never reused even after pruning.
CREATE TABLE event_streams (
    stream    TEXT    NOT NULL PRIMARY KEY,
    last_seq  INTEGER NOT NULL DEFAULT 0,
    last_turn INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE TABLE events (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    stream        TEXT    NOT NULL,
    seq           INTEGER NOT NULL,
    connection_id TEXT    NOT NULL DEFAULT '',
    at            INTEGER NOT NULL,
    direction     TEXT    NOT NULL DEFAULT '',
    turn          INTEGER NOT NULL DEFAULT 0,
    kind          TEXT    NOT NULL,
    method        TEXT    NOT NULL DEFAULT '',
    body          BLOB    NOT NULL,
    UNIQUE (stream, seq)
) STRICT;

-- Retention prunes frames by time.
CREATE INDEX events_at ON events (at) WHERE direction <> '';

CREATE TRIGGER events_append_only BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are append-only');
END;

CREATE TABLE session_leases (
    session_id   TEXT    NOT NULL PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    owner        TEXT    NOT NULL,
    pid          INTEGER NOT NULL,
    host         TEXT    NOT NULL,
    acquired_at  INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL
) STRICT;

CREATE INDEX session_leases_owner ON session_leases (owner);

-- Deleting a session (an explicit user action) takes its events with it.
CREATE TRIGGER sessions_delete_events AFTER DELETE ON sessions
BEGIN
    DELETE FROM events WHERE stream = OLD.id;
    DELETE FROM event_streams WHERE stream = OLD.id;
END;
