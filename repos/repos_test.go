package repos_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/repos"
)

func newRegistry(t *testing.T, defaults repos.Policy) (*repos.Registry, string) {
	t.Helper()
	data := t.TempDir()
	st, err := db.OpenSQLite(t.Context(), filepath.Join(data, "sessiond.db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	g := repos.New(repos.Config{Store: st, DataDir: data, Defaults: defaults})
	t.Cleanup(func() { g.Close() })
	return g, data
}

func TestRegisterAndOpen(t *testing.T) {
	ctx := t.Context()
	g, data := newRegistry(t, repos.Policy{})
	dir := testrepo.Build(t, "small")
	rec, err := g.Register(ctx, "small", dir)
	require.NoError(t, err)
	assert.Equal(t, "small", rec.Name)

	r1, err := g.Open(ctx, "small")
	require.NoError(t, err)
	r2, err := g.Open(ctx, "small")
	require.NoError(t, err)
	assert.Same(t, r1, r2, "one open repository per name")
	branches, err := g.Branches(ctx, "small")
	require.NoError(t, err)
	assert.NotEmpty(t, branches)

	made, err := g.Init(ctx, "made")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(data, "repos", "made.git"), made.Path)
	list, err := g.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, "made", list[0].Name)
	assert.Contains(t, g.Hidden(ctx), data)
	assert.Contains(t, g.Hidden(ctx), filepath.Clean(dir))

	for _, tc := range []struct {
		name, repo, path string
		want             error
	}{
		{"bad name", "../x", dir, record.ErrInvalid},
		{"leading dot", ".x", dir, record.ErrInvalid},
		{"not a repository", "plain", t.TempDir(), record.ErrInvalid},
		{"name taken", "small", dir, record.ErrDuplicate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := g.Register(ctx, tc.repo, tc.path)
			assert.ErrorIs(t, err, tc.want)
		})
	}
	_, err = g.Open(ctx, "nope")
	assert.ErrorIs(t, err, record.ErrNotFound)
	after, err := g.List(ctx)
	require.NoError(t, err)
	assert.Len(t, after, 2, "refused registrations register nothing")
}

func TestPolicyDefaultsAndOwn(t *testing.T) {
	ctx := t.Context()
	g, _ := newRegistry(t, repos.Policy{RequiredApprovals: 1})
	_, err := g.Register(ctx, "r", testrepo.Build(t, "small"))
	require.NoError(t, err)
	p, err := g.Policy(ctx, "r")
	require.NoError(t, err)
	assert.Equal(t, repos.Policy{Repo: "r", RequiredApprovals: 1}, p, "the defaults, named for the repository")
	_, err = g.SetPolicy(ctx, repos.Policy{Repo: "r", RequiredApprovals: 101})
	assert.ErrorIs(t, err, record.ErrInvalid)
	own := repos.Policy{Repo: "r", RequiredApprovals: 2, RefuseStaleReads: true}
	_, err = g.SetPolicy(ctx, own)
	require.NoError(t, err)
	p, err = g.Policy(ctx, "r")
	require.NoError(t, err)
	assert.Equal(t, own, p)
	_, err = g.Policy(ctx, "nope")
	assert.ErrorIs(t, err, record.ErrNotFound)
}

// TestProbe: a readiness probe opens every registered repository and
// says which does not open (here one whose directory went away while the
// daemon was down).
func TestProbe(t *testing.T) {
	ctx := t.Context()
	data := t.TempDir()
	st, err := db.OpenSQLite(ctx, filepath.Join(data, "sessiond.db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	g := repos.New(repos.Config{Store: st, DataDir: data})
	probes, err := g.Probe(ctx)
	require.NoError(t, err)
	assert.Empty(t, probes)
	_, err = g.Register(ctx, "ok", testrepo.Build(t, "small"))
	require.NoError(t, err)
	gone := filepath.Join(t.TempDir(), "gone")
	require.NoError(t, os.Rename(testrepo.Build(t, "small"), gone))
	_, err = g.Register(ctx, "gone", gone)
	require.NoError(t, err)
	require.NoError(t, g.Close())
	require.NoError(t, os.RemoveAll(gone))

	g = repos.New(repos.Config{Store: st, DataDir: data})
	t.Cleanup(func() { g.Close() })
	probes, err = g.Probe(ctx)
	require.NoError(t, err)
	require.Len(t, probes, 2)
	byName := map[string]error{}
	for _, p := range probes {
		byName[p.Name] = p.Err
	}
	assert.NoError(t, byName["ok"])
	assert.Error(t, byName["gone"])
}
