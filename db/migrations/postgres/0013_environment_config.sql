-- A repository's environment configuration set through the API (issue
-- 22): setup, key, include and auto as one JSON object; '' when none is
-- set (the file at the base commit, or the defaults, apply).
ALTER TABLE repo_environments ADD COLUMN config text NOT NULL DEFAULT '';
