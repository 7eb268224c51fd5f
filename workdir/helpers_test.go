package workdir_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/overlay"
	"github.com/sessiond/sessiond/workdir"
)

// fixture is a repository built at run time and a session-like view over
// it: an overlay, a sequence number and the paths each step changed.
type fixture struct {
	t    testing.TB
	dir  string // the repository's work tree
	repo *gitstore.Repo
	tree gitstore.OID
	ov   *overlay.Overlay
	seq  int64
	log  map[int64][]string
	// readable is the view's read filter (nil: all).
	readable func(string) bool
}

var baseFiles = map[string]string{
	"a.txt":          "alpha\n",
	"b.txt":          "bravo\n",
	"dir/c.txt":      "charlie\n",
	"dir/sub/d.txt":  "delta\n",
	"gone/e.txt":     "echo\n",
	"gone/f.txt":     "foxtrot\n",
	"run.sh":         "#!/bin/sh\necho run\n",
	".gitignore":     "build/\n*.log\n",
	"dir/.gitignore": "*.tmp\n!keep.tmp\n",
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	dir := testrepo.Init(t)
	for p, c := range baseFiles {
		full := filepath.Join(dir, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(c), 0o644))
	}
	require.NoError(t, os.Chmod(filepath.Join(dir, "run.sh"), 0o755))
	require.NoError(t, os.Symlink("a.txt", filepath.Join(dir, "link")))
	testrepo.Git(t, dir, "add", "-A")
	testrepo.Git(t, dir, "commit", "-q", "-m", "base")
	r, err := gitstore.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	tree, err := r.TreeOf(t.Context(), mustRev(t, r, "HEAD"))
	require.NoError(t, err)
	return &fixture{t: t, dir: dir, repo: r, tree: tree, ov: overlay.New(r.View(tree), overlay.Options{}), log: map[int64][]string{}}
}

func mustRev(t testing.TB, r *gitstore.Repo, rev string) gitstore.OID {
	id, err := r.ResolveRevision(t.Context(), rev)
	require.NoError(t, err)
	return id
}

func (f *fixture) view() workdir.View {
	return workdir.View{
		Session: "s1", Repo: f.repo, BaseTree: f.tree, Seq: f.seq, Overlay: f.ov,
		Changed: func(_ context.Context, after int64) ([]string, bool, error) {
			var ps []string
			for s := after + 1; s <= f.seq; s++ {
				ps = append(ps, f.log[s]...)
			}
			return ps, false, nil
		},
		Readable: f.readable,
	}
}

// write changes the view as an API write would.
func (f *fixture) write(p, content string, mode gitstore.Mode) {
	f.t.Helper()
	id, err := f.repo.WriteBlob(f.t.Context(), []byte(content))
	require.NoError(f.t, err)
	require.NoError(f.t, f.ov.Put(f.t.Context(), p, id, mode))
	f.seq++
	f.log[f.seq] = []string{p}
}

func (f *fixture) remove(p string) {
	f.t.Helper()
	require.NoError(f.t, f.ov.Delete(f.t.Context(), p))
	f.seq++
	f.log[f.seq] = []string{p}
}

// record applies changes to the view, as the session engine records them.
func (f *fixture) record(cs []workdir.Change) []string {
	f.t.Helper()
	var paths []string
	for _, c := range cs {
		paths = append(paths, c.Path)
		if c.Deleted {
			require.NoError(f.t, f.ov.Delete(f.t.Context(), c.Path))
			continue
		}
		id, err := f.repo.WriteBlob(f.t.Context(), c.Data)
		require.NoError(f.t, err)
		require.NoError(f.t, f.ov.Put(f.t.Context(), c.Path, id, c.Mode))
	}
	if len(paths) > 0 {
		f.seq++
		f.log[f.seq] = paths
	}
	return paths
}

