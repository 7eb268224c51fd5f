package session

import (
	"context"
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
	ls, err := m.lockLive(ctx, id)
	if err != nil {
		return Session{}, MutationRecord{}, err
	}
	defer ls.unlock()
	if err := m.recorder.checkWritable(ctx, ls); err != nil {
		return Session{}, MutationRecord{}, err
	}
	if onto == "" {
		onto = ls.meta.BaseRef
	}
	if onto == "" {
		return Session{}, MutationRecord{}, fmt.Errorf("%w: the session has no base branch; say where to rebase onto", record.ErrInvalid)
	}
	commit, err := m.ResolveRevision(ctx, ls.repo, "rebase onto", onto)
	if err != nil {
		return Session{}, MutationRecord{}, err
	}
	c, err := ls.repo.Commit(ctx, commit)
	if err != nil {
		return Session{}, MutationRecord{}, err
	}
	res, err := merge.Rebase(ctx, ls.repo, ls.baseTree, ls.tree, c.Tree, merge.MergeOptions{OursLabel: onto, TheirsLabel: "session " + id.String()[:8], Render: true})
	if err != nil {
		return Session{}, MutationRecord{}, err
	}
	rec, err := m.recorder.replaceOverlay(ctx, ls, OpRebase, actorOf(ls, actor), res.Tree, &newBase{commit: commit, tree: c.Tree})
	if err != nil {
		return Session{}, MutationRecord{}, err
	}
	return ls.meta, rec, nil
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
	if id == from {
		return Session{}, MutationRecord{}, fmt.Errorf("%w: a session cannot merge itself", record.ErrInvalid)
	}
	theirs, theirBase, theirPolicy, err := m.readView(ctx, from)
	if err != nil {
		return Session{}, MutationRecord{}, err
	}
	src, err := m.store.GetSession(ctx, from)
	if err != nil {
		return Session{}, MutationRecord{}, err
	}
	ls, err := m.lockLive(ctx, id)
	if err != nil {
		return Session{}, MutationRecord{}, err
	}
	defer ls.unlock()
	if src.Repo != ls.meta.Repo {
		return Session{}, MutationRecord{}, fmt.Errorf("%w: session %s is on repository %q, not %q", record.ErrInvalid, from, src.Repo, ls.meta.Repo)
	}
	if err := m.recorder.checkWritable(ctx, ls); err != nil {
		return Session{}, MutationRecord{}, err
	}
	res, err := merge.Merge(ctx, ls.repo, theirBase, ls.tree, theirs, merge.MergeOptions{
		OursLabel: "session " + id.String()[:8], TheirsLabel: "session " + from.String()[:8], Render: true,
	})
	if err != nil {
		return Session{}, MutationRecord{}, err
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
		return Session{}, MutationRecord{}, err
	}
	rec, err := m.recorder.replaceOverlay(ctx, ls, OpMerge, actorOf(ls, actor), res.Tree, nil)
	if err != nil {
		return Session{}, MutationRecord{}, err
	}
	return ls.meta, rec, nil
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
