-- The commands a session ran (every exec, whether it changed files or
-- not), kept for the checks of its changesets: argv, exit code, duration,
-- when it finished, the session's latest mutation when it finished (its
-- own included), whether it changed files, and the tail of its output.
CREATE TABLE runs (
    id          bigserial PRIMARY KEY,
    session_id  uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    argv        jsonb NOT NULL,
    exit_code   integer NOT NULL,
    duration_ms bigint NOT NULL,
    at          timestamptz NOT NULL,
    seq         bigint NOT NULL,
    changed     integer NOT NULL,
    output_tail text NOT NULL
);
CREATE INDEX runs_session ON runs (session_id, id);
-- The commands a repository's accept policy requires to have passed on
-- the revision accepted (repos.Policy.RequiredChecks as JSON).
ALTER TABLE repo_policies ADD COLUMN required_checks text NOT NULL DEFAULT '[]';
