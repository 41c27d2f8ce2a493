-- 0003: compaction records that can be undone, and cached token counts.
--
-- messages.token_encoding names the tokenizer token_count was counted with
-- ('' = not counted): a count is reused only for the same encoding.
-- compactions.added_ids lists every message a compaction inserted (its
-- summary or the markers that replace pruned tool output), so expanding it
-- can hide them again; expanded = 1 while its originals are re-activated.

ALTER TABLE messages ADD COLUMN token_encoding TEXT NOT NULL DEFAULT '';

ALTER TABLE compactions ADD COLUMN added_ids TEXT;
ALTER TABLE compactions ADD COLUMN messages_before INTEGER NOT NULL DEFAULT 0;
ALTER TABLE compactions ADD COLUMN messages_after INTEGER NOT NULL DEFAULT 0;
ALTER TABLE compactions ADD COLUMN expanded INTEGER NOT NULL DEFAULT 0 CHECK (expanded IN (0, 1));
