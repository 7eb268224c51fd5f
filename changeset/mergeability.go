package changeset

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/merge"
)

// Mergeability is whether a changeset's current revision would merge onto
// its target branch as the branch is now: what an accept would find
// before anyone presses it. It is a dry run of the merge only (not of the
// votes, checks or policies an accept also holds it to).
type Mergeability struct {
	Changeset uuid.UUID
	Revision  int
	Branch    string
	// BranchHead is the branch's commit the answer is for; zero when the
	// branch does not exist yet (the accept creates it on the base).
	BranchHead gitstore.OID
	// Rebased says the branch moved since the base, so an accept merges
	// onto it (false: the accept's commit is the revision on the base).
	Rebased bool
	// Clean is false when the merge conflicts; Conflicts names each path.
	Clean     bool
	Conflicts []merge.Conflict
}

// mergeCache keeps merge answers by the objects they were computed from,
// which never change: a key is the repository, the revision's base and
// head, and the branch's head.
type mergeCache struct {
	mu sync.Mutex // guards m
	m  map[mergeKey]mergeAnswer
}

type mergeKey struct {
	repo             string
	base, head, onto gitstore.OID
}

type mergeAnswer struct {
	clean     bool
	conflicts []merge.Conflict
}

// mergeCacheSize bounds the cache; past it the cache starts again (the
// answers are cheap to recompute, and a page asks about few heads).
const mergeCacheSize = 512

func (mc *mergeCache) get(k mergeKey) (mergeAnswer, bool) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	a, ok := mc.m[k]
	return a, ok
}

func (mc *mergeCache) put(k mergeKey, a mergeAnswer) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if mc.m == nil || len(mc.m) >= mergeCacheSize {
		mc.m = map[mergeKey]mergeAnswer{}
	}
	mc.m[k] = a
}

// Mergeability answers whether the changeset's current revision merges
// onto its target branch's current head, from a cache per (base, head,
// branch head): asking again while neither moved costs a ref read.
func (s *Service) Mergeability(ctx context.Context, id uuid.UUID) (Mergeability, error) {
	c, err := s.Get(ctx, id)
	if err != nil {
		return Mergeability{}, err
	}
	r, err := s.openChangeset(ctx, c)
	if err != nil {
		return Mergeability{}, err
	}
	head, err := r.ReadRef(ctx, gitstore.BranchRef(c.TargetBranch))
	if err != nil && !errors.Is(err, gitstore.ErrNotFound) {
		return Mergeability{}, fmt.Errorf("changeset %s mergeability: %w", id, err)
	}
	out := Mergeability{Changeset: c.ID, Revision: c.Revision, Branch: c.TargetBranch, BranchHead: head, Clean: true}
	if head.IsZero() || head == c.BaseCommit {
		return out, nil
	}
	out.Rebased = true
	k := mergeKey{repo: c.Repo, base: c.BaseCommit, head: c.HeadCommit, onto: head}
	a, ok := s.merges.get(k)
	if !ok {
		hc, err := r.Commit(ctx, c.HeadCommit)
		if err != nil {
			return Mergeability{}, fmt.Errorf("changeset %s head: %w", id, err)
		}
		_, err = merge.Rebase(ctx, r, c.BaseCommit, hc.Tree, head, merge.MergeOptions{OursLabel: c.TargetBranch, TheirsLabel: "changeset " + id.String()[:8]})
		var ce *merge.ConflictError
		switch {
		case errors.As(err, &ce):
			a = mergeAnswer{conflicts: ce.Conflicts}
		case err != nil:
			return Mergeability{}, fmt.Errorf("changeset %s mergeability: %w", id, err)
		default:
			a = mergeAnswer{clean: true}
		}
		s.merges.put(k, a)
	}
	out.Clean, out.Conflicts = a.clean, a.conflicts
	return out, nil
}
