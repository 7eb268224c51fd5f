package session

import (
	"context"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/merge"
)

// SessionDiff is a session's diff: the trees compared and the patch.
type SessionDiff struct {
	From, To gitstore.OID
	Patch    *merge.Patch
}

// Diff compares the session's view with its base (against "" or "base"),
// one of its checkpoints (id, number or commit) or any revision of its
// repository, as AgainstTree resolves against, from the trees
// the engine keeps, so nothing is written for a read. Files the session's
// policy does not let it read, on either side of a rename, are left out
// and the stats summed again without them.
func (m *Manager) Diff(ctx context.Context, id uuid.UUID, against string) (SessionDiff, error) {
	var from gitstore.OID
	if against != "" && against != "base" {
		var err error
		if from, err = m.AgainstTree(ctx, id, against); err != nil {
			return SessionDiff{}, err
		}
	}
	ls, err := m.lockLive(ctx, id)
	if err != nil {
		return SessionDiff{}, err
	}
	to, pol, repo := ls.tree, ls.policy, ls.repo
	if from.IsZero() {
		from = ls.baseTree
	}
	ls.unlock()
	// Trees are immutable: the diff runs outside the session's lock.
	patch, err := merge.Diff(ctx, repo, from, to, merge.DiffOptions{}, merge.PatchOptions{})
	if err != nil {
		return SessionDiff{}, err
	}
	pol.hideUnreadable(patch)
	return SessionDiff{From: from, To: to, Patch: patch}, nil
}

// hideUnreadable drops from patch the files p does not let the session
// read (on either side of a rename) and sums the stats again.
func (p *policy) hideUnreadable(patch *merge.Patch) {
	kept := patch.Files[:0]
	var stats merge.Stats
	for _, f := range patch.Files {
		if (f.OldPath != "" && !p.canRead(f.OldPath)) || (f.NewPath != "" && !p.canRead(f.NewPath)) {
			continue
		}
		kept = append(kept, f)
		stats.Files++
		stats.Insertions += f.Insertions
		stats.Deletions += f.Deletions
	}
	if len(kept) < len(patch.Files) {
		patch.Files, patch.Stats = kept, stats
	}
}
