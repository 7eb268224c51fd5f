-- The SQLite form of postgres/0009_in_flight.sql.
ALTER TABLE changesets ADD COLUMN accepting text NOT NULL DEFAULT '';
ALTER TABLE layers ADD COLUMN reverting text;
CREATE INDEX changesets_accepting ON changesets (repo, target_branch) WHERE accepting <> '';
CREATE INDEX layers_reverting ON layers (repo, branch) WHERE reverting IS NOT NULL;
