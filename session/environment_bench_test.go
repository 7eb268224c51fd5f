package session_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/environment"
	"github.com/sessiond/sessiond/internal/testengine"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/session"
	"github.com/sessiond/sessiond/workdir"
)

// benchPackages is the number of npm packages the benchmark's Node
// project installs.
const benchPackages = 500

// npmTarball is an npm package tarball (package/package.json and
// package/index.js) made in memory, and its integrity.
func npmTarball(tb testing.TB, name string) ([]byte, string) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range []struct{ name, body string }{
		{"package/package.json", fmt.Sprintf(`{"name":%q,"version":"1.0.0","main":"index.js"}`, name)},
		{"package/index.js", fmt.Sprintf("module.exports = %q;\n", name)},
	} {
		require.NoError(tb, tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), ModTime: time.Unix(499162500, 0), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(f.body))
		require.NoError(tb, err)
	}
	require.NoError(tb, tw.Close())
	require.NoError(tb, gz.Close())
	sum := sha512.Sum512(buf.Bytes())
	return buf.Bytes(), "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
}

// nodeBenchProject writes n packages' tarballs into dir, adds them to the
// npm cache at cache, and returns the project's package.json and
// package-lock.json locking them (resolved where nothing listens).
func nodeBenchProject(tb testing.TB, dir, cache string, n int) map[string]string {
	tb.Helper()
	deps := map[string]string{}
	pkgs := map[string]any{}
	var tgzs []string
	for i := range n {
		name := fmt.Sprintf("dep-%d", i)
		tgz, integrity := npmTarball(tb, name)
		p := filepath.Join(dir, name+"-1.0.0.tgz")
		require.NoError(tb, os.WriteFile(p, tgz, 0o644))
		tgzs = append(tgzs, p)
		deps[name] = "1.0.0"
		pkgs["node_modules/"+name] = map[string]string{"version": "1.0.0", "resolved": "http://127.0.0.1:9/" + name + "/-/" + name + "-1.0.0.tgz", "integrity": integrity}
	}
	pkgs[""] = map[string]any{"name": "proj", "version": "1.0.0", "dependencies": deps}
	for len(tgzs) > 0 {
		k := min(100, len(tgzs))
		cmd := exec.Command("npm", append([]string{"cache", "add"}, tgzs[:k]...)...)
		cmd.Env = append(os.Environ(), "npm_config_cache="+cache)
		out, err := cmd.CombinedOutput()
		require.NoError(tb, err, string(out))
		tgzs = tgzs[k:]
	}
	pj, _ := json.Marshal(map[string]any{"name": "proj", "version": "1.0.0", "dependencies": deps})
	lock, _ := json.Marshal(map[string]any{"name": "proj", "version": "1.0.0", "lockfileVersion": 3, "requires": true, "packages": pkgs})
	return map[string]string{"package.json": string(pj), "package-lock.json": string(lock), ".gitignore": "node_modules/\n"}
}

