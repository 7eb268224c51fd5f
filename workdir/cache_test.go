package workdir_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/workdir"
)

// checkCheckout asserts that dir holds exactly tree's files.
func checkCheckout(t *testing.T, r *gitstore.Repo, tree gitstore.OID, dir string) {
	t.Helper()
	n := 0
	require.NoError(t, r.List(t.Context(), tree, "", true, func(e gitstore.Entry) error {
		full := filepath.Join(dir, e.Path)
		st, err := os.Lstat(full)
		require.NoError(t, err, e.Path)
		switch e.Mode {
		case gitstore.ModeDir:
			assert.True(t, st.IsDir(), e.Path)
			return nil
		case gitstore.ModeSymlink:
			target, err := os.Readlink(full)
			require.NoError(t, err)
			assert.Equal(t, e.OID, gitstore.HashObject(gitstore.KindBlob, []byte(target)), e.Path)
		default:
			data, err := os.ReadFile(full)
			require.NoError(t, err)
			assert.Equal(t, e.OID, gitstore.HashObject(gitstore.KindBlob, data), e.Path)
			assert.Equal(t, e.Mode == gitstore.ModeExec, st.Mode()&0o100 != 0, e.Path)
		}
		n++
		return nil
	}))
	var onDisk int
	require.NoError(t, filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			onDisk++
		}
		return err
	}))
	assert.Equal(t, n, onDisk)
}

func TestCacheBuildsAtomically(t *testing.T) {
	f := newFixture(t)
	dir := filepath.Join(t.TempDir(), "bases")
	// A crash mid-build left a temporary directory: it never counts.
	junk := filepath.Join(dir, ".tmp-"+f.tree.String()+"-dead")
	require.NoError(t, os.MkdirAll(junk, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(junk, "a.txt"), []byte("half"), 0o644))
	c, err := workdir.OpenCache(dir, 0)
	require.NoError(t, err)
	_, err = os.Stat(junk)
	assert.ErrorIs(t, err, os.ErrNotExist)

	p, release, err := c.Acquire(t.Context(), f.repo, f.tree)
	require.NoError(t, err)
	defer release()
	assert.Equal(t, filepath.Join(dir, f.tree.String()), p)
	checkCheckout(t, f.repo, f.tree, p)
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, ents, 1)

	// Reopened, the cache knows it without building again.
	c2, err := workdir.OpenCache(dir, 0)
	require.NoError(t, err)
	assert.Equal(t, c.Bytes(), c2.Bytes())
}

func TestCacheEvictsLeastRecentlyUsedNotHeld(t *testing.T) {
	f := newFixture(t)
	trees := []gitstore.OID{f.tree}
	for i := range 2 {
		f.write("extra.txt", string(rune('a'+i)), gitstore.ModeFile)
		tree, err := f.ov.BuildTree(t.Context(), f.repo, f.tree)
		require.NoError(t, err)
		trees = append(trees, tree)
	}
	dir := filepath.Join(t.TempDir(), "bases")
	c, err := workdir.OpenCache(dir, 1) // every checkout is over budget
	require.NoError(t, err)
	exists := func(id gitstore.OID) bool {
		_, err := os.Stat(filepath.Join(dir, id.String()))
		return err == nil
	}
	_, rel0, err := c.Acquire(t.Context(), f.repo, trees[0])
	require.NoError(t, err)
	_, rel1, err := c.Acquire(t.Context(), f.repo, trees[1])
	require.NoError(t, err)
	assert.True(t, exists(trees[0]), "held checkouts are never evicted")
	rel0()
	assert.False(t, exists(trees[0]), "released over budget: evicted")
	_, rel2, err := c.Acquire(t.Context(), f.repo, trees[2])
	require.NoError(t, err)
	assert.True(t, exists(trees[1]))
	rel1()
	rel2()
	assert.False(t, exists(trees[1]))
}
