package cluster

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// memObjects is an ObjectTx in memory (the store's SQL is tested in
// package db on both stores).
type memObjects struct {
	mu   sync.Mutex
	objs map[gitstore.OID]gitstore.RawObject
	puts int
}

func (m *memObjects) MissingObjects(_ context.Context, _ string, ids []gitstore.OID) ([]gitstore.OID, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []gitstore.OID
	for _, id := range ids {
		if _, ok := m.objs[id]; !ok {
			out = append(out, id)
		}
	}
	return out, nil
}

func (m *memObjects) PutObjects(_ context.Context, _ string, objs []gitstore.RawObject) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, o := range objs {
		m.objs[o.ID] = o
		m.puts++
	}
	return nil
}

func (m *memObjects) GetObjects(_ context.Context, _ string, ids []gitstore.OID) ([]gitstore.RawObject, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []gitstore.RawObject
	for _, id := range ids {
		if o, ok := m.objs[id]; ok {
			out = append(out, o)
		}
	}
	return out, nil
}

// clone is a bare clone of origin (all its objects, none of what is
// written there later), opened.
func clone(t *testing.T, origin string) (string, *gitstore.Repo) {
	dir := filepath.Join(t.TempDir(), "clone.git")
	testrepo.Git(t, "", "clone", "-q", "--bare", origin, dir)
	r, err := gitstore.Open(dir)
	require.NoError(t, err)
	return dir, r
}

// TestObjectsSaveAndFill: a commit written in one repository (a new
// blob, a new tree on the base's) is saved to the store and filled into
// another clone of the base, whole and fsck-clean; an object the store
// lacks is ErrMissingObject and nothing is written.
func TestObjectsSaveAndFill(t *testing.T) {
	ctx := t.Context()
	originDir := testrepo.BuildBare(t, "small")
	_, a := clone(t, originDir)
	main, err := a.ResolveRevision(ctx, "main")
	require.NoError(t, err)
	mc, err := a.Commit(ctx, main)
	require.NoError(t, err)
	base, err := a.Tree(ctx, mc.Tree)
	require.NoError(t, err)

	b := a.NewBatch()
	blob := b.AddBlob([]byte("written on another node\n"))
	entries := append(append([]gitstore.TreeEntry{}, base.Entries...), gitstore.TreeEntry{Name: "zz-new.txt", Mode: gitstore.ModeFile, OID: blob})
	gitstore.SortEntries(entries)
	tree := b.Add(gitstore.KindTree, gitstore.EncodeTree(entries))
	sig := gitstore.Signature{Name: "n", Email: "n@example.com", When: time.Unix(1700000000, 0).UTC()}
	commit := b.AddCommit(gitstore.NewCommit{Tree: tree, Parents: []gitstore.OID{main}, Author: sig, Message: "on a"})
	require.NoError(t, b.Flush(ctx))

	store := &memObjects{objs: map[gitstore.OID]gitstore.RawObject{}}
	require.NoError(t, SaveObjects(ctx, store, "app", a, []gitstore.OID{blob, tree, commit, {}}, true))
	assert.Len(t, store.objs, 3)
	// Saved again: the store is asked first, nothing sent.
	require.NoError(t, SaveObjects(ctx, store, "app", a, []gitstore.OID{blob, tree, commit}, true))
	assert.Equal(t, 3, store.puts)

	dir, r := clone(t, originDir)
	has, err := r.HasObject(ctx, commit)
	require.NoError(t, err)
	require.False(t, has)
	n, err := FillObjects(ctx, store, "app", r, []gitstore.OID{commit, main})
	require.NoError(t, err)
	assert.Equal(t, 3, n, "the commit, its new tree and its new blob; nothing the clone had")
	testrepo.Git(t, dir, "update-ref", "refs/heads/filled", commit.String())
	testrepo.Git(t, dir, "fsck", "--strict", "--no-dangling")
	assert.Equal(t, "written on another node", testrepo.Git(t, dir, "show", "filled:zz-new.txt"), "git show, trimmed")
	// Present already: nothing to write.
	n, err = FillObjects(ctx, store, "app", r, []gitstore.OID{commit})
	require.NoError(t, err)
	assert.Zero(t, n)

	// The commit without its tree in the store: refused, nothing written.
	partial := &memObjects{objs: map[gitstore.OID]gitstore.RawObject{commit: store.objs[commit]}}
	dir2, r2 := clone(t, originDir)
	_, err = FillObjects(ctx, partial, "app", r2, []gitstore.OID{commit})
	require.ErrorIs(t, err, gitstore.ErrMissingObject)
	assert.Contains(t, err.Error(), tree.String())
	cmd := exec.Command("git", "cat-file", "-e", commit.String())
	cmd.Dir, cmd.Env = dir2, testrepo.Env()
	out, gerr := cmd.CombinedOutput()
	assert.Error(t, gerr, "the commit was not written: %s", strings.TrimSpace(string(out)))
}
