-- The SQLite form of postgres/0015_session_conflicts.sql.
CREATE TABLE session_conflicts (
    session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    path       text NOT NULL,
    detail     text NOT NULL,
    PRIMARY KEY (session_id, path)
) STRICT;
CREATE TABLE rerere_resolutions (
    repo       text NOT NULL REFERENCES repos (name),
    id         text NOT NULL,
    preimage   blob NOT NULL,
    postimage  blob NOT NULL,
    created_at integer NOT NULL,
    PRIMARY KEY (repo, id)
) STRICT;
