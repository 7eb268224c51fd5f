-- The read set of each session: the base blob of every base file it read,
-- so that an accept can tell when something it read has since changed,
-- also after a restart.
CREATE TABLE session_reads (
    session_id uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    path       text COLLATE "C" NOT NULL,
    blob       text NOT NULL,
    PRIMARY KEY (session_id, path)
);
