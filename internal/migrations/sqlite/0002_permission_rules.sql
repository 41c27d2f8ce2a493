-- 0002: per-project permission rules ("always allow" / "always reject").
-- Keyed by project directory, not by session: they outlive sessions.

CREATE TABLE permission_rules (
    cwd        TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    allow      INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (cwd, key)
) STRICT;
