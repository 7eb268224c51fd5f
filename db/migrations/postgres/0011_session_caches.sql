-- Tool caches of a session: "" (shared, the default) or "private" (issue 22).
ALTER TABLE sessions ADD COLUMN caches text NOT NULL DEFAULT '';
