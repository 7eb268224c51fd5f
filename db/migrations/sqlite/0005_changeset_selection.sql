-- The SQLite form of postgres/0005_changeset_selection.sql.
ALTER TABLE changesets ADD COLUMN selection text NOT NULL DEFAULT '';
