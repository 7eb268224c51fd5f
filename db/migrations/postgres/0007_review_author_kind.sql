-- Who vouches for a review's author: reviewer (a reviewer token), local
-- (the local user of a daemon without an admin token), asserted (a name
-- the admin token gave: the review counts as a comment) or session (the
-- changeset's own session); empty for a review stored before it was kept.
ALTER TABLE reviews ADD COLUMN author_kind text NOT NULL DEFAULT '';
