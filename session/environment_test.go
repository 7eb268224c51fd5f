package session_test

import (
	"archive/zip"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/environment"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/session"
	"github.com/sessiond/sessiond/workdir"
)

// commitFiles commits files to the test repository's main branch.
func (e *execEnv) commitFiles(files map[string]string, msg string) {
	e.t.Helper()
	for p, c := range files {
		full := filepath.Join(e.repoDir, p)
		require.NoError(e.t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(e.t, os.WriteFile(full, []byte(c), 0o644))
	}
	testrepo.Git(e.t, e.repoDir, "add", "-A")
	testrepo.Git(e.t, e.repoDir, "commit", "-q", "-m", msg)
}

func (e *execEnv) setConfig(c environment.Config, env map[string]string) {
	e.t.Helper()
	_, err := e.en.Repos.SetEnvironment(e.t.Context(), "r", repos.EnvironmentUpdate{Env: env, SetConfig: true, Config: c})
	require.NoError(e.t, err)
}

func (e *execEnv) run(id uuid.UUID, opts session.ExecOptions) session.ExecResult {
	e.t.Helper()
	res, err := e.en.Exec.Exec(e.t.Context(), id, opts)
	require.NoError(e.t, err)
	return res
}

// nodePackage packs a tiny npm package (name@1.0.0 exporting value) with
// npm pack, and returns the tarball and its integrity.
func nodePackage(t *testing.T, name, value string) ([]byte, string) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "package.json"), []byte(fmt.Sprintf(`{"name":%q,"version":"1.0.0","main":"index.js"}`, name)), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "index.js"), []byte(fmt.Sprintf("module.exports = %q;\n", value)), 0o644))
	cmd := exec.Command("npm", "pack", "--silent")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "npm_config_cache="+t.TempDir())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	tgz, err := os.ReadFile(filepath.Join(dir, name+"-1.0.0.tgz"))
	require.NoError(t, err)
	sum := sha512.Sum512(tgz)
	return tgz, "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
}

// nodeProject is a package.json and a package-lock.json that lock dep at
// the tarball of the given integrity, resolved at an address nothing
// listens on: only the npm cache can serve it.
func nodeProject(version, integrity string) map[string]string {
	return map[string]string{
		".gitignore":   "node_modules/\n",
		"package.json": fmt.Sprintf(`{"name":"proj","version":%q,"dependencies":{"dep":"1.0.0"}}`, version),
		"package-lock.json": fmt.Sprintf(`{"name":"proj","version":%q,"lockfileVersion":3,"requires":true,"packages":{"":{"name":"proj","version":%q,"dependencies":{"dep":"1.0.0"}},`+
			`"node_modules/dep":{"version":"1.0.0","resolved":"http://127.0.0.1:9/dep/-/dep-1.0.0.tgz","integrity":%q}}}`, version, version, integrity),
	}
}

