-- 0008: the event log after 0.1.0 (issue 30); the same version as
-- sqlite/0008. Events name their stream and connection by number: each row
-- held the session's id and the connection's id as text, 76 bytes of every
-- event and 38 again in the (stream, seq) index. event_streams now numbers
-- every stream and every connection (a connection with no stream yet gets
-- a row with no events); events refer to those numbers. The table is
-- rebuilt with its ids unchanged and its identity counter carried over, so
-- no id is ever given twice. Its columns are ordered so that no padding
-- falls between them. Bodies are kept as they are (see sqlite/0008).

DROP TRIGGER sessions_delete_events ON sessions;

ALTER TABLE event_streams ADD COLUMN id bigint GENERATED ALWAYS AS IDENTITY;
ALTER TABLE event_streams ADD CONSTRAINT event_streams_id_key UNIQUE (id);

-- Streams and connections that events name without a counter row (none
-- that crow-acp wrote; a hand-edited database may have them).
INSERT INTO event_streams (stream, last_seq, last_turn)
SELECT stream, MAX(seq), MAX(turn) FROM events
WHERE stream NOT IN (SELECT stream FROM event_streams)
GROUP BY stream ORDER BY stream;
INSERT INTO event_streams (stream)
SELECT DISTINCT connection_id FROM events
WHERE connection_id <> '' AND connection_id NOT IN (SELECT stream FROM event_streams)
ORDER BY connection_id;

-- connection_stream_id 0: no connection (events a command wrote).
CREATE TABLE events_new (
    id                   bigint GENERATED ALWAYS AS IDENTITY,
    stream_id            bigint      NOT NULL,
    seq                  bigint      NOT NULL,
    connection_stream_id bigint      NOT NULL DEFAULT 0,
    at                   timestamptz NOT NULL,
    turn                 bigint      NOT NULL DEFAULT 0,
    direction            text        NOT NULL DEFAULT '',
    kind                 text        NOT NULL,
    method               text        NOT NULL DEFAULT '',
    body                 bytea       NOT NULL
);

INSERT INTO events_new (id, stream_id, seq, connection_stream_id, at, turn, direction, kind, method, body)
OVERRIDING SYSTEM VALUE
SELECT e.id, s.id, e.seq, COALESCE(c.id, 0), e.at, e.turn, e.direction, e.kind, e.method, e.body
FROM events e
JOIN event_streams s ON s.stream = e.stream
LEFT JOIN event_streams c ON c.stream = e.connection_id AND e.connection_id <> ''
ORDER BY e.id;

-- The counter: past the largest id ever given, which pruning may have
-- deleted.
SELECT setval(pg_get_serial_sequence('events_new', 'id'), GREATEST(n, 1), n > 0)
FROM (SELECT GREATEST(
    COALESCE(pg_sequence_last_value(pg_get_serial_sequence('events', 'id')::regclass), 0),
    COALESCE((SELECT MAX(id) FROM events), 0)) AS n) AS last;

DROP TABLE events;
ALTER TABLE events_new RENAME TO events;
ALTER SEQUENCE events_new_id_seq RENAME TO events_id_seq;
ALTER TABLE events ADD PRIMARY KEY (id);
ALTER TABLE events ADD UNIQUE (stream_id, seq);

CREATE INDEX events_at ON events (at) WHERE direction <> '';

CREATE TRIGGER events_append_only BEFORE UPDATE ON events
    FOR EACH ROW EXECUTE FUNCTION events_append_only();

CREATE OR REPLACE FUNCTION sessions_delete_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM events WHERE stream_id = (SELECT id FROM event_streams WHERE stream = OLD.id);
    DELETE FROM event_streams WHERE stream = OLD.id;
    RETURN OLD;
END $$;

CREATE TRIGGER sessions_delete_events AFTER DELETE ON sessions
    FOR EACH ROW EXECUTE FUNCTION sessions_delete_events();
