package overlay_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/overlay"
)

// plainRunOnly skips t in make test's race detector run (-short): what
// says what t runs, all of which the plain run covers, with no goroutines
// of the daemon's own against each other for the detector to watch.
func plainRunOnly(t *testing.T, what string) {
	t.Helper()
	if testing.Short() {
		t.Skip(what + ": the plain run covers it; nothing of the daemon's races here")
	}
}

// fixture is a fixture repository opened through gitstore at main.
type fixture struct {
	dir  string
	repo *gitstore.Repo
	tree gitstore.OID
	view *gitstore.TreeView
}

func openFixture(tb testing.TB, name string) *fixture {
	tb.Helper()
	dir := testrepo.Build(tb, name)
	repo, err := gitstore.Open(dir)
	require.NoError(tb, err)
	tb.Cleanup(func() { repo.Close() })
	ctx := context.Background()
	commit, err := repo.ResolveRevision(ctx, "main")
	require.NoError(tb, err)
	c, err := repo.Commit(ctx, commit)
	require.NoError(tb, err)
	return &fixture{dir: dir, repo: repo, tree: c.Tree, view: repo.View(c.Tree)}
}

// blob writes content to the fixture's repository and returns its id.
func (f *fixture) blob(tb testing.TB, content string) gitstore.OID {
	tb.Helper()
	id, err := f.repo.WriteBlob(context.Background(), []byte(content))
	require.NoError(tb, err)
	return id
}

// listAll returns the recursive merged listing.
func listAll(tb testing.TB, o *overlay.Overlay, opts overlay.ListOptions) []overlay.Node {
	tb.Helper()
	var out []overlay.Node
	require.NoError(tb, o.List(context.Background(), opts, func(n overlay.Node) error {
		out = append(out, n)
		return nil
	}))
	return out
}
