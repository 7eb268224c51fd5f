-- Changesets for issue 6: a changeset is revised in place when its session
-- is submitted again (revision counts the submissions; each review records
-- the revision it looked at, so the history stays and the status follows
-- the current revision); the read set of the session is kept with the
-- changeset, for the stale-read check at accept; and a per-repository
-- accept policy.

ALTER TABLE changesets ADD COLUMN revision integer NOT NULL DEFAULT 0;
ALTER TABLE changesets ADD COLUMN read_set jsonb NOT NULL DEFAULT '{}';
ALTER TABLE reviews ADD COLUMN revision integer NOT NULL DEFAULT 0;

CREATE TABLE repo_policies (
    repo               text COLLATE "C" PRIMARY KEY REFERENCES repos (name),
    required_approvals integer NOT NULL,
    allow_checked_out  integer NOT NULL,
    refuse_stale_reads integer NOT NULL
);
