-- 0010: permission rules get a stable id (what `crow-acp permissions revoke`
-- names) and the session they were granted in ('' for rules granted before
-- this version: unknown), the same version as sqlite/0010. An identity never
-- hands a revoked rule's id to a later rule. (cwd, key) stays the primary key.

ALTER TABLE permission_rules ADD COLUMN session_id text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE permission_rules ADD COLUMN id bigint GENERATED ALWAYS AS IDENTITY;
ALTER TABLE permission_rules ADD CONSTRAINT permission_rules_id_key UNIQUE (id);
