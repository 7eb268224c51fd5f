-- What a partial accept took of a changeset and what it left out in the
-- session: {"taken":{files,hunks},"left_out":{files,hunks}}; empty for a
-- changeset accepted whole or not accepted.
ALTER TABLE changesets ADD COLUMN selection text NOT NULL DEFAULT '';
