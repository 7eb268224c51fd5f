package environment_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/environment"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/record"
)

func TestParseForms(t *testing.T) {
	json := `{"setup": ["npm ci", ["go", "mod", "download"], {"command": "make deps", "network": false, "timeout_seconds": 60, "env": {"A": "1"}}],
  "key": ["**/go.sum"], "include": [{"path": ".env.local", "content": "X=1\n"}, {"path": "conf/token", "secret": "TOKEN"}], "auto": false}`
	c, err := environment.Parse("environment.json", []byte(json))
	require.NoError(t, err)
	require.Len(t, c.Setup, 3)
	assert.Equal(t, []string{"/bin/sh", "-c", "npm ci"}, environment.Args(c.Setup[0]))
	assert.Equal(t, []string{"go", "mod", "download"}, environment.Args(c.Setup[1]))
	assert.False(t, environment.NetworkWanted(c.Setup[2]))
	assert.True(t, environment.NetworkWanted(c.Setup[0]))
	assert.False(t, environment.Enabled(c))

	yaml := "setup:\n  - npm ci\n  - [go, mod, download]\n  - command: make deps\n    network: false\nkey: ['**/go.sum']\n"
	y, err := environment.Parse("environment.yaml", []byte(yaml))
	require.NoError(t, err)
	assert.Equal(t, c.Setup[:2], y.Setup[:2])
	assert.Equal(t, c.Key, y.Key)
}

func TestParseErrorsNamePositionOrField(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"e.json", "{\n  \"setup\": [\"a\",]\n}", "e.json: line 2, column 18"},
		{"e.json", "{\"setup\": 3}", "e.json: line 1, column 12: setup: want"},
		{"e.json", "{\"stup\": []}", `e.json: unknown field "stup"`},
		{"e.yaml", "setup:\n  - [a\n", "e.yaml: line 1: did not find expected"},
		{"e.json", `{"setup": [[]]}`, "setup[0]: an empty command"},
		{"e.json", `{"setup": [{"argv": ["a"], "command": "b"}]}`, "setup[0]: give argv or command, not both"},
		{"e.json", `{"setup": [{"command": "a", "env": {"1X": "v"}}]}`, `setup[0].env: "1X" is not a valid variable name`},
		{"e.json", `{"key": ["go.sum", "[a"]}`, `key[1]: glob "[a" does not compile`},
		{"e.json", `{"include": [{"path": "../x", "content": ""}]}`, "include[0].path"},
		{"e.json", `{"include": [{"path": "x", "secret": "not-valid"}]}`, `include[0].secret: "not-valid" is not a valid variable name`},
		{"e.json", `{"include": [{"path": "x"}]}`, "include[0]: give content or secret"},
	} {
		_, err := environment.Parse(tc.name, []byte(tc.data))
		require.Error(t, err, tc.data)
		assert.ErrorIs(t, err, record.ErrInvalid)
		assert.Contains(t, err.Error(), tc.want, tc.data)
	}
}

// repoAt commits files and returns the repository and the commit's tree.
func repoAt(t *testing.T, dir string, files map[string]string) (*gitstore.Repo, gitstore.OID) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(c), 0o644))
	}
	testrepo.Git(t, dir, "add", "-A")
	testrepo.Git(t, dir, "commit", "-q", "-m", "c")
	r, err := gitstore.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	head, err := r.ResolveRevision(t.Context(), "HEAD")
	require.NoError(t, err)
	tree, err := r.TreeOf(t.Context(), head)
	require.NoError(t, err)
	return r, tree
}

func TestResolveKeyFollowsKeyFilesOnly(t *testing.T) {
	ctx := context.Background()
	dir := testrepo.Init(t)
	r, t1 := repoAt(t, dir, map[string]string{"go.sum": "a\n", "main.go": "package main\n", "package-lock.json": "{}\n"})
	p1, err := environment.Resolve(ctx, r, t1, nil)
	require.NoError(t, err)
	assert.Equal(t, environment.SourceAuto, p1.Source)
	require.Len(t, p1.Steps, 2)
	assert.Equal(t, []string{"go", "mod", "download"}, environment.Args(p1.Steps[0]))
	assert.Equal(t, []string{"npm", "ci"}, environment.Args(p1.Steps[1]))

	_, t2 := repoAt(t, dir, map[string]string{"main.go": "package main\n\nfunc main() {}\n"})
	p2, err := environment.Resolve(ctx, r, t2, nil)
	require.NoError(t, err)
	assert.Equal(t, p1.Key, p2.Key, "a commit not touching a key file shares the layer")

	_, t3 := repoAt(t, dir, map[string]string{"go.sum": "b\n"})
	p3, err := environment.Resolve(ctx, r, t3, nil)
	require.NoError(t, err)
	assert.NotEqual(t, p1.Key, p3.Key)

	// Another setup is another layer; auto false with no setup is none.
	api := environment.Config{Setup: []environment.Step{{Command: "make"}}}
	p4, err := environment.Resolve(ctx, r, t3, &api)
	require.NoError(t, err)
	assert.Equal(t, environment.SourceAPI, p4.Source)
	assert.NotEqual(t, p3.Key, p4.Key)
	off := false
	p5, err := environment.Resolve(ctx, r, t3, &environment.Config{Auto: &off})
	require.NoError(t, err)
	assert.True(t, p5.Empty())
	assert.True(t, p3.Stale([]string{"go.sum"}))
	assert.False(t, p3.Stale([]string{"main.go"}))
}

func TestResolveFileAtBase(t *testing.T) {
	ctx := context.Background()
	dir := testrepo.Init(t)
	r, t1 := repoAt(t, dir, map[string]string{".sessiond/environment.yaml": "setup:\n  - make deps\nkey: [deps.lock]\n", "deps.lock": "1\n"})
	p, err := environment.Resolve(ctx, r, t1, nil)
	require.NoError(t, err)
	assert.Equal(t, environment.SourceFile, p.Source)
	assert.Equal(t, ".sessiond/environment.yaml", p.File)
	assert.Contains(t, p.KeyFiles, "deps.lock")

	_, t2 := repoAt(t, dir, map[string]string{".sessiond/environment.yaml": "setup: [\n"})
	p, err = environment.Resolve(ctx, r, t2, nil)
	require.NoError(t, err)
	assert.True(t, p.Empty())
	assert.Contains(t, p.Problem, ".sessiond/environment.yaml: line")
}
