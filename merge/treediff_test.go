package merge_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/merge"
)

// TestWalkChangesMatchesGit: the raw walk lists what git diff-tree -r
// --no-renames lists, in its order, with its modes and ids.
func TestWalkChangesMatchesGit(t *testing.T) {
	dir := testrepo.Build(t, "small")
	r, err := gitstore.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	ctx := t.Context()
	rev := func(s string) gitstore.OID {
		id, err := gitstore.ParseOID(strings.TrimSpace(testrepo.Git(t, dir, "rev-parse", s)))
		require.NoError(t, err)
		return id
	}
	for _, pair := range [][2]string{{"main~2", "main"}, {"main", "feature"}, {"feature", "main~1"}} {
		t.Run(pair[0]+".."+pair[1], func(t *testing.T) {
			a, b := rev(pair[0]+"^{tree}"), rev(pair[1]+"^{tree}")
			var got []string
			require.NoError(t, merge.WalkChanges(ctx, r, a, b, func(c merge.FileChange) error {
				got = append(got, fmt.Sprintf("%s %s %s %s %s", c.From().Mode, c.To().Mode, c.From().OID, c.To().OID, c.Path()))
				return nil
			}))
			var want []string
			for _, l := range strings.Split(testrepo.Git(t, dir, "diff-tree", "-r", "--no-renames", pair[0], pair[1]), "\n") {
				if l == "" {
					continue
				}
				meta, path, _ := strings.Cut(l, "\t")
				f := strings.Fields(strings.TrimPrefix(meta, ":"))
				want = append(want, fmt.Sprintf("%s %s %s %s %s", f[0], f[1], f[2], f[3], path))
			}
			require.NotEmpty(t, want)
			assert.Equal(t, want, got)
		})
	}
}

// TestWalkChangesStops: fn's error ends the walk and is returned.
func TestWalkChangesStops(t *testing.T) {
	dir := testrepo.Build(t, "small")
	r, err := gitstore.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	tree, err := r.ResolveTree(t.Context(), "main")
	require.NoError(t, err)
	stop := fmt.Errorf("stop")
	calls := 0
	err = merge.WalkChanges(t.Context(), r, gitstore.ZeroOID, tree, func(merge.FileChange) error {
		calls++
		return stop
	})
	assert.ErrorIs(t, err, stop)
	assert.Equal(t, 1, calls)
}
