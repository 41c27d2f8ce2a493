-- 0009: checkpoints of the files a turn changed, and the undo records (the
-- same version as sqlite/0009, which says what each column means).

CREATE TABLE checkpoint_blobs (
    session_id text COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    hash       text COLLATE "C" NOT NULL,
    size       bigint NOT NULL,
    data       bytea  NOT NULL,
    PRIMARY KEY (session_id, hash)
);

CREATE TABLE checkpoints (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id   text COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    turn         bigint  NOT NULL,
    kind         text    NOT NULL CHECK (kind IN ('file', 'tree', 'tree_after')),
    path         text COLLATE "C" NOT NULL,
    existed      boolean NOT NULL,
    mode         bigint  NOT NULL DEFAULT 0,
    size         bigint  NOT NULL DEFAULT 0,
    hash         text    NOT NULL DEFAULT '',
    unrestorable text    NOT NULL DEFAULT '',
    after_state  text    NOT NULL DEFAULT '',
    after_mode   bigint  NOT NULL DEFAULT 0,
    after_hash   text    NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL
);

CREATE UNIQUE INDEX checkpoints_file ON checkpoints (session_id, turn, path) WHERE kind = 'file';
CREATE INDEX checkpoints_session_turn ON checkpoints (session_id, turn, id);

CREATE TABLE undos (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id text COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    from_turn  bigint  NOT NULL,
    state      text    NOT NULL,
    force      boolean NOT NULL DEFAULT false,
    files      text,
    hidden_ids bigint[],
    shown_ids  bigint[],
    last_seq   bigint  NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);

CREATE INDEX undos_session ON undos (session_id, id);
CREATE INDEX undos_unfinished ON undos (state) WHERE state IN ('pending', 'redoing');
