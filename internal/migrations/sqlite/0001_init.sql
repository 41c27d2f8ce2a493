-- 0001: sessions, messages, compactions.
--
-- Times are INTEGER unix nanoseconds (UTC): exact round trips, cheap keyset
-- ordering. JSON columns are TEXT; NULL means "absent" (a nil slice or nil
-- json.RawMessage), '[]' an empty slice.

CREATE TABLE sessions (
    id         TEXT    NOT NULL PRIMARY KEY,
    cwd        TEXT    NOT NULL DEFAULT '',
    title      TEXT    NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    metadata   TEXT,
    -- last_seq is the highest messages.seq handed out for this session. Bumped
    -- in the same immediate transaction that inserts the messages, so seqs are
    -- gap-free, unique and never reused.
    last_seq   INTEGER NOT NULL DEFAULT 0
) STRICT;

-- ListSessions: newest first, ties broken by id.
CREATE INDEX sessions_updated_at ON sessions (updated_at DESC, id);
CREATE INDEX sessions_cwd_updated_at ON sessions (cwd, updated_at DESC, id);

CREATE TABLE messages (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id        TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq               INTEGER NOT NULL,
    role              TEXT    NOT NULL,
    content           TEXT    NOT NULL DEFAULT '',
    parts             TEXT,
    reasoning         TEXT    NOT NULL DEFAULT '',
    tool_call_id      TEXT    NOT NULL DEFAULT '',
    tool_calls        TEXT,
    status            TEXT    NOT NULL DEFAULT '',
    meta              TEXT,
    is_active         INTEGER NOT NULL DEFAULT 1 CHECK (is_active IN (0, 1)),
    compacted_into_id INTEGER REFERENCES compactions (id) ON DELETE SET NULL,
    token_count       INTEGER NOT NULL DEFAULT 0,
    created_at        INTEGER NOT NULL,
    UNIQUE (session_id, seq)
) STRICT;

-- The model's current context (Messages with ActiveOnly).
CREATE INDEX messages_active ON messages (session_id, seq) WHERE is_active = 1;
-- Foreign-key lookups when a compaction row is deleted.
CREATE INDEX messages_compacted_into_id ON messages (compacted_into_id);

CREATE TABLE compactions (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id         TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    policy             TEXT    NOT NULL,
    compacted_ids      TEXT,
    kept_ids           TEXT,
    tokens_before      INTEGER NOT NULL DEFAULT 0,
    tokens_after       INTEGER NOT NULL DEFAULT 0,
    summary_message_id INTEGER REFERENCES messages (id) ON DELETE SET NULL,
    settings           TEXT,
    created_at         INTEGER NOT NULL
) STRICT;

CREATE INDEX compactions_session_id ON compactions (session_id, id);
-- Foreign-key lookups when a message is deleted.
CREATE INDEX compactions_summary_message_id ON compactions (summary_message_id);
