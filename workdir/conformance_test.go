package workdir_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/workdir"
)

// The conformance suite: every mode must pass all of it.

const editScript = `set -e
echo changed > a.txt
rm b.txt
mv dir/c.txt dir/moved.txt
chmod +x a.txt
ln -s dir/sub/d.txt newlink
rm link && ln -s b.txt link
mkdir -p fresh/deep && echo new > fresh/deep/n.txt
rm -r gone
mkdir -p build && echo out > build/out.bin
echo log > x.log
echo tmp > dir/y.tmp
echo keep > dir/keep.tmp
mkdir empty
`

func TestScriptMatchesGit(t *testing.T) {
	plainRunOnly(t, "git CLI fidelity scripts in namespaces")
	forModes(t, func(t *testing.T, m *workdir.Manager) {
		f := newFixture(t)
		want := gitOracle(t, f.dir, editScript)
		res, cs, s := f.runSh(m, editScript)
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, want, describe(cs))
		s.Abort()
	})
}

func TestAPIWritesVisibleAndIgnoredOutputsPersist(t *testing.T) {
	plainRunOnly(t, "commands in namespaces")
	forModes(t, func(t *testing.T, m *workdir.Manager) {
		f := newFixture(t)
		res, cs, s := f.runSh(m, "mkdir -p build && echo cached > build/cache && echo one > one.txt")
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, []string{"one.txt"}, paths(cs))
		require.NoError(t, s.Settle(t.Context(), f.view(), f.record(cs)))

		// Between commands, through the "API".
		f.write("api.txt", "from api\n", gitstore.ModeFile)
		f.write("dir/c.txt", "rewritten\n", gitstore.ModeExec)
		f.remove("a.txt")
		f.remove("gone")
		f.write("gone/back.txt", "back\n", gitstore.ModeFile)

		res, cs, s = f.runSh(m, `set -e
cat api.txt one.txt build/cache dir/c.txt
test -x dir/c.txt
test ! -e a.txt
test ! -e gone/e.txt
ls gone`)
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, "from api\none\ncached\nrewritten\nback.txt\n", string(res.Stdout))
		assert.Empty(t, cs)
		require.NoError(t, s.Settle(t.Context(), f.view(), nil))

		// Undo through the API, then a command sees the base again.
		f.write("dir/c.txt", baseFiles["dir/c.txt"], gitstore.ModeFile)
		res, cs, s = f.runSh(m, "cat dir/c.txt && test ! -x dir/c.txt && rm gone/back.txt")
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, "charlie\n", string(res.Stdout))
		assert.Equal(t, []string{"gone/back.txt"}, paths(cs))
		s.Abort()
	})
}

func TestSettleUndoesRefused(t *testing.T) {
	plainRunOnly(t, "commands in namespaces and the settle of what they changed")
	forModes(t, func(t *testing.T, m *workdir.Manager) {
		f := newFixture(t)
		res, cs, s := f.runSh(m, "mkdir -p dir/.git && echo x > dir/.git/config && echo keep > ok.txt && mkfifo pipe && echo no > a.txt")
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, []string{"a.txt", "dir/.git/config", "ok.txt", "pipe"}, paths(cs))
		for _, c := range cs {
			if c.Path == "pipe" {
				assert.Equal(t, "fifo", c.Special)
			}
		}
		// Record only ok.txt; the rest goes back.
		var keep []workdir.Change
		for _, c := range cs {
			if c.Path == "ok.txt" {
				keep = append(keep, c)
			}
		}
		f.record(keep)
		require.NoError(t, s.Settle(t.Context(), f.view(), paths(cs)))
		res, cs, s = f.runSh(m, "test ! -e dir/.git/config && test ! -e pipe && cat a.txt ok.txt")
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, "alpha\nkeep\n", string(res.Stdout))
		assert.Empty(t, cs)
		s.Abort()
	})
}

func TestCrashRebuildsScratch(t *testing.T) {
	plainRunOnly(t, "commands in namespaces and a rebuilt scratch")
	forModes(t, func(t *testing.T, m *workdir.Manager) {
		f := newFixture(t)
		_, cs, s := f.runSh(m, "echo lost > a.txt && echo lost > new.txt")
		require.Len(t, cs, 2)
		// No Settle: the daemon died before recording.
		s.Abort()
		res, cs, s := f.runSh(m, "cat a.txt; test ! -e new.txt")
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, "alpha\n", string(res.Stdout))
		assert.Empty(t, cs)
		s.Abort()
	})
}

