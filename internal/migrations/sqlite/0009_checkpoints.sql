-- 0009: checkpoints of the files a turn changed, and the undo records.
--
-- checkpoint_blobs keeps each content once per session (keyed by its
-- SHA-256), however many turns saved it; deleted with the session.
-- checkpoints has one row per file a turn changed (kind 'file': its state
-- before the turn's first change of it; the first of a turn wins) and one per
-- snapshot of a git work tree (kind 'tree' before the turn's first command,
-- 'tree_after' at its end; hash is the tree's object id in crow-acp's own
-- object store). Rows are ordered by id, the order they were taken in.
-- unrestorable says why the bytes were not kept ('' = kept).
-- after_state is what the agent's write left ('' = not recorded, 'absent',
-- 'file'), so that undo can tell a later change by someone else.
-- undos records each undo: files (JSON) what it did to each file and what
-- was there (for redo); hidden_ids and shown_ids the messages it made
-- inactive and active; last_seq the session's last seq when it finished.

CREATE TABLE checkpoint_blobs (
    session_id TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    hash       TEXT    NOT NULL,
    size       INTEGER NOT NULL,
    data       BLOB    NOT NULL,
    PRIMARY KEY (session_id, hash)
) STRICT;

CREATE TABLE checkpoints (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id   TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    turn         INTEGER NOT NULL,
    kind         TEXT    NOT NULL CHECK (kind IN ('file', 'tree', 'tree_after')),
    path         TEXT    NOT NULL,
    existed      INTEGER NOT NULL CHECK (existed IN (0, 1)),
    mode         INTEGER NOT NULL DEFAULT 0,
    size         INTEGER NOT NULL DEFAULT 0,
    hash         TEXT    NOT NULL DEFAULT '',
    unrestorable TEXT    NOT NULL DEFAULT '',
    after_state  TEXT    NOT NULL DEFAULT '',
    after_mode   INTEGER NOT NULL DEFAULT 0,
    after_hash   TEXT    NOT NULL DEFAULT '',
    created_at   INTEGER NOT NULL
) STRICT;

-- The first checkpoint of a file per turn wins.
CREATE UNIQUE INDEX checkpoints_file ON checkpoints (session_id, turn, path) WHERE kind = 'file';
CREATE INDEX checkpoints_session_turn ON checkpoints (session_id, turn, id);

CREATE TABLE undos (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    from_turn  INTEGER NOT NULL,
    state      TEXT    NOT NULL,
    force      INTEGER NOT NULL DEFAULT 0 CHECK (force IN (0, 1)),
    files      TEXT,
    hidden_ids TEXT,
    shown_ids  TEXT,
    last_seq   INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;

CREATE INDEX undos_session ON undos (session_id, id);
CREATE INDEX undos_unfinished ON undos (state) WHERE state IN ('pending', 'redoing');
