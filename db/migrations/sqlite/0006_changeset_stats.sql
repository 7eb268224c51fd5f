-- The SQLite form of postgres/0006_changeset_stats.sql.
ALTER TABLE changesets ADD COLUMN stats text NOT NULL DEFAULT '';
