-- 0001: sessions, messages, compactions (the same version as sqlite/0001).
--
-- Times are timestamptz: PostgreSQL keeps microseconds, so the store
-- truncates every time it writes to the microsecond and hands the truncated
-- value back. JSON columns are json, not jsonb: the agent's opaque metadata
-- comes back byte for byte. NULL means "absent" (a nil slice or nil
-- json.RawMessage), '[]' / '{}' an empty one. Text that is compared or
-- ordered uses COLLATE "C" so that order and equality are bytewise, as in
-- SQLite, whatever the database's locale.

CREATE TABLE sessions (
    id         text COLLATE "C" NOT NULL PRIMARY KEY,
    cwd        text COLLATE "C" NOT NULL DEFAULT '',
    title      text        NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    metadata   json,
    -- last_seq is the highest messages.seq handed out for this session. It is
    -- bumped by the UPDATE that locks the session row in the transaction that
    -- inserts the messages, so seqs are gap-free, unique and never reused.
    last_seq   bigint      NOT NULL DEFAULT 0
);

-- ListSessions: newest first, ties broken by id.
CREATE INDEX sessions_updated_at ON sessions (updated_at DESC, id);
CREATE INDEX sessions_cwd_updated_at ON sessions (cwd, updated_at DESC, id);

CREATE TABLE compactions (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id         text COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    policy             text        NOT NULL,
    compacted_ids      bigint[],
    kept_ids           bigint[],
    tokens_before      bigint      NOT NULL DEFAULT 0,
    tokens_after       bigint      NOT NULL DEFAULT 0,
    summary_message_id bigint,
    settings           json,
    created_at         timestamptz NOT NULL
);

CREATE INDEX compactions_session_id ON compactions (session_id, id);

CREATE TABLE messages (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id        text COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq               bigint      NOT NULL,
    role              text        NOT NULL,
    content           text        NOT NULL DEFAULT '',
    parts             json,
    reasoning         text        NOT NULL DEFAULT '',
    tool_call_id      text        NOT NULL DEFAULT '',
    tool_calls        json,
    status            text        NOT NULL DEFAULT '',
    meta              json,
    is_active         boolean     NOT NULL DEFAULT true,
    compacted_into_id bigint REFERENCES compactions (id) ON DELETE SET NULL,
    token_count       bigint      NOT NULL DEFAULT 0,
    created_at        timestamptz NOT NULL,
    UNIQUE (session_id, seq)
);

-- The model's current context (Messages with ActiveOnly).
CREATE INDEX messages_active ON messages (session_id, seq) WHERE is_active;
-- Foreign-key lookups when a compaction row is deleted.
CREATE INDEX messages_compacted_into_id ON messages (compacted_into_id);

ALTER TABLE compactions ADD FOREIGN KEY (summary_message_id)
    REFERENCES messages (id) ON DELETE SET NULL;
-- Foreign-key lookups when a message is deleted.
CREATE INDEX compactions_summary_message_id ON compactions (summary_message_id);
