package gitstore_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// TestLockReleasedOnlyByOwner: once a ref write renamed its lock over the
// file, the lock's name is free, and another writer (git) may hold it
// before the write returns. That writer's lock must survive: a write
// removes only a lock file it still owns. Deleting a packed ref rewrites
// packed-refs under packed-refs.lock; updating a loose ref commits
// <ref>.lock.
func TestLockReleasedOnlyByOwner(t *testing.T) {
	for _, tc := range []struct {
		name  string
		guard string // the file whose lock another writer takes
		write func(t *testing.T, r *gitstore.Repo, main, feature gitstore.OID)
	}{
		{"packed-refs rewrite", "packed-refs", func(t *testing.T, r *gitstore.Repo, main, feature gitstore.OID) {
			require.NoError(t, r.UpdateRef(t.Context(), "refs/heads/feature", gitstore.ZeroOID, feature))
		}},
		{"loose ref update", "refs/heads/feature", func(t *testing.T, r *gitstore.Repo, main, feature gitstore.OID) {
			require.NoError(t, r.UpdateRef(t.Context(), "refs/heads/feature", main, feature))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testrepo.Build(t, "small")
			testrepo.Git(t, dir, "pack-refs", "--all")
			r := open(t, dir)
			main := oid(t, testrepo.Git(t, dir, "rev-parse", "main"))
			feature := oid(t, testrepo.Git(t, dir, "rev-parse", "feature"))
			guarded := filepath.Join(dir, ".git", filepath.FromSlash(tc.guard))
			theirs := guarded + ".lock"
			took := false
			gitstore.OnLockCommitted(t, func(path string) {
				if path != guarded {
					return
				}
				// Another writer takes the lock the moment it is free.
				f, err := os.OpenFile(theirs, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
				require.NoError(t, err, "the lock is free once renamed")
				require.NoError(t, f.Close())
				took = true
			})
			tc.write(t, r, main, feature)
			require.True(t, took, "the write committed a lock on %s", tc.guard)
			assert.FileExists(t, theirs, "the other writer's lock is still there")
			// And the other writer's git sees its lock held.
			require.NoError(t, os.Remove(theirs))
			out := testrepo.Git(t, dir, "for-each-ref", "refs/heads/")
			assert.Equal(t, tc.guard != "packed-refs", strings.Contains(out, "refs/heads/feature"))
		})
	}
}

// TestPrepareRefs: several compare-and-swaps prepared and committed
// together each keep their own result (a stale old value fails alone, a
// ref not selected is left as it was), nothing is visible before Commit,
// git reads what Commit wrote, and no lock file is left behind.
func TestPrepareRefs(t *testing.T) {
	dir := testrepo.Build(t, "small")
	r, err := gitstore.Open(dir)
	require.NoError(t, err)
	defer r.Close()
	ctx := t.Context()
	main := oid(t, testrepo.Git(t, dir, "rev-parse", "main"))
	feature := oid(t, testrepo.Git(t, dir, "rev-parse", "feature"))
	ups := []gitstore.RefUpdate{
		{Name: "refs/sessions/a/live", New: main},
		{Name: "refs/sessions/b/live", New: feature},
		{Name: "refs/heads/main", New: feature, Old: feature}, // stale: main is not at feature
		{Name: "refs/sessions/c/live", New: main},             // not selected
		{Name: "refs/heads/feature", New: main, Old: feature},
	}
	p := r.PrepareRefs(ctx, ups)
	_, err = r.ReadRef(ctx, "refs/sessions/a/live")
	require.ErrorIs(t, err, gitstore.ErrNotFound, "nothing is visible before Commit")
	errs := p.Commit([]bool{true, true, true, false, true})
	p.Release()
	require.Len(t, errs, len(ups))
	assert.NoError(t, errs[0])
	assert.NoError(t, errs[1])
	var ce *gitstore.RefConflictError
	require.ErrorAs(t, errs[2], &ce)
	assert.Equal(t, main, ce.Current)
	assert.NoError(t, errs[3], "not selected: not made, no error")
	assert.NoError(t, errs[4])

	assert.Equal(t, main.String(), testrepo.Git(t, dir, "rev-parse", "refs/sessions/a/live"))
	assert.Equal(t, feature.String(), testrepo.Git(t, dir, "rev-parse", "refs/sessions/b/live"))
	assert.Equal(t, main.String(), testrepo.Git(t, dir, "rev-parse", "refs/heads/main"), "the stale update changed nothing")
	assert.Equal(t, main.String(), testrepo.Git(t, dir, "rev-parse", "refs/heads/feature"))
	_, err = r.ReadRef(ctx, "refs/sessions/c/live")
	assert.ErrorIs(t, err, gitstore.ErrNotFound, "the unselected ref was not made")
	locks, err := filepath.Glob(filepath.Join(dir, ".git", "refs", "*", "*", "*.lock"))
	require.NoError(t, err)
	locks2, err := filepath.Glob(filepath.Join(dir, ".git", "refs", "*", "*.lock"))
	require.NoError(t, err)
	assert.Empty(t, append(locks, locks2...), "no lock file is left")

	// Released without Commit: nothing changes, the locks are gone.
	p = r.PrepareRefs(ctx, []gitstore.RefUpdate{{Name: "refs/sessions/a/live", New: feature, Old: main}})
	p.Release()
	assert.Equal(t, main.String(), testrepo.Git(t, dir, "rev-parse", "refs/sessions/a/live"))
	require.NoError(t, r.UpdateRef(ctx, "refs/sessions/a/live", feature, main), "the lock was let go")
}
