package gitstore_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// TestPackedRefsFollowGit: one Repo reads packed refs as git leaves them
// after every rewrite of packed-refs (the parse is kept while the file
// is the same one): packed, moved and packed again, deleted, and listed.
func TestPackedRefsFollowGit(t *testing.T) {
	dir := testrepo.BuildBare(t, "small")
	r := open(t, dir)
	ctx := t.Context()
	main := testrepo.Git(t, dir, "rev-parse", "main")
	parent := testrepo.Git(t, dir, "rev-parse", "main~1")
	read := func(name string) string {
		t.Helper()
		id, err := r.ReadRef(ctx, gitstore.RefName(name))
		if err != nil {
			require.ErrorIs(t, err, gitstore.ErrNotFound)
			return ""
		}
		return id.String()
	}
	list := func() map[string]string {
		t.Helper()
		refs, err := r.ListRefs(ctx, "refs/heads/")
		require.NoError(t, err)
		out := map[string]string{}
		for _, ref := range refs {
			out[string(ref.Name)] = ref.OID.String()
		}
		return out
	}
	testrepo.Git(t, dir, "update-ref", "refs/heads/x", main)
	testrepo.Git(t, dir, "pack-refs", "--all")
	assert.Equal(t, main, read("refs/heads/x"))
	for i := range 3 {
		want := []string{parent, main, parent}[i]
		testrepo.Git(t, dir, "update-ref", "refs/heads/x", want)
		testrepo.Git(t, dir, "pack-refs", "--all")
		assert.Equal(t, want, read("refs/heads/x"), "round %d", i)
		assert.Equal(t, want, list()["refs/heads/x"], "round %d", i)
	}
	testrepo.Git(t, dir, "update-ref", "-d", "refs/heads/x")
	assert.Empty(t, read("refs/heads/x"))
	assert.NotContains(t, list(), "refs/heads/x")
	assert.Equal(t, main, read("refs/heads/main"))
	// sessiond's own removal of a packed ref.
	testrepo.Git(t, dir, "update-ref", "refs/heads/y", main)
	testrepo.Git(t, dir, "pack-refs", "--all")
	require.Equal(t, main, read("refs/heads/y"))
	require.NoError(t, r.UpdateRef(ctx, "refs/heads/y", gitstore.ZeroOID, oid(t, main)))
	assert.Empty(t, read("refs/heads/y"))
	assert.Empty(t, testrepo.GitEnv(t, dir, nil, nil, "for-each-ref", "refs/heads/y"))
}
