package repos_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/environment"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/repos"
)

// countingStore counts the reads a command's path makes of a
// repository's settings.
type countingStore struct {
	repos.Store
	policies, envs atomic.Int64
}

func (s *countingStore) GetRepoPolicy(ctx context.Context, repo string) (repos.Policy, error) {
	s.policies.Add(1)
	return s.Store.GetRepoPolicy(ctx, repo)
}

func (s *countingStore) GetRepoEnvironment(ctx context.Context, repo string) (repos.Environment, error) {
	s.envs.Add(1)
	return s.Store.GetRepoEnvironment(ctx, repo)
}

// TestSettingsKept: a repository's policy and environment configuration
// are read from the store once for many commands, and a change through
// the registry is seen by the very next read.
func TestSettingsKept(t *testing.T) {
	ctx := t.Context()
	data := t.TempDir()
	sq, err := db.OpenSQLite(ctx, filepath.Join(data, "sessiond.db"))
	require.NoError(t, err)
	t.Cleanup(func() { sq.Close() })
	st := &countingStore{Store: sq}
	g := repos.New(repos.Config{Store: st, DataDir: data, Defaults: repos.Policy{RequiredApprovals: 1}})
	t.Cleanup(func() { g.Close() })
	_, err = g.Register(ctx, "r", testrepo.Build(t, "small"))
	require.NoError(t, err)

	for range 5 {
		p, err := g.Policy(ctx, "r")
		require.NoError(t, err)
		assert.Equal(t, 1, p.RequiredApprovals)
		c, err := g.EnvironmentConfig(ctx, "r")
		require.NoError(t, err)
		assert.Nil(t, c)
	}
	assert.Equal(t, int64(1), st.policies.Load(), "the policy is read once")
	assert.Equal(t, int64(1), st.envs.Load(), "the environment is read once")

	_, err = g.SetPolicy(ctx, repos.Policy{Repo: "r", RequiredApprovals: 3})
	require.NoError(t, err)
	p, err := g.Policy(ctx, "r")
	require.NoError(t, err)
	assert.Equal(t, 3, p.RequiredApprovals, "a change is seen at once")

	cfg := environment.Config{Setup: []environment.Step{{Argv: []string{"true"}}}}
	_, err = g.SetEnvironment(ctx, "r", repos.EnvironmentUpdate{SetConfig: true, Config: cfg})
	require.NoError(t, err)
	c, err := g.EnvironmentConfig(ctx, "r")
	require.NoError(t, err)
	require.NotNil(t, c)
	assert.Len(t, c.Setup, 1, "a change is seen at once")
}
