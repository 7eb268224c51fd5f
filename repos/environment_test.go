package repos_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/secret"
)

// TestEnvironment: secrets are set, kept, replaced and removed by name,
// shown by name only, opened for commands, and survive a new registry on
// the same key; bad input changes nothing; another key opens nothing.
func TestEnvironment(t *testing.T) {
	ctx := t.Context()
	data := t.TempDir()
	st, err := db.OpenSQLite(ctx, filepath.Join(data, "sessiond.db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	box, err := secret.LoadBox(filepath.Join(data, secret.KeyFile))
	require.NoError(t, err)
	g := repos.New(repos.Config{Store: st, DataDir: data, Secrets: box})
	t.Cleanup(func() { g.Close() })
	_, err = g.Register(ctx, "r", testrepo.Build(t, "small"))
	require.NoError(t, err)

	v, err := g.Environment(ctx, "r")
	require.NoError(t, err)
	assert.Equal(t, repos.EnvironmentView{Repo: "r", Env: map[string]string{}, Secrets: []string{}}, v)

	one, two := "value-one", "value-two"
	v, err = g.SetEnvironment(ctx, "r", repos.EnvironmentUpdate{Env: map[string]string{"A": "1"}, Secrets: map[string]*string{"ONE": &one, "TWO": &two}})
	require.NoError(t, err)
	assert.Equal(t, []string{"ONE", "TWO"}, v.Secrets)
	vars, err := g.Variables(ctx, "r")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"ONE": one, "TWO": two}, vars.Secrets)
	assert.Equal(t, "ONE", vars.Masker.Find([]byte("x value-one x")))

	// Env replaced, ONE kept, TWO removed, THREE added.
	three := "value-three"
	v, err = g.SetEnvironment(ctx, "r", repos.EnvironmentUpdate{Env: map[string]string{"B": "2"}, Secrets: map[string]*string{"TWO": nil, "THREE": &three}})
	require.NoError(t, err)
	assert.Equal(t, repos.EnvironmentView{Repo: "r", Env: map[string]string{"B": "2"}, Secrets: []string{"ONE", "THREE"}}, v)
	vars, err = g.Variables(ctx, "r")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"ONE": one, "THREE": three}, vars.Secrets, "the opened variables follow the change")

	big := strings.Repeat("x", secret.MaxValueBytes+1)
	nul := "a\x00b"
	for _, tc := range []struct {
		name string
		u    repos.EnvironmentUpdate
		want error
		text string
	}{
		{"secret name", repos.EnvironmentUpdate{Secrets: map[string]*string{"9X": &one}}, record.ErrInvalid, "secrets"},
		{"removing a bad name", repos.EnvironmentUpdate{Secrets: map[string]*string{"a b": nil}}, record.ErrInvalid, "secrets"},
		{"env name", repos.EnvironmentUpdate{Env: map[string]string{"": "x"}}, record.ErrInvalid, "env"},
		{"NUL in a secret", repos.EnvironmentUpdate{Secrets: map[string]*string{"N": &nul}}, record.ErrInvalid, "secrets.N"},
		{"too large", repos.EnvironmentUpdate{Secrets: map[string]*string{"BIG": &big}}, repos.ErrSecretTooLarge, "secrets.BIG"},
		{"no repository", repos.EnvironmentUpdate{}, record.ErrNotFound, "nope"},
	} {
		repo := "r"
		if tc.want == record.ErrNotFound {
			repo = "nope"
		}
		_, err := g.SetEnvironment(ctx, repo, tc.u)
		assert.ErrorIs(t, err, tc.want, tc.name)
		if err != nil {
			assert.Contains(t, err.Error(), tc.text, tc.name)
			assert.NotContains(t, err.Error(), "value-one", tc.name)
		}
	}
	got, err := g.Environment(ctx, "r")
	require.NoError(t, err)
	assert.Equal(t, v, got, "refused input changed nothing")

	// A new registry with the same key opens them; with another, not.
	again := repos.New(repos.Config{Store: st, DataDir: data, Secrets: box})
	t.Cleanup(func() { again.Close() })
	vars, err = again.Variables(ctx, "r")
	require.NoError(t, err)
	assert.Equal(t, one, vars.Secrets["ONE"])
	other, err := secret.LoadBox(filepath.Join(t.TempDir(), secret.KeyFile))
	require.NoError(t, err)
	wrong := repos.New(repos.Config{Store: st, DataDir: data, Secrets: other})
	t.Cleanup(func() { wrong.Close() })
	_, err = wrong.Variables(ctx, "r")
	assert.ErrorIs(t, err, secret.ErrOpen)
}
