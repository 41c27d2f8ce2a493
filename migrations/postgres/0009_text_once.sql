-- 0009: a message's text stored once (issue 19). A message_appended or
-- message_updated record whose content is long holds that text outside its
-- JSON, compressed ("\0text\n" bodies), and the message's row no longer
-- holds it: content_at lists the ids of the records (comma-separated)
-- whose text the row's content is then extended by, in order (each record's
-- contentFrom says where its text goes). NULL: content is the whole text,
-- as before.
ALTER TABLE messages ADD COLUMN content_at text;