func TestTimeoutKillsTree(t *testing.T) {
	forModes(t, func(t *testing.T, m *workdir.Manager) {
		f := newFixture(t)
		s, err := m.Prepare(t.Context(), f.view())
		require.NoError(t, err)
		defer s.Abort()
		start := time.Now()
		res, err := s.Run(t.Context(), workdir.Command{
			Argv:    []string{"/bin/sh", "-c", `trap "" TERM; (trap "" TERM; sleep 60) & sleep 60; echo never`},
			Timeout: 300 * time.Millisecond,
		})
		require.NoError(t, err)
		assert.True(t, res.TimedOut)
		assert.Equal(t, "SIGKILL", res.Signal)
		assert.NotContains(t, string(res.Stdout), "never")
		// The background sleep held stdout open: Run returned only because
		// it died too.
		assert.Less(t, time.Since(start), 30*time.Second)
	})
}

func TestHidesDataAndTmp(t *testing.T) {
	plainRunOnly(t, "commands in namespaces")
	forModes(t, func(t *testing.T, m *workdir.Manager) {
		if !m.Isolated() {
			t.Skip("no namespaces here")
		}
		f := newFixture(t)
		secret := filepath.Join(t.TempDir(), "token.key")
		require.NoError(t, os.WriteFile(secret, []byte("secret"), 0o600))
		host, err := os.CreateTemp("", "sessiond-host-*")
		require.NoError(t, err)
		host.Close()
		t.Cleanup(func() { os.Remove(host.Name()) })
		res, _, s := f.runSh(m, "cat "+secret+"; ls "+f.dir+"/.git; ls /tmp; git rev-parse --git-dir")
		defer s.Abort()
		assert.NotContains(t, string(res.Stdout), "secret")
		assert.NotContains(t, string(res.Stdout), "HEAD")
		assert.NotContains(t, string(res.Stdout), filepath.Base(host.Name()))
		assert.Contains(t, string(res.Stderr), "not a git repository")
	})
}

func TestNoNetwork(t *testing.T) {
	plainRunOnly(t, "commands in namespaces without a network")
	forModes(t, func(t *testing.T, m *workdir.Manager) {
		if !m.Isolated() {
			t.Skip("no namespaces here")
		}
		f := newFixture(t)
		s, err := m.Prepare(t.Context(), f.view())
		require.NoError(t, err)
		defer s.Abort()
		res, err := s.Run(t.Context(), workdir.Command{Argv: []string{"cat", "/proc/net/dev"}})
		require.NoError(t, err)
		lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
		assert.Len(t, lines, 3, string(res.Stdout)) // two header lines and lo
	})
}

func TestExitCodeAndOutputCap(t *testing.T) {
	forModes(t, func(t *testing.T, m *workdir.Manager) {
		f := newFixture(t)
		s, err := m.Prepare(t.Context(), f.view())
		require.NoError(t, err)
		defer s.Abort()
		var streamed strings.Builder
		res, err := s.Run(t.Context(), workdir.Command{
			Argv: []string{"/bin/sh", "-c", "seq 1 2000; echo err >&2; exit 3"}, OutputCap: 100,
			Output: func(stream string, p []byte) {
				if stream == "stdout" {
					streamed.Write(p)
				}
			},
			Network: true,
		})
		require.NoError(t, err)
		assert.Equal(t, 3, res.ExitCode)
		assert.True(t, res.OutputTruncated)
		assert.Len(t, res.Stdout, 100)
		assert.True(t, strings.HasSuffix(string(res.Stdout), "1999\n2000\n"))
		assert.Equal(t, "err\n", string(res.Stderr))
		assert.True(t, strings.HasPrefix(streamed.String(), "1\n2\n3\n"))

		res, err = s.Run(t.Context(), workdir.Command{Argv: []string{"no-such-program-here"}})
		require.NoError(t, err)
		assert.Equal(t, 127, res.ExitCode)
	})
}

