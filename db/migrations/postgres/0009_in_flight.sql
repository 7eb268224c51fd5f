-- Accepts and undos in flight, recorded before the branch moves and
-- cleared by the transaction that records them, so that after a crash
-- startup knows which commit to look for on which branch.
-- changesets.accepting: {"commit","revision","rebased","selection",
-- "stale_reads"}; empty when no accept of the changeset is in flight.
ALTER TABLE changesets ADD COLUMN accepting text NOT NULL DEFAULT '';
-- layers.reverting: the revert commit of an undo in flight; NULL when none.
ALTER TABLE layers ADD COLUMN reverting text;
CREATE INDEX changesets_accepting ON changesets (repo, target_branch) WHERE accepting <> '';
CREATE INDEX layers_reverting ON layers (repo, branch) WHERE reverting IS NOT NULL;
