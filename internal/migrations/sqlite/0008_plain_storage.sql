-- 0008: the event log after 0.1.0 (issue 30). Events name their stream
-- and connection by number: each row held the session's id and the
-- connection's id as text, 74 bytes of every event and 37 again in the
-- (stream, seq) index, more than a streamed turn's text. event_streams now
-- numbers every stream and every connection (a connection with no stream
-- yet gets a row with no events); events refer to those numbers. The table
-- is rebuilt with its ids unchanged and its AUTOINCREMENT counter carried
-- over, so no id is ever given twice. Bodies are kept as they are: a
-- message's text stays whole in its row, records are JSON, and frame
-- bodies are those 0.1.0 wrote (plain, or a run DEFLATE-packed), which
-- this version reads. Builds between 0.1.0 and this one recorded versions
-- 8 to 10 for formats that were never released: such a database is
-- refused (sqlcore.Migrate), never migrated here.

DROP TRIGGER sessions_delete_events;

-- AUTOINCREMENT: a deleted session's number is never given to another
-- stream, so nothing can come to name the wrong one.
CREATE TABLE event_streams_new (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    stream    TEXT    NOT NULL UNIQUE,
    last_seq  INTEGER NOT NULL DEFAULT 0,
    last_turn INTEGER NOT NULL DEFAULT 0
) STRICT;

INSERT INTO event_streams_new (stream, last_seq, last_turn)
SELECT stream, last_seq, last_turn FROM event_streams ORDER BY stream;

-- Streams and connections that events name without a counter row (none
-- that crow-acp wrote; a hand-edited database may have them).
INSERT INTO event_streams_new (stream, last_seq, last_turn)
SELECT stream, MAX(seq), MAX(turn) FROM events
WHERE stream NOT IN (SELECT stream FROM event_streams)
GROUP BY stream ORDER BY stream;
INSERT INTO event_streams_new (stream)
SELECT DISTINCT connection_id FROM events
WHERE connection_id <> '' AND connection_id NOT IN (SELECT stream FROM event_streams_new)
ORDER BY connection_id;

-- connection_stream_id 0: no connection (events a command wrote).
CREATE TABLE events_new (
    id                   INTEGER PRIMARY KEY AUTOINCREMENT,
    stream_id            INTEGER NOT NULL,
    seq                  INTEGER NOT NULL,
    connection_stream_id INTEGER NOT NULL DEFAULT 0,
    at                   INTEGER NOT NULL,
    direction            TEXT    NOT NULL DEFAULT '',
    turn                 INTEGER NOT NULL DEFAULT 0,
    kind                 TEXT    NOT NULL,
    method               TEXT    NOT NULL DEFAULT '',
    body                 BLOB    NOT NULL,
    UNIQUE (stream_id, seq)
) STRICT;

INSERT INTO events_new (id, stream_id, seq, connection_stream_id, at, direction, turn, kind, method, body)
SELECT e.id, s.id, e.seq, COALESCE(c.id, 0), e.at, e.direction, e.turn, e.kind, e.method, e.body
FROM events e
JOIN event_streams_new s ON s.stream = e.stream
LEFT JOIN event_streams_new c ON c.stream = e.connection_id AND e.connection_id <> ''
ORDER BY e.id;

-- The counter: the largest id ever given, which pruning may have deleted.
-- Inserting the ids set events_new's to the largest one copied.
UPDATE sqlite_sequence SET seq = (SELECT MAX(seq) FROM sqlite_sequence WHERE name IN ('events', 'events_new'))
WHERE name = 'events_new';
INSERT INTO sqlite_sequence (name, seq)
SELECT 'events_new', seq FROM sqlite_sequence
WHERE name = 'events' AND NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'events_new');

DROP TABLE events;
DROP TABLE event_streams;
ALTER TABLE events_new RENAME TO events;
ALTER TABLE event_streams_new RENAME TO event_streams;

CREATE INDEX events_at ON events (at) WHERE direction <> '';

CREATE TRIGGER events_append_only BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are append-only');
END;

CREATE TRIGGER sessions_delete_events AFTER DELETE ON sessions
BEGIN
    DELETE FROM events WHERE stream_id = (SELECT id FROM event_streams WHERE stream = OLD.id);
    DELETE FROM event_streams WHERE stream = OLD.id;
END;