// outsideRoot is a host directory outside the view that commands see
// read-only (the managers of these tests show it): wherever the tests
// run, below /tmp or a home too, so nothing depends on where the
// repository is cloned. A run as another user is handed one it may
// write.
var outsideRoot = sync.OnceValue(func() string {
	if dir := os.Getenv(outsideEnv); dir != "" {
		return dir
	}
	dir, err := os.MkdirTemp("", "sessiond-outside-")
	if err != nil {
		panic(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		panic(err)
	}
	return dir
})

// outsideDir is a fresh directory below outsideRoot.
func outsideDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp(outsideRoot(), "outside-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func TestWritesOutsideViewFail(t *testing.T) {
	plainRunOnly(t, "commands in namespaces writing outside the view")
	forModes(t, func(t *testing.T, m *workdir.Manager) {
		if !m.Isolated() {
			t.Skip("without namespaces the file system outside the view stays writable (documented)")
		}
		f := newFixture(t)
		out := outsideDir(t)
		// A symlink out of the view that the view already has.
		f.write("ext", out, gitstore.ModeSymlink)
		res, cs, s := f.runSh(m, `try() { if "$@" 2>>errs; then echo "$1 wrote"; else echo "$1 refused"; fi; }
ln -s `+out+` made
try sh -c 'echo x > made/through-new-link'
try sh -c 'echo x > ext/through-old-link'
try sh -c 'echo x > `+out+`/absolute'
try mkdir ext/dir
try touch /tmp/t "$HOME/h" inside.txt
try sh -c 'echo x > /dev/null'
cat errs >&2; rm errs`)
		defer s.Abort()
		assert.Equal(t, "sh refused\nsh refused\nsh refused\nmkdir refused\ntouch wrote\nsh wrote\n", string(res.Stdout))
		assert.Contains(t, string(res.Stderr), "Read-only file system")
		left, err := os.ReadDir(out)
		require.NoError(t, err)
		assert.Empty(t, left, "nothing was written outside the view")
		assert.Equal(t, []string{"inside.txt", "made"}, paths(cs))
	})
}

func TestUnisolated(t *testing.T) {
	// Overlay mode needs a mount namespace: without one it is refused,
	// not quietly turned into something else.
	data := t.TempDir()
	_, err := workdir.New(workdir.Config{Dir: filepath.Join(data, "workdir"), Mode: workdir.ModeOverlay, NoNamespaces: true})
	require.ErrorIs(t, err, workdir.ErrUnsupported)

	m := newManager(t, workdir.ModeCopy, true)
	assert.False(t, m.Isolated())
	f := newFixture(t)
	res, cs, s := f.runSh(m, "echo changed > a.txt && echo new > n.txt && pwd")
	defer s.Abort()
	require.Equal(t, 0, res.ExitCode, string(res.Stderr))
	assert.False(t, res.Isolated)
	assert.Equal(t, []string{"a.txt", "n.txt"}, paths(cs))
	// The command runs in the scratch's copy itself, where the data
	// directory is plain to see.
	assert.Contains(t, string(res.Stdout), filepath.Join("workdir", "sessions", "s1", "view"))
}

// A view that hides what the session may not read: those files are not
// in the directory, a command that writes there changes nothing of them
// once refused and settled, and one that removes a directory removes
// only what it could see.
func TestHidesUnreadable(t *testing.T) {
	plainRunOnly(t, "commands in namespaces on a read-limited view")
	forModes(t, func(t *testing.T, m *workdir.Manager) {
		f := newFixture(t)
		// gone/ entirely, one file beside others (dir/c.txt), and a
		// directory whose only file is hidden (dir/sub).
		f.readable = func(p string) bool {
			return !strings.HasPrefix(p, "gone/") && p != "dir/c.txt" && p != "dir/sub/d.txt"
		}
		res, cs, s := f.runSh(m, `set -e
ls -A . dir | tr '\n' ' '; echo
test ! -e gone && test ! -e dir/c.txt && test ! -e dir/sub
cat dir/c.txt 2>/dev/null || echo unreadable
echo mine > dir/c.txt
mkdir gone && echo mine > gone/e.txt
echo ok > ok.txt`)
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, ".: .gitignore a.txt b.txt dir link run.sh  dir: .gitignore \nunreadable\n", string(res.Stdout))
		// The writes over hidden files come back (for the caller to
		// refuse); nothing hidden comes back deleted.
		assert.Equal(t, []string{"dir/c.txt", "gone/e.txt", "ok.txt"}, paths(cs))
		var keep []workdir.Change
		for _, c := range cs {
			if c.Path == "ok.txt" {
				keep = append(keep, c)
			}
		}
		f.record(keep)
		require.NoError(t, s.Settle(t.Context(), f.view(), paths(cs)))

		// An API write beside a hidden file keeps it hidden.
		f.write("dir/api.txt", "api\n", gitstore.ModeFile)
		res, cs, s = f.runSh(m, `set -e
test ! -e gone && test ! -e dir/c.txt && test ! -e dir/sub
ls -A dir | tr '\n' ' '; echo
rm -rf dir && mkdir dir && echo n > dir/n.txt`)
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, ".gitignore api.txt \n", string(res.Stdout))
		// Removing dir removed what the command saw of it.
		assert.Equal(t, map[string]string{"dir/.gitignore": "D", "dir/api.txt": "D", "dir/n.txt": describe(cs)["dir/n.txt"]}, describe(cs))
		require.NoError(t, s.Settle(t.Context(), f.view(), f.record(cs)))
		c, err := f.ov.Stat(t.Context(), "dir/c.txt")
		require.NoError(t, err, "the hidden file is still in the record")
		assert.Equal(t, gitstore.HashObject(gitstore.KindBlob, []byte(baseFiles["dir/c.txt"])), c.OID)

		// Rebuilt around the change, the directory still hides them.
		res, cs, s = f.runSh(m, "ls -A dir; test ! -e dir/sub && test ! -e gone")
		defer s.Abort()
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, "n.txt\n", string(res.Stdout))
		assert.Empty(t, cs)
	})
}
