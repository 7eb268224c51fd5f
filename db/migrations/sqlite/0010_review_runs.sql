-- The SQLite form of postgres/0010_review_runs.sql.
CREATE TABLE runs (
    id          integer PRIMARY KEY AUTOINCREMENT,
    session_id  text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    argv        text NOT NULL,
    exit_code   integer NOT NULL,
    duration_ms integer NOT NULL,
    at          integer NOT NULL,
    seq         integer NOT NULL,
    changed     integer NOT NULL,
    output_tail text NOT NULL
) STRICT;
CREATE INDEX runs_session ON runs (session_id, id);
ALTER TABLE repo_policies ADD COLUMN required_checks text NOT NULL DEFAULT '[]';
