package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/record"
)

// Rebase moves the session onto a new base (a branch, tag or commit,
// usually its branch after it moved, resolved within the caller's reach:
// ResolveRevision): its changes are re-applied on the new base by
// three-way merge and the overlay becomes that result. A conflict returns
// a *merge.ConflictError and changes nothing.
func (m *Manager) Rebase(ctx context.Context, id uuid.UUID, onto, actor string) (Session, MutationRecord, error) {
	r, err := m.RebaseWith(ctx, id, onto, actor, ConflictsRefuse)
	return r.Session, r.Mutation, err
}

// MoveResult is what a rebase or merge did: the session as it left it,
// its mutation, the conflicts it kept (ConflictsKeep, ConflictsReuse)
// and the paths a remembered resolution resolved (ConflictsReuse).
type MoveResult struct {
	Session   Session
	Mutation  MutationRecord
	Conflicts []KeptConflict
	Reused    []string
}

// RebaseWith is Rebase with a conflicts mode: with ConflictsKeep a
// conflicted rebase still moves the session, each conflicted path left
// as git rebase leaves it (merge.conflictStyle=diff3) and the conflicts
// recorded; ConflictsReuse also applies remembered resolutions. A session
// with unresolved conflicts is not rebased (*UnresolvedError).
func (m *Manager) RebaseWith(ctx context.Context, id uuid.UUID, onto, actor string, mode ConflictsMode) (MoveResult, error) {
	ls, err := m.lockLive(ctx, id)
	if err != nil {
		return MoveResult{}, err
	}
	defer ls.unlock()
	if err := m.recorder.checkWritable(ctx, ls); err != nil {
		return MoveResult{}, err
	}
	if err := m.checkResolved(ctx, ls, "rebase"); err != nil {
		return MoveResult{}, err
	}
	if onto == "" {
		onto = ls.meta.BaseRef
	}
	if onto == "" {
		return MoveResult{}, fmt.Errorf("%w: the session has no base branch; say where to rebase onto", record.ErrInvalid)
	}
	commit, err := m.ResolveRevision(ctx, ls.repo, "rebase onto", onto)
	if err != nil {
		return MoveResult{}, err
	}
	c, err := ls.repo.Commit(ctx, commit)
	if err != nil {
		return MoveResult{}, err
	}
	opts := merge.MergeOptions{
		OursLabel: onto, TheirsLabel: "session " + id.String()[:8], BaseLabel: "base " + ls.meta.BaseCommit.String()[:12],
		Render: true, Diff3: mode != ConflictsRefuse, KeepConflicts: mode != ConflictsRefuse,
	}
	if opts.KeepConflicts {
		opts.OursLabel = keptOursLabel
	}
	res, err := keptOrRefused(opts, func(o merge.MergeOptions) (*merge.MergeResult, error) {
		return merge.Rebase(ctx, ls.repo, ls.baseTree, ls.tree, c.Tree, o)
	})
	if err != nil {
		return MoveResult{}, err
	}
	return m.applyMove(ctx, ls, OpRebase, actor, res, mode, &newBase{commit: commit, tree: c.Tree})
}

// keptOursLabel labels ours in kept conflicts as git rebase and git merge
// do: HEAD, the side the operation is on (the new base in a rebase, this
// session in a merge); it also names files moved aside ("path~HEAD").
const keptOursLabel = "HEAD"

// keptOrRefused runs a merge; when its conflicts cannot be kept as a tree
// (a few directory-rename cases where a kept file and a directory meet),
// it runs it again refusing them, so the answer is the conflicts (409)
// and nothing changes.
func keptOrRefused(opts merge.MergeOptions, run func(merge.MergeOptions) (*merge.MergeResult, error)) (*merge.MergeResult, error) {
	res, err := run(opts)
	if opts.KeepConflicts && errors.Is(err, gitstore.ErrCollision) {
		opts.KeepConflicts = false
		return run(opts)
	}
	return res, err
}

