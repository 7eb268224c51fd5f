package gitstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// TestCloneFetchPublish: a clone of a file:// origin has its branches and
// tags; Publish moves the origin's branch by compare-and-swap and this
// clone's with it; a branch moved at the origin meanwhile is a
// RefConflictError whose Current is the origin's head, already fetched.
func TestCloneFetchPublish(t *testing.T) {
	ctx := t.Context()
	origin := testrepo.BuildBare(t, "small")
	testrepo.Git(t, origin, "tag", "cloned-tag", "main")
	url := "file://" + origin
	path := filepath.Join(t.TempDir(), "clones", "app.git")
	r, err := gitstore.Clone(ctx, url, path, gitstore.Options{HousekeepInterval: -1})
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	assert.Equal(t, url, r.Origin())

	want := oid(t, testrepo.Git(t, origin, "rev-parse", "main"))
	head, err := r.ReadRef(ctx, gitstore.BranchRef("main"))
	require.NoError(t, err)
	assert.Equal(t, want, head)
	_, err = r.ReadRef(ctx, "refs/tags/cloned-tag")
	require.NoError(t, err)

	c := commitOn(t, r, head, "one")
	require.NoError(t, r.Publish(ctx, gitstore.BranchRef("main"), c, head))
	assert.Equal(t, c.String(), strings.TrimSpace(testrepo.Git(t, origin, "rev-parse", "main")))
	local, _ := r.ReadRef(ctx, gitstore.BranchRef("main"))
	assert.Equal(t, c, local)
	fsck(t, origin)

	// Someone pushes to the origin directly: the lease on c still holds
	// for them, not for a publish from a stale head.
	work := t.TempDir()
	testrepo.Git(t, work, "clone", "-q", url, ".")
	require.NoError(t, os.WriteFile(filepath.Join(work, "theirs.txt"), []byte("theirs\n"), 0o644))
	testrepo.Git(t, work, "add", "theirs.txt")
	testrepo.Git(t, work, "commit", "-q", "-m", "theirs")
	testrepo.Git(t, work, "push", "-q", "origin", "main")
	theirs := oid(t, testrepo.Git(t, work, "rev-parse", "HEAD"))

	c2 := commitOn(t, r, c, "two")
	err = r.Publish(ctx, gitstore.BranchRef("main"), c2, c)
	var rc *gitstore.RefConflictError
	require.ErrorAs(t, err, &rc)
	assert.True(t, errors.Is(err, gitstore.ErrRefConflict))
	assert.Equal(t, theirs, rc.Current, "the origin's head, fetched")
	assert.Equal(t, theirs.String(), strings.TrimSpace(testrepo.Git(t, origin, "rev-parse", "main")), "nothing overwritten")

	// From the origin's head the same publish goes through.
	c3 := commitOn(t, r, theirs, "three")
	require.NoError(t, r.Publish(ctx, gitstore.BranchRef("main"), c3, theirs))
	assert.Equal(t, c3.String(), strings.TrimSpace(testrepo.Git(t, origin, "rev-parse", "main")))
	assert.Equal(t, theirs.String(), strings.TrimSpace(testrepo.Git(t, origin, "rev-parse", "main^")))
	fsck(t, origin)

	// A branch deleted at the origin goes at the next fetch; a new one comes.
	testrepo.Git(t, origin, "branch", "fetched-new", "main")
	require.NoError(t, r.Fetch(ctx))
	f, err := r.ReadRef(ctx, gitstore.BranchRef("fetched-new"))
	require.NoError(t, err)
	assert.Equal(t, c3, f)
	testrepo.Git(t, origin, "branch", "-D", "fetched-new")
	require.NoError(t, r.Fetch(ctx))
	_, err = r.ReadRef(ctx, gitstore.BranchRef("fetched-new"))
	assert.ErrorIs(t, err, gitstore.ErrNotFound)
}

// TestCloneRefusals: what cannot be cloned leaves nothing behind, and an
// error names the URL without a password.
func TestCloneRefusals(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	for _, tc := range []struct{ url, want string }{
		{"git://127.0.0.1:1/none.git", "git://127.0.0.1:1/none.git"},
		{"file://" + filepath.Join(dir, "absent.git"), "absent.git"},
		{"https://user:s3cret@forge.invalid/app.git", "password in the URL"},
		{"ftp://forge.invalid/app.git", "want an https://"},
	} {
		path := filepath.Join(dir, "clone.git")
		_, err := gitstore.Clone(ctx, tc.url, path, gitstore.Options{HousekeepInterval: -1})
		require.Error(t, err, tc.url)
		assert.Contains(t, err.Error(), tc.want)
		assert.NotContains(t, err.Error(), "s3cret")
		_, statErr := os.Stat(path)
		assert.True(t, os.IsNotExist(statErr), "nothing left at %s", path)
		left, _ := os.ReadDir(dir)
		assert.Empty(t, left)
	}
}

func commitOn(t *testing.T, r *gitstore.Repo, parent gitstore.OID, msg string) gitstore.OID {
	t.Helper()
	pc, err := r.Commit(t.Context(), parent)
	require.NoError(t, err)
	sig := gitstore.Signature{Name: "T", Email: "t@example.com", When: time.Unix(1700000000, 0).UTC()}
	id, err := r.WriteCommit(t.Context(), gitstore.NewCommit{Tree: pc.Tree, Parents: []gitstore.OID{parent}, Author: sig, Message: msg})
	require.NoError(t, err)
	return id
}
