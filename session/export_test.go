package session

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/record"
)

// TreesForTest returns the session's tree as the engine keeps it
// (incrementally) and as a full rebuild of base plus overlay gives it.
func (m *Manager) TreesForTest(ctx context.Context, id uuid.UUID) (kept, full gitstore.OID, err error) {
	ls, err := m.lockLive(ctx, id)
	if err != nil {
		return gitstore.ZeroOID, gitstore.ZeroOID, err
	}
	defer ls.unlock()
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
	return ls.unlock, nil
}

// LoadsForTest is how many times the engine loaded a session from the
// store.
func (m *Manager) LoadsForTest() int64 { return m.mem.loads.Load() }

// UnloadIdle unloads every loaded session unused for idle or longer, as
// the janitor does, and returns how many it unloaded.
func (m *Manager) UnloadIdle(idle time.Duration) int { return m.mem.UnloadIdle(idle) }

// Exists reports whether p exists in the session's view.
func (m *Manager) Exists(ctx context.Context, id uuid.UUID, p string) (bool, error) {
	_, err := m.Stat(ctx, id, p)
	if errors.Is(err, record.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// ReadSet returns the base blob id of every base file the session read
// (the first read of each path), saving reads not yet in the store.
func (m *Manager) ReadSet(ctx context.Context, id uuid.UUID) (map[string]gitstore.OID, error) {
	ls, err := m.lockLive(ctx, id)
	if err != nil {
		return nil, err
	}
	defer ls.unlock()
	if err := m.mem.flushReads(ctx, ls); err != nil {
		return nil, err
	}
	out := ls.reads.snapshot()
	if out == nil {
		out = map[string]gitstore.OID{}
	}
	return out, nil
}

// GlobPaths returns the files matching pattern, in git order.
func (m *Manager) GlobPaths(ctx context.Context, id uuid.UUID, pattern string) ([]string, error) {
	infos, err := m.ListFiles(ctx, id, ListOptions{Glob: pattern})
	if errors.Is(err, record.ErrNotFound) {
		return nil, nil // the glob's literal prefix does not exist
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, fi := range infos {
		if fi.Type != "dir" {
			out = append(out, fi.Path)
		}
	}
	return out, nil
}

// SetSearchFileHookForTest makes every search call fn before it reads a
// file, until the test ends. Tests that use it must not run in parallel.
func SetSearchFileHookForTest(tb interface{ Cleanup(func()) }, fn func(path string)) {
	searchFileHook = fn
	tb.Cleanup(func() { searchFileHook = nil })
}

// GroupCommitsForTest returns the totals of repository repo's group
// committer (batches committed, mutations in them) and how many
// mutations wait for a batch.
func (m *Manager) GroupCommitsForTest(ctx context.Context, repo string) (batches, items int64, queued int, err error) {
	r, err := m.repos.Open(ctx, repo)
	if err != nil {
		return 0, 0, 0, err
	}
	m.recorder.commits.mu.Lock()
	c := m.recorder.commits.m[r]
	m.recorder.commits.mu.Unlock()
	if c == nil {
		return 0, 0, 0, nil
	}
	batches, items = c.Stats()
	return batches, items, c.Queued(), nil
}
