package session

import (
	"context"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
)

// Observer learns of what the engine committed, in commit order per
// session. The session graph and overlap detection are observers.
//
// Calls happen after the store committed, with the session's lock held:
// an observer must be quick, must not block on other sessions' locks, and
// must not call back into the Manager for the same session. It cannot
// fail the operation; what it needs to report it reports through events.
type Observer interface {
	// Mutated is called after every committed mutation.
	Mutated(ctx context.Context, ev MutationEvent)
	// Closed is called when a session reaches a terminal state.
	Closed(ctx context.Context, s Session)
}

// MutationEvent is one committed mutation as an observer sees it.
type MutationEvent struct {
	Session  Session
	Mutation MutationRecord
	// Changes are the files whose content changed: Old and New are zero
	// for none.
	Changes []FileChange
	// Repo is the session's repository, BaseTree its base tree and Tree the
	// tree of its view after the mutation.
	Repo     *gitstore.Repo
	BaseTree gitstore.OID
	Tree     gitstore.OID
}

func (m *recorder) observeMutation(ctx context.Context, ls *live, rec MutationRecord, changes []change) {
	if m.mutated != nil {
		m.mutated(ctx, ls)
	}
	if len(m.observers) == 0 {
		return
	}
	ev := MutationEvent{Session: ls.meta, Mutation: rec, Repo: ls.repo, BaseTree: ls.baseTree, Tree: ls.tree}
	for _, c := range changes {
		ev.Changes = append(ev.Changes, FileChange{Path: c.path, Old: c.old, New: c.new})
	}
	for _, o := range m.observers {
		o.Mutated(ctx, ev)
	}
}

func (m *recorder) observeClosed(ctx context.Context, s Session) {
	for _, o := range m.observers {
		o.Closed(ctx, s)
	}
}

// Tree returns the tree of the session's current view and of its base.
func (m *Manager) Tree(ctx context.Context, id uuid.UUID) (tree, base gitstore.OID, err error) {
	ls, err := m.lockLive(ctx, id)
	if err != nil {
		return gitstore.ZeroOID, gitstore.ZeroOID, err
	}
	defer ls.unlock()
	return ls.tree, ls.baseTree, nil
}