// applyMove makes a rebase's or merge's result the session's view, with
// its kept conflicts. ls.mu must be held.
func (m *Manager) applyMove(ctx context.Context, ls *live, op Op, actor string, res *merge.MergeResult, mode ConflictsMode, nb *newBase) (MoveResult, error) {
	tree, kept, reused, err := m.keepConflicts(ctx, ls, op, res, mode)
	if err != nil {
		return MoveResult{}, err
	}
	rec, err := m.recorder.replaceOverlayKeeping(ctx, ls, op, actorOf(ls, actor), tree, nb, &kept)
	if err != nil {
		return MoveResult{}, err
	}
	return MoveResult{Session: ls.meta, Mutation: rec, Conflicts: visibleConflicts(ls, kept), Reused: reused}, nil
}

// MergeFrom brings another session's changes (its view against its own
// base) into this session's overlay by three-way merge. A conflict returns
// a *merge.ConflictError and changes nothing. The other session is
// read as it is at the start; it is not changed. Every path the merge
// changes must pass the other session's read policy and this session's
// write policy, or the merge is refused (record.ErrForbidden) and changes
// nothing. Whether the caller may read the other session at all is the
// API's to decide (its token). It returns the session as the merge left
// it, with the mutation.
func (m *Manager) MergeFrom(ctx context.Context, id, from uuid.UUID, actor string) (Session, MutationRecord, error) {
	r, err := m.MergeFromWith(ctx, id, from, actor, ConflictsRefuse)
	return r.Session, r.Mutation, err
}

// MergeFromWith is MergeFrom with a conflicts mode, as RebaseWith.
func (m *Manager) MergeFromWith(ctx context.Context, id, from uuid.UUID, actor string, mode ConflictsMode) (MoveResult, error) {
	if id == from {
		return MoveResult{}, fmt.Errorf("%w: a session cannot merge itself", record.ErrInvalid)
	}
	theirs, theirBase, theirPolicy, err := m.readView(ctx, from)
	if err != nil {
		return MoveResult{}, err
	}
	src, err := m.store.GetSession(ctx, from)
	if err != nil {
		return MoveResult{}, err
	}
	ls, err := m.lockLive(ctx, id)
	if err != nil {
		return MoveResult{}, err
	}
	defer ls.unlock()
	if src.Repo != ls.meta.Repo {
		return MoveResult{}, fmt.Errorf("%w: session %s is on repository %q, not %q", record.ErrInvalid, from, src.Repo, ls.meta.Repo)
	}
	if err := m.recorder.checkWritable(ctx, ls); err != nil {
		return MoveResult{}, err
	}
	if err := m.checkResolved(ctx, ls, "merge"); err != nil {
		return MoveResult{}, err
	}
	opts := merge.MergeOptions{
		OursLabel: "session " + id.String()[:8], TheirsLabel: "session " + from.String()[:8], BaseLabel: "base of session " + from.String()[:8],
		Render: true, Diff3: mode != ConflictsRefuse, KeepConflicts: mode != ConflictsRefuse,
	}
	if opts.KeepConflicts {
		opts.OursLabel = keptOursLabel
	}
	res, err := keptOrRefused(opts, func(o merge.MergeOptions) (*merge.MergeResult, error) {
		return merge.Merge(ctx, ls.repo, theirBase, ls.tree, theirs, o)
	})
	if err != nil {
		return MoveResult{}, err
	}
	// What the merge brings in is read from the other session, through
	// its policy; replaceOverlay then holds it to this session's write
	// policy.
	err = merge.WalkChanges(ctx, ls.repo, ls.tree, res.Tree, func(c merge.FileChange) error {
		if err := theirPolicy.checkRead(c.Path()); err != nil {
			return fmt.Errorf("merge from session %s: %w", from, err)
		}
		return nil
	})
	if err != nil {
		return MoveResult{}, err
	}
	return m.applyMove(ctx, ls, OpMerge, actor, res, mode, nil)
}

// readView returns the tree of a session's view, of its base, and its
// policy, read under its lock.
func (m *Manager) readView(ctx context.Context, id uuid.UUID) (tree, base gitstore.OID, pol *policy, err error) {
	ls, err := m.lockLive(ctx, id)
	if err != nil {
		return gitstore.ZeroOID, gitstore.ZeroOID, nil, err
	}
	defer ls.unlock()
	return ls.tree, ls.baseTree, ls.policy, nil
}