// TestEnvironmentNodeProject: a Node project whose setup is npm ci
// --offline against the repository's shared npm cache (filled by a
// command from a tarball npm pack made): the first session's first
// command builds the layer, the second session's require works with no
// install, a commit that does not touch the lock file keeps the layer,
// one that does builds another, and a session that edits the lock file
// is told its layer is stale.
func TestEnvironmentNodeProject(t *testing.T) {
	plainRunOnly(t, "npm in namespaces, minutes under the detector")
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("no npm")
	}
	forExecModes(t, func(t *testing.T, e *execEnv) {
		tgz, integrity := nodePackage(t, "dep", "dep-ok")
		e.commitFiles(nodeProject("1.0.0", integrity), "node project")

		// The shared npm cache gets the package through a command, with
		// no environment configured yet (auto off: no npm ci without it).
		e.setConfig(environment.Config{Auto: new(bool)}, nil)
		fill := e.create(session.CreateOptions{})
		res := e.run(fill.ID, session.ExecOptions{Command: "cat > /tmp/dep.tgz && npm cache add /tmp/dep.tgz", Stdin: tgz})
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, session.EnvNone, res.Environment.Status)

		e.setConfig(environment.Config{Setup: []environment.Step{{Command: "npm ci --offline --no-audit --no-fund"}}}, nil)
		require1 := session.ExecOptions{Argv: []string{"node", "-e", `console.log(require("dep"))`}}

		s1 := e.create(session.CreateOptions{})
		res = e.run(s1.ID, require1)
		require.Equal(t, 0, res.ExitCode, string(res.Stderr)+res.Environment.Log+res.Environment.Error)
		assert.Equal(t, "dep-ok\n", string(res.Stdout))
		assert.Equal(t, workdir.EnvReady, res.Environment.Status)
		assert.Equal(t, environment.SourceAPI, res.Environment.Source)
		assert.True(t, res.Environment.Built)
		assert.Empty(t, res.Changes, "node_modules is the layer's, not the session's")
		key := res.Environment.Key

		s2 := e.create(session.CreateOptions{})
		res = e.run(s2.ID, session.ExecOptions{Command: `test -d node_modules/dep && node -e 'console.log(require("dep"))'`})
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, "dep-ok\n", string(res.Stdout))
		assert.False(t, res.Environment.Built, "the second session installs nothing")
		assert.Equal(t, key, res.Environment.Key)
		assert.False(t, res.EnvironmentStale)

		// A commit that leaves the lock file alone keeps the layer.
		e.commitFiles(map[string]string{"README.md": "readme\n"}, "docs")
		s3 := e.create(session.CreateOptions{})
		res = e.run(s3.ID, require1)
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, key, res.Environment.Key)
		assert.False(t, res.Environment.Built)

		// One that changes it builds another.
		e.commitFiles(nodeProject("1.0.1", integrity), "bump")
		s4 := e.create(session.CreateOptions{})
		res = e.run(s4.ID, require1)
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.NotEqual(t, key, res.Environment.Key)
		assert.True(t, res.Environment.Built)
		assert.Len(t, e.wd.Environments("r"), 2)

		// A session that changes a key file keeps its layer, marked stale.
		res = e.run(s2.ID, session.ExecOptions{Command: `sed -i 's/"proj"/"proj2"/' package-lock.json`})
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		res = e.run(s2.ID, require1)
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.True(t, res.EnvironmentStale)
		assert.Equal(t, key, res.Environment.Key)
	})
}

// TestEnvironmentAutoGoSum: a repository with only a go.sum and no
// configuration gets `go mod download` as its setup (auto), from a module
// proxy directory, once: the modules land in the shared cache, and the
// sessions build offline.
func TestEnvironmentAutoGoSum(t *testing.T) {
	plainRunOnly(t, "the go command in namespaces")
	proxy := goProxy(t)
	e := newExecEnvWith(t, workdir.Config{Show: []string{proxy}})
	e.commitFiles(goModuleFiles(t, proxy), "needs example.com/dep")
	e.setConfig(environment.Config{}, map[string]string{"GOPROXY": "file://" + proxy, "GOSUMDB": "off", "GOTOOLCHAIN": "local"})
	// go build needs the module (no test binary: no standard library to
	// compile in a fresh cache).
	offline := session.ExecOptions{Command: "go build ./... && go list -m example.com/dep", Env: map[string]string{"GOPROXY": "off"}}

	s1 := e.create(session.CreateOptions{})
	res := e.run(s1.ID, offline)
	require.Equal(t, 0, res.ExitCode, string(res.Stdout)+string(res.Stderr)+res.Environment.Log+res.Environment.Error)
	assert.Equal(t, environment.SourceAuto, res.Environment.Source)
	assert.Equal(t, workdir.EnvReady, res.Environment.Status)
	assert.True(t, res.Environment.Built)
	ls := e.wd.Environments("r")
	require.Len(t, ls, 1)
	assert.Contains(t, ls[0].Log, "go mod download")

	s2 := e.create(session.CreateOptions{})
	res = e.run(s2.ID, offline)
	require.Equal(t, 0, res.ExitCode, string(res.Stdout)+string(res.Stderr))
	assert.False(t, res.Environment.Built)

	// auto: false turns it off.
	off := false
	e.setConfig(environment.Config{Auto: &off}, nil)
	s3 := e.create(session.CreateOptions{})
	res = e.run(s3.ID, session.ExecOptions{Argv: []string{"true"}})
	assert.Equal(t, session.EnvNone, res.Environment.Status)
}