func newManager(t *testing.T, mode workdir.Mode, noNamespaces ...bool) *workdir.Manager {
	t.Helper()
	data := t.TempDir()
	m, err := workdir.New(workdir.Config{Dir: filepath.Join(data, "workdir"), Mode: mode, Hide: func() []string { return []string{data} },
		NoNamespaces: len(noNamespaces) > 0 && noNamespaces[0], Show: []string{outsideRoot()}})
	wantIsolation := requireIsolation && !(len(noNamespaces) > 0 && noNamespaces[0])
	if errors.Is(err, workdir.ErrUnsupported) && !wantIsolation {
		t.Skipf("mode %s: %v", mode, err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	if wantIsolation {
		require.True(t, m.Isolated(), "SESSIOND_TEST_REQUIRE_ISOLATION=1: this machine must give commands their namespaces")
	}
	return m
}

// requireIsolation turns the skips of a kernel without namespaces or
// overlayfs into failures: CI sets it, since its machine has both, so a
// broken helper cannot pass as a kernel that refuses.
var requireIsolation = os.Getenv("SESSIOND_TEST_REQUIRE_ISOLATION") == "1"

// forModes runs fn once per mode, and once more without namespaces (as
// where the kernel refuses them: copy mode, unisolated).
func forModes(t *testing.T, fn func(t *testing.T, m *workdir.Manager)) {
	for _, mode := range []workdir.Mode{workdir.ModeOverlay, workdir.ModeCopy} {
		t.Run(string(mode), func(t *testing.T) { fn(t, newManager(t, mode)) })
	}
	t.Run("unisolated", func(t *testing.T) {
		m := newManager(t, workdir.ModeAuto, true)
		require.False(t, m.Isolated())
		require.Equal(t, workdir.ModeCopy, m.Mode())
		fn(t, m)
	})
}

// runSh prepares, runs script with sh and captures.
func (f *fixture) runSh(m *workdir.Manager, script string) (workdir.Result, []workdir.Change, *workdir.Scratch) {
	f.t.Helper()
	s, err := m.Prepare(f.t.Context(), f.view())
	require.NoError(f.t, err)
	res, err := s.Run(f.t.Context(), workdir.Command{Argv: []string{"/bin/sh", "-c", script}, Network: true})
	require.NoError(f.t, err)
	cs, err := s.Capture(f.t.Context(), f.view(), 0)
	require.NoError(f.t, err)
	return res, cs, s
}

// gitOracle runs script in a fresh clone and returns what git records:
// path → "D" or "<mode> <blob>".
func gitOracle(t *testing.T, repoDir, script string) map[string]string {
	t.Helper()
	clone := t.TempDir()
	testrepo.Git(t, clone, "clone", "-q", repoDir, ".")
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = clone
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	testrepo.Git(t, clone, "add", "-A")
	raw := testrepo.Git(t, clone, "diff", "--cached", "--raw", "--no-renames", "--no-abbrev", "HEAD")
	want := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(raw), "\n") {
		if line == "" {
			continue
		}
		meta, p, _ := strings.Cut(line, "\t")
		fs := strings.Fields(meta)
		if fs[4] == "D" {
			want[p] = "D"
		} else {
			want[p] = fs[1] + " " + fs[3]
		}
	}
	return want
}

func describe(cs []workdir.Change) map[string]string {
	got := map[string]string{}
	for _, c := range cs {
		if c.Deleted {
			got[c.Path] = "D"
		} else {
			got[c.Path] = c.Mode.String() + " " + c.OID.String()
		}
	}
	return got
}

func paths(cs []workdir.Change) []string {
	var ps []string
	for _, c := range cs {
		ps = append(ps, c.Path)
	}
	sort.Strings(ps)
	return ps
}

// plainRunOnly skips t in make test's race detector run (-short): what
// says what t runs, all of which the plain run covers, with no goroutines
// of the daemon's own against each other for the detector to watch.
func plainRunOnly(t *testing.T, what string) {
	t.Helper()
	if testing.Short() {
		t.Skip(what + ": the plain run covers it; nothing of the daemon's races here")
	}
}
