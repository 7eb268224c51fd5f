-- The stats of a changeset's current revision, kept when it was submitted
-- so a view renders no patch: {"files","insertions","deletions"}; empty
-- for a changeset stored before they were kept (computed when read).
ALTER TABLE changesets ADD COLUMN stats text NOT NULL DEFAULT '';
