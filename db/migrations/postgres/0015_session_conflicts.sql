-- Conflicts a rebase or merge with conflicts "keep" left in a session
-- (issue 23): one row per conflicted path while it is unresolved; detail
-- is the structured conflict with what sessiond wrote (JSON).
CREATE TABLE session_conflicts (
    session_id uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    path       text COLLATE "C" NOT NULL,
    detail     text NOT NULL,
    PRIMARY KEY (session_id, path)
);
-- Remembered resolutions, per repository, under git rerere's conflict id:
-- the normalized conflict (preimage) and the file as it was resolved.
CREATE TABLE rerere_resolutions (
    repo       text COLLATE "C" NOT NULL REFERENCES repos (name),
    id         text NOT NULL,
    preimage   bytea NOT NULL,
    postimage  bytea NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (repo, id)
);
