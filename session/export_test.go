package session

import (
	"context"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
)

// TreesForTest returns the session's tree as the engine keeps it
// (incrementally) and as a full rebuild of base plus overlay gives it.
func (m *Manager) TreesForTest(ctx context.Context, id uuid.UUID) (kept, full gitstore.OID, err error) {
	ls, err := m.lockLive(ctx, id)
	if err != nil {
		return gitstore.ZeroOID, gitstore.ZeroOID, err
	}
	defer ls.mu.Unlock()
	full, err = ls.ov.BuildTree(ctx, ls.repo, ls.baseTree)
	return ls.tree, full, err
}

// HoldForTest takes session id's lock (loading it) and returns the
// function that lets it go.
func (m *Manager) HoldForTest(ctx context.Context, id uuid.UUID) (func(), error) {
	ls, err := m.lockLive(ctx, id)
	if err != nil {
		return nil, err
	}
	return ls.mu.Unlock, nil
}

// LoadsForTest is how many times the engine loaded a session from the
// store.
func (m *Manager) LoadsForTest() int64 { return m.loads.Load() }
