-- 0006: remove "always" rules that name no program ("command:"), which the
-- old first-word matcher created for lines starting with a shell
-- metacharacter, such as "(cd sub && ls)"; they approved any line that
-- started with one. Rules are now keyed on parsed commands and never empty.

DELETE FROM permission_rules WHERE key LIKE 'command:%' AND trim(substr(key, 9)) = '';
