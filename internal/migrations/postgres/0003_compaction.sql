-- 0003: compaction records that can be undone, and cached token counts (the
-- same version as sqlite/0003).
--
-- messages.token_encoding names the tokenizer token_count was counted with
-- ('' = not counted). compactions.added_ids lists every message a
-- compaction inserted (its summary, markers replacing pruned tool output);
-- expanded is true while its originals are re-activated.

ALTER TABLE messages ADD COLUMN token_encoding text NOT NULL DEFAULT '';

ALTER TABLE compactions ADD COLUMN added_ids bigint[];
ALTER TABLE compactions ADD COLUMN messages_before bigint NOT NULL DEFAULT 0;
ALTER TABLE compactions ADD COLUMN messages_after bigint NOT NULL DEFAULT 0;
ALTER TABLE compactions ADD COLUMN expanded boolean NOT NULL DEFAULT false;
