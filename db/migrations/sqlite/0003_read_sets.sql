-- The SQLite form of postgres/0003_read_sets.sql.
CREATE TABLE session_reads (
    session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    path       text NOT NULL,
    blob       text NOT NULL,
    PRIMARY KEY (session_id, path)
) STRICT;
