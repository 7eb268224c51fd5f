-- The SQLite form of postgres/0002_changeset_revisions.sql.

ALTER TABLE changesets ADD COLUMN revision integer NOT NULL DEFAULT 0;
ALTER TABLE changesets ADD COLUMN read_set text NOT NULL DEFAULT '{}';
ALTER TABLE reviews ADD COLUMN revision integer NOT NULL DEFAULT 0;

CREATE TABLE repo_policies (
    repo               text PRIMARY KEY REFERENCES repos (name),
    required_approvals integer NOT NULL,
    allow_checked_out  integer NOT NULL,
    refuse_stale_reads integer NOT NULL
) STRICT;
