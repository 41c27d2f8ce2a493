-- 0008: the storage format of issue 19, without a table change. Rows written
-- from this version on may hold what older binaries cannot read: a prompt's
-- parts stored as "content" (the text is in content), projection records and
-- frame runs DEFLATE-packed or as differences ("\0deflate\n", "\0frames\n",
-- "\0frames+record\n": against the record saved after them),
-- messages_changed as patches, message_updated as what was appended, and a
-- session/load as one session_loaded event holding its frames. Recorded as a
-- version so that an older crow-acp refuses the database ("schema version 8
-- is newer than this binary supports") instead of failing on those rows.
SELECT 1;
