package workdir_test

import (
	"archive/zip"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/overlay"
	"github.com/sessiond/sessiond/workdir"
)

// cacheWorkspace is where the views of these tests appear inside, as the
// session engine puts those of a repository named "mod".
const cacheWorkspace = "/workspace/mod"

// newCacheManager is newManager with a budget for the tool caches.
func newCacheManager(t testing.TB, mode workdir.Mode, noNamespaces bool, cacheBytes int64) *workdir.Manager {
	t.Helper()
	data := t.TempDir()
	m, err := workdir.New(workdir.Config{Dir: filepath.Join(data, "workdir"), Mode: mode, Hide: func() []string { return []string{data} },
		NoNamespaces: noNamespaces, Show: []string{outsideRoot()}, ToolCacheBytes: cacheBytes})
	if errors.Is(err, workdir.ErrUnsupported) && !(requireIsolation && !noNamespaces) {
		t.Skipf("mode %s: %v", mode, err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

// cacheModes runs fn in both view modes and unisolated.
func cacheModes(t *testing.T, cacheBytes int64, fn func(t *testing.T, m *workdir.Manager)) {
	for _, mode := range []workdir.Mode{workdir.ModeOverlay, workdir.ModeCopy} {
		t.Run(string(mode), func(t *testing.T) { fn(t, newCacheManager(t, mode, false, cacheBytes)) })
	}
	t.Run("unisolated", func(t *testing.T) { fn(t, newCacheManager(t, workdir.ModeAuto, true, cacheBytes)) })
}

// goModule is a repository holding a Go module that needs example.com/dep,
// which a module proxy directory (GOPROXY=file://…) serves.
type goModule struct {
	repo  *gitstore.Repo
	dir   string
	tree  gitstore.OID
	proxy string
}

// newGoModule builds the dependency's proxy directory and the module's
// repository, with a go.sum made by the go command from that proxy.
func newGoModule(t testing.TB) *goModule {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	// Below outsideRoot, which the managers of these tests show.
	proxy, err := os.MkdirTemp(outsideRoot(), "proxy-")
	require.NoError(t, err)
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
	for name, content := range map[string]string{
		"go.mod": depMod,
		"dep.go": "package dep\n\n// Double doubles n.\nfunc Double(n int) int { return 2 * n }\n",
	} {
		w, err := zw.Create("example.com/dep@v1.0.0/" + name)
		require.NoError(t, err)
		_, err = w.Write([]byte(content))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	require.NoError(t, zf.Close())

	dir := testrepo.Init(t)
	files := map[string]string{
		"go.mod":            "module example.com/mod\n\ngo 1.21\n\nrequire example.com/dep v1.0.0\n",
		"calc/calc.go":      "package calc\n\nimport \"example.com/dep\"\n\n// Quad is four times n.\nfunc Quad(n int) int { return dep.Double(dep.Double(n)) }\n",
		"calc/calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestQuad(t *testing.T) {\n\tif Quad(2) != 8 {\n\t\tt.Fatal(Quad(2))\n\t}\n}\n",
		"main.go":           "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/mod/calc\"\n)\n\nfunc main() { fmt.Println(calc.Quad(1)) }\n",
	}
	for p, c := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644))
	}
	modcache := t.TempDir()
	cmd := exec.Command("go", "mod", "download", "example.com/dep")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOPROXY=file://"+proxy, "GOSUMDB=off", "GOFLAGS=-mod=mod -modcacherw", "GOMODCACHE="+modcache, "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	cmd = exec.Command("go", "mod", "tidy")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOPROXY=file://"+proxy, "GOSUMDB=off", "GOFLAGS=-modcacherw", "GOMODCACHE="+modcache, "GOTOOLCHAIN=local")
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	testrepo.Git(t, dir, "add", "-A")
	testrepo.Git(t, dir, "commit", "-q", "-m", "module")
	r, err := gitstore.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	head, err := r.ResolveRevision(t.Context(), "HEAD")
	require.NoError(t, err)
	tree, err := r.TreeOf(t.Context(), head)
	require.NoError(t, err)
	return &goModule{repo: r, dir: dir, tree: tree, proxy: proxy}
}

// view is session id's view of the module, as committed.
func (g *goModule) view(id string) workdir.View {
	return workdir.View{
		Session: id, Repo: g.repo, RepoName: "mod", BaseTree: g.tree, Overlay: overlay.New(g.repo.View(g.tree), overlay.Options{}),
		Changed: func(context.Context, int64) ([]string, bool, error) { return nil, true, nil },
	}
}

// run runs script in session id's view with caches c, settling after.
func (g *goModule) run(t testing.TB, m *workdir.Manager, id string, c workdir.Caches, script string, env ...string) workdir.Result {
	t.Helper()
	res, err := g.runErr(t.Context(), m, id, c, script, env...)
	require.NoError(t, err)
	return res
}

// runErr is run for a goroutine other than the test's.
func (g *goModule) runErr(ctx context.Context, m *workdir.Manager, id string, c workdir.Caches, script string, env ...string) (workdir.Result, error) {
	v := g.view(id)
	s, err := m.Prepare(ctx, v)
	if err != nil {
		return workdir.Result{}, err
	}
	res, err := s.Run(ctx, workdir.Command{
		Argv: []string{"/bin/sh", "-c", script}, Workspace: cacheWorkspace, Caches: c,
		Env: append([]string{"GOTOOLCHAIN=local", "GOSUMDB=off"}, env...),
	})
	if err != nil {
		s.Abort()
		return res, err
	}
	return res, s.Settle(ctx, v, nil)
}

// TestSharedGoCaches: the first session's go test downloads the
// dependency from the proxy and builds; a second, fresh session, with the
// proxy turned off (GOPROXY=off: a download would fail), reports
// (cached). Isolated, both see the view at one path and the module there
// (pwd and go env GOMOD agree).
func TestSharedGoCaches(t *testing.T) {
	plainRunOnly(t, "the go command in namespaces (minutes: the standard library once per mode)")
	g := newGoModule(t)
	cacheModes(t, 0, func(t *testing.T, m *workdir.Manager) {
		shared := workdir.Caches{Repo: "mod"}
		script := "pwd; go env GOMOD; go test ./... 2>&1"
		first := g.run(t, m, "s1", shared, script, "GOPROXY=file://"+g.proxy)
		require.Equal(t, 0, first.ExitCode, "%s%s", first.Stdout, first.Stderr)
		assert.Contains(t, string(first.Stdout), "ok  \texample.com/mod/calc")
		assert.NotContains(t, string(first.Stdout), "(cached)")

		second := g.run(t, m, "s2", shared, script, "GOPROXY=off")
		require.Equal(t, 0, second.ExitCode, "%s%s", second.Stdout, second.Stderr)
		lines := strings.SplitN(string(second.Stdout), "\n", 3)
		firstLines := strings.SplitN(string(first.Stdout), "\n", 3)
		if m.Isolated() {
			assert.Equal(t, []string{cacheWorkspace, cacheWorkspace + "/go.mod"}, lines[:2])
			assert.Equal(t, firstLines[:2], lines[:2], "both sessions see the view at one path")
			assert.Contains(t, lines[2], "ok  \texample.com/mod/calc\t(cached)")
		} else {
			// Unisolated each view lives at its own path: the package's
			// results miss, but nothing is downloaded again.
			assert.NotEqual(t, firstLines[0], lines[0])
			assert.Contains(t, lines[2], "ok  \texample.com/mod/calc")
		}
		// The module is in the repository's shared cache, once.
		_, err := os.Stat(filepath.Join(m.CachesDir("mod"), "go-mod", "cache", "download", "example.com", "dep", "@v", "v1.0.0.zip"))
		assert.NoError(t, err)
	})
}

// TestSharedCachesKeepNoSetid: a setuid or setgid file a command leaves
// in its repository's shared caches loses the bits once the command has
// ended, as in the scratch; an ordinary file keeps its mode.
func TestSharedCachesKeepNoSetid(t *testing.T) {
	plainRunOnly(t, "commands in namespaces leaving setid files in the caches")
	g := newGoModule(t)
	cacheModes(t, 0, func(t *testing.T, m *workdir.Manager) {
		shared := workdir.Caches{Repo: "mod"}
		res := g.run(t, m, "s1", shared, `cp /bin/true "$GOCACHE/suid" && chmod 4755 "$GOCACHE/suid" && `+
			`cp /bin/true "$GOCACHE/sgid" && chmod 2755 "$GOCACHE/sgid" && `+
			`cp /bin/true "$GOCACHE/plain" && chmod 0751 "$GOCACHE/plain" && stat -c %a "$GOCACHE/suid"`)
		require.Equal(t, 0, res.ExitCode, "%s%s", res.Stdout, res.Stderr)
		require.Equal(t, "4755\n", string(res.Stdout), "the command could set the bit")
		m.CachesIdle()
		dir := filepath.Join(m.CachesDir("mod"), "go-build")
		for name, want := range map[string]os.FileMode{"suid": 0o755, "sgid": 0o755, "plain": 0o751} {
			st, err := os.Stat(filepath.Join(dir, name))
			require.NoError(t, err)
			assert.Equal(t, want, st.Mode()&(os.ModePerm|os.ModeSetuid|os.ModeSetgid), name)
		}
	})
}

// TestPrivateCaches: a command with private caches neither reads nor
// writes the repository's shared ones: with the proxy off it cannot find
// the module the shared cache holds, and what it puts in its caches stays
// in its session.
func TestPrivateCaches(t *testing.T) {
	plainRunOnly(t, "commands in namespaces with private caches")
	g := newGoModule(t)
	cacheModes(t, 0, func(t *testing.T, m *workdir.Manager) {
		first := g.run(t, m, "s1", workdir.Caches{Repo: "mod"}, "go mod download 2>&1", "GOPROXY=file://"+g.proxy)
		require.Equal(t, 0, first.ExitCode, "%s", first.Stdout)

		private := workdir.Caches{Repo: "mod", Private: true}
		res := g.run(t, m, "s2", private, "go build ./... 2>&1; echo secret > \"$GOCACHE/private-marker\"", "GOPROXY=off")
		assert.Contains(t, string(res.Stdout), "GOPROXY=off", "the private cache lacks the shared module")
		_, err := os.Stat(filepath.Join(m.CachesDir("mod"), "go-build", "private-marker"))
		assert.ErrorIs(t, err, os.ErrNotExist, "a private write reached the shared cache")
		// Its own caches persist across its commands.
		res = g.run(t, m, "s2", private, "cat \"$GOCACHE/private-marker\"")
		assert.Equal(t, "secret\n", string(res.Stdout))
		// A shared session does not see it.
		res = g.run(t, m, "s3", workdir.Caches{Repo: "mod"}, "cat \"$GOCACHE/private-marker\"")
		assert.NotEqual(t, 0, res.ExitCode)
	})
}

// TestCacheEnvironment: the request's own variables win over the cache
// defaults; a command without a repository gets none.
func TestCacheEnvironment(t *testing.T) {
	plainRunOnly(t, "a command's cache variables in namespaces")
	g := newGoModule(t)
	cacheModes(t, 0, func(t *testing.T, m *workdir.Manager) {
		res := g.run(t, m, "s1", workdir.Caches{Repo: "mod"}, "echo \"$GOCACHE|$GOFLAGS|$npm_config_cache|$CARGO_HOME|$XDG_CACHE_HOME\"", "GOFLAGS=-mod=mod")
		at := workdir.CachesInside
		home := workdir.HomeInside
		if !m.Isolated() {
			at = m.CachesDir("mod")
			home = ""
		}
		got := strings.Split(strings.TrimSpace(string(res.Stdout)), "|")
		require.Len(t, got, 5)
		assert.Equal(t, at+"/go-build", got[0])
		assert.Equal(t, "-mod=mod", got[1])
		assert.Equal(t, at+"/npm", got[2])
		assert.Equal(t, at+"/cargo", got[3])
		assert.True(t, strings.HasSuffix(got[4], "/.cache") && strings.HasPrefix(got[4], home), got[4])

		res = g.run(t, m, "s1", workdir.Caches{}, "echo \"[$GOCACHE]\"")
		assert.Equal(t, "[]\n", string(res.Stdout))
	})
}

// TestTrimNeverDuringCommand: a command that ends while another of its
// repository runs starts no trim, however far over the budget the caches
// are; the last one to end does, and it leaves them within the budget.
func TestTrimNeverDuringCommand(t *testing.T) {
	g := newGoModule(t)
	cacheModes(t, 64<<10, func(t *testing.T, m *workdir.Manager) {
		shared := workdir.Caches{Repo: "mod"}
		var wg sync.WaitGroup
		var long workdir.Result
		var longErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Writes 100 KiB, waits until the test has looked after the
			// other command ended (its mark, not a timer), then checks its
			// file is still there.
			long, longErr = g.runErr(t.Context(), m, "long", shared, `head -c 102400 /dev/zero > "$GOCACHE/long"; `+
				`while [ ! -e "$GOCACHE/checked" ]; do sleep 0.02; done; test -e "$GOCACHE/long" && echo kept`)
		}()
		// The short command runs once the long one has written its file.
		longFile := filepath.Join(m.CachesDir("mod"), "go-build", "long")
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			if st, err := os.Stat(longFile); err == nil && st.Size() == 102400 {
				break
			}
			require.True(t, time.Now().Before(deadline), "the long command never wrote its file")
		}
		short := g.run(t, m, "short", shared, `head -c 102400 /dev/zero > "$GOCACHE/short"`)
		require.Equal(t, 0, short.ExitCode)
		m.CachesIdle()
		_, err := os.Stat(longFile)
		require.NoError(t, err, "trimmed while a command of the repository ran")
		require.NoError(t, os.WriteFile(filepath.Join(m.CachesDir("mod"), "go-build", "checked"), nil, 0o644))
		wg.Wait()
		require.NoError(t, longErr)
		require.Equal(t, 0, long.ExitCode, "%s%s", long.Stdout, long.Stderr)
		assert.Equal(t, "kept\n", string(long.Stdout))
		m.CachesIdle()
		assert.LessOrEqual(t, du(t, m.CachesDir("mod")), int64(64<<10))
	})
}

// du is the bytes of the regular files below dir.
func du(t testing.TB, dir string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return err
	}))
	return n
}
