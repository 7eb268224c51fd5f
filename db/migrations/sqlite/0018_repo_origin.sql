-- A repository registered from a git remote: its origin URL (no
-- credentials; those come from git's environment). Each node keeps its
-- own clone under its data directory, so such a repository's path is
-- empty here: it is not one place for every node.
ALTER TABLE repos ADD COLUMN origin text NOT NULL DEFAULT '';