// commitOnto commits files onto branch main of the bare repository repo
// with a temporary index (no work tree: the repository may be large).
func commitOnto(tb testing.TB, repo string, files map[string]string) {
	tb.Helper()
	index := filepath.Join(tb.TempDir(), "index")
	git := func(stdin string, args ...string) string {
		cmd := exec.Command("git", append([]string{"--git-dir", repo}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+index, "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@b", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@b")
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.Output()
		require.NoError(tb, err, args)
		return strings.TrimSpace(string(out))
	}
	git("", "read-tree", "main")
	for p, c := range files {
		id := git(c, "hash-object", "-w", "--stdin")
		git("", "update-index", "--add", "--cacheinfo", "100644,"+id+","+p)
	}
	tree := git("", "write-tree")
	commit := git("", "commit-tree", tree, "-p", "main", "-m", "node project")
	git("", "update-ref", "refs/heads/main", commit)
}

// BenchmarkEnvironmentFreshSession: a fresh session whose environment
// layer exists (a Node project of 500 installed packages, setup npm ci
// --offline) runs `node -e 'require("dep-0")'`: the whole engine call
// (prepare the view with the layer stacked, run, capture, settle). Beside
// it, once, in the same run: `git worktree add` plus `npm ci --offline`
// with the same warm npm cache (worktree-npm-ci-ms), and the disk of ten
// sessions on the one layer (their scratch directories plus the layer)
// against ten installs' node_modules.
func BenchmarkEnvironmentFreshSession(b *testing.B) {
	if _, err := exec.LookPath("npm"); err != nil {
		b.Skip("no npm")
	}
	files := 100_000
	if os.Getenv("SESSIOND_BENCH_ENV_FILES") == "1000" {
		files = 1000
	}
	b.Run(fmt.Sprintf("packages=%d/files=%d", benchPackages, files), func(b *testing.B) {
		ctx := context.Background()
		data := b.TempDir()
		repo := testrepo.CloneLocal(b, testrepo.CachedSynthetic(b, files))
		cache := filepath.Join(data, "workdir", "caches", "r", "npm")
		require.NoError(b, os.MkdirAll(cache, 0o700))
		commitOnto(b, repo, nodeBenchProject(b, b.TempDir(), cache, benchPackages))

		st, err := db.OpenSQLite(ctx, filepath.Join(data, "sessiond.db"))
		require.NoError(b, err)
		defer st.Close()
		wd, err := workdir.New(workdir.Config{Dir: filepath.Join(data, "workdir"), Mode: workdir.ModeOverlay})
		if err != nil {
			b.Skipf("overlay: %v", err)
		}
		defer wd.Close()
		en := testengine.New(st, data, session.Config{Workdirs: wd})
		defer en.Close()
		_, err = en.Repos.Register(ctx, "r", repo)
		require.NoError(b, err)
		_, err = en.Repos.SetEnvironment(ctx, "r", repos.EnvironmentUpdate{SetConfig: true,
			Config: environment.Config{Setup: []environment.Step{{Command: "npm ci --offline --no-audit --no-fund"}}}})
		require.NoError(b, err)
		create := func() session.Session {
			s, err := en.Exec.Create(ctx, session.CreateOptions{Repo: "r", Base: "main", AgentID: "bench"})
			require.NoError(b, err)
			return s
		}
		run := func(s session.Session) session.ExecResult {
			res, err := en.Exec.Exec(ctx, s.ID, session.ExecOptions{Argv: []string{"node", "-e", `require("dep-0"); require("dep-499")`}})
			require.NoError(b, err)
			require.Equal(b, 0, res.ExitCode, string(res.Stderr)+res.Environment.Log+res.Environment.Error)
			return res
		}
		first := run(create()) // builds the layer
		require.True(b, first.Environment.Built)
		layers := wd.Environments("r")
		require.Len(b, layers, 1)

		// git worktree add + npm ci --offline, same cache, same run.
		wt := filepath.Join(b.TempDir(), "wt")
		start := time.Now()
		testrepo.Git(b, "", "--git-dir", repo, "worktree", "add", "-q", wt, "main")
		npm := exec.Command("npm", "ci", "--offline", "--no-audit", "--no-fund")
		npm.Dir = wt
		npm.Env = append(os.Environ(), "npm_config_cache="+cache)
		out, err := npm.CombinedOutput()
		require.NoError(b, err, string(out))
		baseline := time.Since(start)
		nodeModules := diskBytes(b, filepath.Join(wt, "node_modules"))
		// The command alone, on the host, in the worktree: what the
		// engine's call adds is the rest.
		start = time.Now()
		node := exec.Command("node", "-e", `require("dep-0"); require("dep-499")`)
		node.Dir = wt
		out, err = node.CombinedOutput()
		require.NoError(b, err, string(out))
		hostNode := time.Since(start)

		var toStart, prepare, resolve, spawn, initT, mounts, command, whole, hostNodes time.Duration
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			s := create()
			b.StartTimer()
			begin := time.Now()
			res := run(s)
			whole += time.Since(begin)
			b.StopTimer()
			require.False(b, res.Environment.Built)
			// node's own time, on the host, beside each iteration.
			start := time.Now()
			node := exec.Command("node", "-e", `require("dep-0"); require("dep-499")`)
			node.Dir = wt
			out, err := node.CombinedOutput()
			require.NoError(b, err, string(out))
			hostNodes += time.Since(start)
			toStart += res.ToStart
			prepare += res.Prepare
			resolve += res.Resolve
			command += res.Duration
			spawn += res.Setup.Spawn
			initT += res.Setup.Init
			mounts += res.Setup.Mounts
			b.StartTimer()
		}
		b.StopTimer()
		testrepo.Git(b, "", "--git-dir", repo, "worktree", "remove", "--force", wt)
		sessions := filepath.Join(data, "workdir", "sessions")
		before := diskBytes(b, sessions)
		for range 10 {
			run(create())
		}
		ten := diskBytes(b, sessions) - before + layers[0].Bytes
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
		b.ReportMetric(ms(toStart), "to-start-ms")
		b.ReportMetric(ms(resolve), "resolve-ms")
		b.ReportMetric(ms(prepare-resolve), "view-prepare-ms")
		b.ReportMetric(ms(command), "command-ms")
		b.ReportMetric(ms(whole-toStart-command), "after-ms")
		b.ReportMetric(ms(hostNodes), "host-node-each-ms")
		b.ReportMetric(ms(prepare), "prepare-ms")
		b.ReportMetric(ms(spawn), "spawn-ms")
		b.ReportMetric(ms(initT), "init-ms")
		b.ReportMetric(ms(mounts), "mounts-ms")
		b.ReportMetric(float64(baseline.Milliseconds()), "worktree-npm-ci-ms")
		b.ReportMetric(float64(hostNode.Microseconds())/1000, "host-node-ms")
		b.ReportMetric(float64(layers[0].BuildMS), "layer-build-ms")
		b.ReportMetric(float64(layers[0].Files), "layer-files")
		b.ReportMetric(float64(ten), "disk-10-sessions-bytes")
		b.ReportMetric(float64(10*nodeModules), "disk-10-installs-bytes")
	})
}
