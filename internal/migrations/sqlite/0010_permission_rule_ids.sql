-- 0010: permission rules get a stable id (what `crow-acp permissions revoke`
-- names) and the session they were granted in ('' for rules granted before
-- this version: unknown). SQLite cannot add a primary key to a table, so the
-- table is rebuilt; AUTOINCREMENT keeps a revoked rule's id from being
-- handed to a later rule. Existing rules are numbered oldest first.

CREATE TABLE permission_rules_0010 (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    cwd        TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    allow      INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    session_id TEXT    NOT NULL DEFAULT '',
    UNIQUE (cwd, key)
) STRICT;

INSERT INTO permission_rules_0010 (cwd, key, allow, created_at)
    SELECT cwd, key, allow, created_at FROM permission_rules ORDER BY created_at, cwd, key;

DROP TABLE permission_rules;
ALTER TABLE permission_rules_0010 RENAME TO permission_rules;