// goProxy is a module proxy directory serving example.com/dep v1.0.0.
func goProxy(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	proxy, err := os.MkdirTemp("", "sessiond-proxy-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(proxy, 0o755))
	t.Cleanup(func() { os.RemoveAll(proxy) })
	v := filepath.Join(proxy, "example.com", "dep", "@v")
	require.NoError(t, os.MkdirAll(v, 0o755))
	depMod := "module example.com/dep\n\ngo 1.21\n"
	require.NoError(t, os.WriteFile(filepath.Join(v, "list"), []byte("v1.0.0\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(v, "v1.0.0.info"), []byte(`{"Version":"v1.0.0","Time":"2024-01-01T00:00:00Z"}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(v, "v1.0.0.mod"), []byte(depMod), 0o644))
	zf, err := os.Create(filepath.Join(v, "v1.0.0.zip"))
	require.NoError(t, err)
	zw := zip.NewWriter(zf)
	for name, content := range map[string]string{"go.mod": depMod, "dep.go": "package dep\n\nfunc Double(n int) int { return 2 * n }\n"} {
		w, err := zw.Create("example.com/dep@v1.0.0/" + name)
		require.NoError(t, err)
		_, err = w.Write([]byte(content))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	require.NoError(t, zf.Close())
	return proxy
}

// goModuleFiles are a module needing example.com/dep, with the go.sum the
// go command makes from proxy.
func goModuleFiles(t *testing.T, proxy string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":            "module example.com/m\n\ngo 1.21\n\nrequire example.com/dep v1.0.0\n",
		"calc/calc.go":      "package calc\n\nimport \"example.com/dep\"\n\nfunc Quad(n int) int { return dep.Double(dep.Double(n)) }\n",
		"calc/calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestQuad(t *testing.T) {\n\tif Quad(2) != 8 {\n\t\tt.Fatal(Quad(2))\n\t}\n}\n",
	}
	for p, c := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644))
	}
	// Drop the test repository's own Go files: this module replaces them.
	cmd := exec.Command("go", "mod", "tidy")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOPROXY=file://"+proxy, "GOSUMDB=off", "GOFLAGS=-modcacherw", "GOMODCACHE="+t.TempDir(), "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	require.NoError(t, err)
	require.True(t, strings.Contains(string(sum), "example.com/dep"))
	files["go.sum"] = string(sum)
	files["add_test.go"] = "package m\n"
	files["add.go"] = "package m\n"
	return files
}

// TestEnvironmentNotForReadLimitedSessions: a session whose policy hides
// files runs without the layer (its setup read the whole base), and says
// why; another session gets it.
func TestEnvironmentNotForReadLimitedSessions(t *testing.T) {
	plainRunOnly(t, "an environment built by a setup command in namespaces")
	e := newExecEnv(t, workdir.ModeAuto)
	e.setConfig(environment.Config{Setup: []environment.Step{{Command: "mkdir -p build && cat docs/read.txt > build/copy"}}}, nil)
	limited := e.create(session.CreateOptions{Policy: session.Policy{Deny: []string{"docs/**"}}})
	res := e.run(limited.ID, session.ExecOptions{Command: "test ! -e build/copy && echo none"})
	require.Equal(t, 0, res.ExitCode, string(res.Stderr))
	assert.Equal(t, "none\n", string(res.Stdout))
	assert.Equal(t, session.EnvNone, res.Environment.Status)
	assert.Contains(t, res.Environment.Problem, "limits reads")

	open := e.create(session.CreateOptions{})
	res = e.run(open.ID, session.ExecOptions{Command: "cat build/copy"})
	require.Equal(t, 0, res.ExitCode, string(res.Stderr))
	assert.Equal(t, "read me\n", string(res.Stdout))
	assert.Equal(t, workdir.EnvReady, res.Environment.Status)
}
