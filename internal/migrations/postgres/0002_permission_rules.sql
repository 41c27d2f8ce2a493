-- 0002: per-project permission rules ("always allow" / "always reject"), the
-- same version as sqlite/0002. Keyed by project directory, not by session:
-- they outlive sessions.

CREATE TABLE permission_rules (
    cwd        text COLLATE "C" NOT NULL,
    key        text COLLATE "C" NOT NULL,
    allow      boolean     NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (cwd, key)
);
