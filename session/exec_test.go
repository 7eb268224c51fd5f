package session_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/internal/testengine"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/overlay"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/session"
	"github.com/sessiond/sessiond/workdir"
)

// execEnv is an engine with view directories in one mode, over a small Go
// module built at run time.
type execEnv struct {
	*env
	wd *workdir.Manager
}

var moduleFiles = map[string]string{
	"go.mod":        "module example.com/m\n\ngo 1.21\n",
	"add.go":        "package m\n\nfunc Add(a, b int) int { return a + b }\n",
	"add_test.go":   "package m\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 2) != 4 {\n\t\tt.Fatal(\"2+2\")\n\t}\n}\n",
	".gitignore":    "build/\n*.out\n",
	"src/keep.txt":  "keep\n",
	"docs/read.txt": "read me\n",
}

func newExecEnv(t *testing.T, mode workdir.Mode, limits ...session.Limits) *execEnv {
	t.Helper()
	return newExecEnvWith(t, workdir.Config{Mode: mode}, limits...)
}

// newExecEnvWith is newExecEnv with more of the workdir configuration
// (its directory and hidden paths are filled in).
func newExecEnvWith(t *testing.T, cfg workdir.Config, limits ...session.Limits) *execEnv {
	t.Helper()
	mode := cfg.Mode
	repo := testrepo.Init(t)
	for p, c := range moduleFiles {
		full := filepath.Join(repo, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(c), 0o644))
	}
	testrepo.Git(t, repo, "add", "-A")
	testrepo.Git(t, repo, "commit", "-q", "-m", "module")
	e := &env{t: t, dataDir: t.TempDir(), repoDir: repo}
	st, err := db.OpenSQLite(context.Background(), filepath.Join(e.dataDir, "sessiond.db"))
	require.NoError(t, err)
	e.store = st
	var en *testengine.Engine
	cfg.Dir = filepath.Join(e.dataDir, "workdir")
	cfg.Hide = func() []string { return en.Repos.Hidden(context.Background()) }
	// This machine's Go build cache, read-only, for goEnv.
	cfg.Show = append(cfg.Show, hostGoCache(t))
	wd, err := workdir.New(cfg)
	requireIsolation := os.Getenv("SESSIOND_TEST_REQUIRE_ISOLATION") == "1" && !cfg.NoNamespaces
	if errors.Is(err, workdir.ErrUnsupported) && !requireIsolation {
		t.Skipf("mode %s: %v", mode, err)
	}
	require.NoError(t, err)
	if requireIsolation {
		require.True(t, wd.Isolated(), "SESSIOND_TEST_REQUIRE_ISOLATION=1: this machine must give commands their namespaces")
	}
	var lim session.Limits
	if len(limits) > 0 {
		lim = limits[0]
	}
	en = testengine.New(st, e.dataDir, session.Config{Workdirs: wd, Limits: lim},
		session.ExecConfig{MaxTimeout: time.Minute})
	e.en, e.m = en, en.Sessions
	t.Cleanup(func() { wd.Close(); en.Close(); st.Close() })
	_, err = en.Repos.Register(t.Context(), "r", repo)
	require.NoError(t, err)
	return &execEnv{env: e, wd: wd}
}

func forExecModes(t *testing.T, fn func(t *testing.T, e *execEnv)) {
	for _, mode := range []workdir.Mode{workdir.ModeOverlay, workdir.ModeCopy} {
		t.Run(string(mode), func(t *testing.T) { fn(t, newExecEnv(t, mode)) })
	}
}

func (e *execEnv) sh(id uuid.UUID, script string) session.ExecResult {
	e.t.Helper()
	res, err := e.en.Exec.Exec(e.t.Context(), id, session.ExecOptions{Command: script})
	require.NoError(e.t, err)
	return res
}

// goEnv lets `go` in the view reuse this machine's build cache (the
// command's own HOME starts empty) and stay offline.
func goEnv(t *testing.T) map[string]string {
	return map[string]string{"GOCACHE": hostGoCache(t), "GOPROXY": "off", "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"}
}

func hostGoCache(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}

func TestExecGoTestPassesAndFails(t *testing.T) {
	plainRunOnly(t, "go test in namespaces")
	forExecModes(t, func(t *testing.T, e *execEnv) {
		s := e.create(session.CreateOptions{})
		run := func() session.ExecResult {
			res, err := e.en.Exec.Exec(t.Context(), s.ID, session.ExecOptions{Argv: []string{"go", "test", "./..."}, Env: goEnv(t)})
			require.NoError(t, err)
			return res
		}
		res := run()
		require.Equal(t, 0, res.ExitCode, string(res.Stdout)+string(res.Stderr))
		assert.Contains(t, string(res.Stdout), "ok  \texample.com/m")
		assert.Nil(t, res.Mutation, "go test changes nothing tracked")

		e.write(s.ID, "add.go", "package m\n\nfunc Add(a, b int) int { return a - b }\n")
		res = run()
		assert.Equal(t, 1, res.ExitCode)
		assert.Contains(t, string(res.Stdout), "FAIL")
		assert.True(t, res.Isolated == e.wd.Isolated())
	})
}

func TestExecRecordsOneMutation(t *testing.T) {
	plainRunOnly(t, "commands in namespaces recorded as a mutation")
	forExecModes(t, func(t *testing.T, e *execEnv) {
		s := e.create(session.CreateOptions{})
		res := e.sh(s.ID, "echo new > new.txt && rm docs/read.txt && chmod +x add.go && mkdir -p build && echo o > build/o && echo x > a.out && exit 3")
		assert.Equal(t, 3, res.ExitCode)
		require.NotNil(t, res.Mutation)
		assert.Equal(t, session.OpExec, res.Mutation.Op)
		assert.ElementsMatch(t, []session.ExecChange{
			{Path: "add.go", Status: overlay.Modified, Mode: 0o100755},
			{Path: "docs/read.txt", Status: overlay.Deleted},
			{Path: "new.txt", Status: overlay.Added, Mode: 0o100644},
		}, res.Changes)
		assert.Empty(t, res.Rejected)

		ms, err := e.m.Mutations(t.Context(), s.ID, 0, 0)
		require.NoError(t, err)
		require.Len(t, ms, 1)
		require.NotNil(t, ms[0].Exec)
		assert.Equal(t, []string{"/bin/sh", "-c", "echo new > new.txt && rm docs/read.txt && chmod +x add.go && mkdir -p build && echo o > build/o && echo x > a.out && exit 3"}, ms[0].Exec.Argv)
		assert.Equal(t, 3, ms[0].Exec.ExitCode)
		// (A mode-only change is not in the log's paths yet: issue 13.)
		assert.Subset(t, ms[0].Paths, []string{"docs/read.txt", "new.txt"})
		evs, err := e.en.Events.List(t.Context(), events.Filter{Session: s.ID})
		require.NoError(t, err)
		var execEvents int
		for _, ev := range evs {
			if ev.Type == session.EventExecRecorded {
				execEvents++
				assert.Contains(t, string(ev.Payload), `"exit_code":3`)
			}
		}
		assert.Equal(t, 1, execEvents)

		// Ignored outputs stay in the scratch, never in the record.
		assert.Equal(t, "new\n", e.read(s.ID, "new.txt"))
		ok, err := e.m.Exists(t.Context(), s.ID, "build/o")
		require.NoError(t, err)
		assert.False(t, ok)
		cp, err := e.m.Checkpoint(t.Context(), s.ID, "after", "")
		require.NoError(t, err)
		assert.NotContains(t, testrepo.Git(t, e.repoDir, "ls-tree", "-r", "--name-only", cp.Commit.String()), "build/")
		res = e.sh(s.ID, "cat build/o a.out new.txt")
		assert.Equal(t, "o\nx\nnew\n", string(res.Stdout))
		assert.Nil(t, res.Mutation)
		cs, err := e.cs().Submit(t.Context(), s.ID, changeset.SubmitOptions{})
		require.NoError(t, err)
		_, patch, err := e.cs().Diff(t.Context(), cs.ID)
		require.NoError(t, err)
		var diffed []string
		for _, f := range patch.Files {
			diffed = append(diffed, f.NewPath+f.OldPath)
		}
		assert.NotContains(t, strings.Join(diffed, " "), "build/")
		assert.NotContains(t, strings.Join(diffed, " "), "a.out")

		// The record survives a restart and the next command sees it.
		e.restart()
	})
}

func TestExecBusyAndReadsDuring(t *testing.T) {
	forExecModes(t, func(t *testing.T, e *execEnv) {
		s := e.create(session.CreateOptions{})
		started := make(chan struct{})
		done := make(chan session.ExecResult)
		go func() {
			var once bool
			res, err := e.en.Exec.Exec(context.Background(), s.ID, session.ExecOptions{
				Command: "echo go; sleep 1; echo late > late.txt",
				Output: func(string, []byte) {
					if !once {
						once = true
						close(started)
					}
				},
			})
			assert.NoError(t, err)
			done <- res
		}()
		<-started
		_, _, err := e.m.Write(t.Context(), s.ID, "x.txt", []byte("x"), session.WriteOptions{})
		assert.ErrorIs(t, err, session.ErrBusy)
		_, err = e.en.Exec.Exec(t.Context(), s.ID, session.ExecOptions{Command: "true"})
		assert.ErrorIs(t, err, session.ErrBusy)
		assert.Equal(t, "keep\n", e.read(s.ID, "src/keep.txt"))
		res := <-done
		require.NotNil(t, res.Mutation)
		e.write(s.ID, "x.txt", "after\n")
		res = e.sh(s.ID, "cat x.txt late.txt")
		assert.Equal(t, "after\nlate\n", string(res.Stdout))
	})
}

func TestExecRefusesBadInput(t *testing.T) {
	e := newExecEnv(t, workdir.ModeCopy)
	s := e.create(session.CreateOptions{})
	for name, opts := range map[string]session.ExecOptions{
		"empty argv":   {},
		"both":         {Argv: []string{"true"}, Command: "true"},
		"cwd escapes":  {Argv: []string{"true"}, Cwd: "../x"},
		"cwd missing":  {Argv: []string{"true"}, Cwd: "nope"},
		"cwd file":     {Argv: []string{"true"}, Cwd: "go.mod"},
		"long timeout": {Argv: []string{"true"}, Timeout: time.Hour},
		"bad record":   {Argv: []string{"true"}, Record: "sometimes"},
		"bad env":      {Argv: []string{"true"}, Env: map[string]string{"A=B": "c"}},
		"bad caches":   {Argv: []string{"true"}, Caches: "public"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := e.en.Exec.Exec(t.Context(), s.ID, opts)
			require.Error(t, err)
			var pe *overlay.PathError
			assert.True(t, errors.Is(err, record.ErrInvalid) || errors.As(err, &pe), "%v", err)
		})
	}
	ms, err := e.m.Mutations(t.Context(), s.ID, 0, 0)
	require.NoError(t, err)
	assert.Empty(t, ms)
	_, err = os.Stat(filepath.Join(e.dataDir, "workdir", "sessions", s.ID.String()))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing was prepared")
}

func TestExecRejectsAndUndoes(t *testing.T) {
	plainRunOnly(t, "commands in namespaces and their rejected changes")
	forExecModes(t, func(t *testing.T, e *execEnv) {
		s := e.create(session.CreateOptions{Policy: session.Policy{Write: []string{"src/**"}}})
		res := e.sh(s.ID, "echo ok > src/ok.txt && echo no > outside.txt && mkdir -p src/.git && echo x > src/.git/config && mkfifo src/pipe && ln -s '' src/empty 2>/dev/null; true")
		require.NotNil(t, res.Mutation)
		assert.Equal(t, []session.ExecChange{{Path: "src/ok.txt", Status: overlay.Added, Mode: 0o100644}}, res.Changes)
		rules := map[string]string{}
		for _, r := range res.Rejected {
			rules[r.Path] = r.Rule
		}
		assert.Equal(t, map[string]string{"outside.txt": "forbidden", "src/.git/config": "hasDotgit", "src/pipe": "specialFile"}, rules)
		res = e.sh(s.ID, "test ! -e outside.txt && test ! -e src/.git/config && test ! -e src/pipe && cat src/ok.txt")
		assert.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, "ok\n", string(res.Stdout))
	})
}

func TestExecReadOnlyAndClosedRecordNothing(t *testing.T) {
	plainRunOnly(t, "commands in namespaces on read-only and closed sessions")
	forExecModes(t, func(t *testing.T, e *execEnv) {
		ro := e.create(session.CreateOptions{Mode: session.ModeReadOnly})
		res := e.sh(ro.ID, "cat go.mod >/dev/null && echo x > new.txt")
		assert.Equal(t, 0, res.ExitCode)
		assert.False(t, res.Recorded)
		assert.NotEmpty(t, res.NotRecorded)
		assert.Nil(t, res.Mutation)
		assert.Equal(t, []session.ExecChange{{Path: "new.txt", Status: overlay.Added, Mode: 0o100644}}, res.Changes)
		res = e.sh(ro.ID, "test ! -e new.txt")
		assert.Equal(t, 0, res.ExitCode, "what was not recorded is undone")

		closed := e.create(session.CreateOptions{})
		_, err := e.m.Abandon(t.Context(), closed.ID)
		require.NoError(t, err)
		res = e.sh(closed.ID, "echo y > y.txt")
		assert.False(t, res.Recorded)
		ms, err := e.m.Mutations(t.Context(), closed.ID, 0, 0)
		require.NoError(t, err)
		assert.Empty(t, ms)
	})
}

func TestExecLimits(t *testing.T) {
	plainRunOnly(t, "commands in namespaces against the limits")
	e := newExecEnv(t, workdir.ModeOverlay, session.Limits{MaxFileBytes: 1000, MaxEntries: 3})
	s := e.create(session.CreateOptions{})
	res := e.sh(s.ID, "head -c 2000 /dev/zero > big.bin && echo 1 > a1 && echo 2 > a2 && echo 3 > a3 && echo 4 > a4")
	require.NotNil(t, res.Mutation)
	assert.Len(t, res.Changes, 3, "three entries fit")
	rules := map[string]string{}
	for _, r := range res.Rejected {
		rules[r.Path] = r.Rule
	}
	assert.Equal(t, map[string]string{"big.bin": "too_large", "a4": "too_large"}, rules)
	res = e.sh(s.ID, "test ! -e big.bin && test ! -e a4 && cat a1 a2 a3")
	assert.Equal(t, "1\n2\n3\n", string(res.Stdout), string(res.Stderr))
}

func TestExecEnvironment(t *testing.T) {
	plainRunOnly(t, "a command's environment in namespaces")
	e := newExecEnv(t, workdir.ModeOverlay)
	s := e.create(session.CreateOptions{})
	res, err := e.en.Exec.Exec(t.Context(), s.ID, session.ExecOptions{Argv: []string{"env"}, Env: map[string]string{"EXTRA": "1"}})
	require.NoError(t, err)
	env := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	assert.Equal(t, "dumb", env["TERM"])
	assert.Equal(t, "1", env["EXTRA"])
	assert.Equal(t, os.Getenv("PATH"), env["PATH"])
	assert.Equal(t, workdir.HomeInside, env["HOME"], "the same home for every session")
	assert.NotEmpty(t, env["GIT_CEILING_DIRECTORIES"])
	assert.NotEmpty(t, env["LANG"])
	// The tool caches (workdir/caches.go).
	assert.Equal(t, workdir.CachesInside+"/go-build", env["GOCACHE"])
	assert.Equal(t, "-modcacherw", env["GOFLAGS"])
	cacheVars := []string{"GOCACHE", "GOMODCACHE", "GOFLAGS", "npm_config_cache", "PIP_CACHE_DIR", "UV_CACHE_DIR", "CARGO_HOME", "XDG_CACHE_HOME"}
	for k := range env {
		// The view's .git: the host's git configuration stays out, and
		// git takes the view whoever owns it inside (gitview.go).
		gitVars := []string{"GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0"}
		assert.Contains(t, append(append([]string{"PATH", "HOME", "LANG", "TERM", "TMPDIR", "GIT_CEILING_DIRECTORIES", "EXTRA", "PWD", "SHLVL", "_", "OLDPWD"}, cacheVars...), gitVars...), k, "nothing of the daemon's environment leaks")
	}
}

// Where the kernel refuses namespaces commands still run, in copy mode,
// and what they change is recorded; the answer says they were not
// isolated.
func TestExecUnisolated(t *testing.T) {
	e := newExecEnvWith(t, workdir.Config{NoNamespaces: true})
	require.False(t, e.wd.Isolated())
	s := e.create(session.CreateOptions{})
	res := e.sh(s.ID, "echo new > new.txt && rm docs/read.txt && mkdir -p build && echo o > build/o")
	assert.Equal(t, 0, res.ExitCode, string(res.Stderr))
	assert.False(t, res.Isolated)
	require.NotNil(t, res.Mutation)
	assert.ElementsMatch(t, []session.ExecChange{
		{Path: "docs/read.txt", Status: overlay.Deleted},
		{Path: "new.txt", Status: overlay.Added, Mode: 0o100644},
	}, res.Changes)
	assert.Equal(t, "new\n", e.read(s.ID, "new.txt"))
	res = e.sh(s.ID, "cat build/o new.txt")
	assert.Equal(t, "o\nnew\n", string(res.Stdout))
}

// A session whose policy limits reads runs commands on a view without
// the paths it may not read; what it writes where it may not is refused
// and undone, and what it cannot see it cannot delete.
func TestExecHidesUnreadable(t *testing.T) {
	plainRunOnly(t, "commands in namespaces on a read-limited view")
	forExecModes(t, func(t *testing.T, e *execEnv) {
		s := e.create(session.CreateOptions{Policy: session.Policy{Deny: []string{"docs/**", "add_test.go"}}})
		res := e.sh(s.ID, `ls -A | tr '\n' ' '; echo
cat add_test.go 2>/dev/null || echo hidden
mkdir -p docs && echo mine > docs/read.txt
echo mine > add_test.go
echo ok > ok.txt`)
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, ".gitignore add.go go.mod src \nhidden\n", string(res.Stdout))
		require.NotNil(t, res.Mutation)
		assert.Equal(t, []session.ExecChange{{Path: "ok.txt", Status: overlay.Added, Mode: 0o100644}}, res.Changes)
		rules := map[string]string{}
		for _, r := range res.Rejected {
			rules[r.Path] = r.Rule
		}
		assert.Equal(t, map[string]string{"add_test.go": "forbidden", "docs/read.txt": "forbidden"}, rules)

		// Undone in the scratch; the record keeps the hidden files as
		// they were, and a command that removes everything it sees
		// leaves them.
		res = e.sh(s.ID, "test ! -e docs && test ! -e add_test.go && rm -rf ./* .gitignore && ls -A")
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Empty(t, string(res.Stdout))
		assert.Empty(t, res.Rejected)
		var deleted []string
		for _, c := range res.Changes {
			assert.Equal(t, overlay.Deleted, c.Status)
			deleted = append(deleted, c.Path)
		}
		assert.ElementsMatch(t, []string{".gitignore", "add.go", "go.mod", "ok.txt", "src/keep.txt"}, deleted)
		ms, err := e.m.Mutations(t.Context(), s.ID, 0, 0)
		require.NoError(t, err)
		require.Len(t, ms, 2)
		data, err := os.ReadFile(filepath.Join(e.repoDir, "add_test.go"))
		require.NoError(t, err)
		cp, err := e.m.Checkpoint(t.Context(), s.ID, "after", "")
		require.NoError(t, err)
		// (Git's output comes back trimmed.)
		assert.Equal(t, strings.TrimSpace(string(data)), testrepo.Git(t, e.repoDir, "show", cp.Commit.String()+":add_test.go"))
		assert.Equal(t, "read me", testrepo.Git(t, e.repoDir, "show", cp.Commit.String()+":docs/read.txt"))

		// A hidden directory is no working directory.
		_, err = e.en.Exec.Exec(t.Context(), s.ID, session.ExecOptions{Argv: []string{"true"}, Cwd: "docs"})
		assert.ErrorIs(t, err, record.ErrInvalid)
	})
}

// Without namespaces a command could read the repository itself, so a
// session whose policy limits reads may not run one.
func TestExecUnisolatedRefusesLimitedReads(t *testing.T) {
	e := newExecEnvWith(t, workdir.Config{NoNamespaces: true})
	s := e.create(session.CreateOptions{Policy: session.Policy{Deny: []string{"docs/**"}}})
	_, err := e.en.Exec.Exec(t.Context(), s.ID, session.ExecOptions{Command: "true"})
	assert.ErrorIs(t, err, record.ErrForbidden)
	w := e.create(session.CreateOptions{Policy: session.Policy{Write: []string{"src/**"}}})
	res := e.sh(w.ID, "echo x > src/x.txt")
	require.NotNil(t, res.Mutation, "a write policy alone is fine")
}

// A command has only its own loopback unless it asks for the host's
// network and the daemon allows that; it sees its view at
// /workspace/<repository> and its home at one path, the same in every
// session.
func TestExecNetworkAndPaths(t *testing.T) {
	plainRunOnly(t, "commands in namespaces, their network and paths")
	e := newExecEnv(t, workdir.ModeOverlay)
	s := e.create(session.CreateOptions{})
	_, err := e.en.Exec.Exec(t.Context(), s.ID, session.ExecOptions{Argv: []string{"true"}, Network: true})
	require.ErrorIs(t, err, record.ErrForbidden)
	assert.Contains(t, err.Error(), "--exec-host-network")

	res := e.sh(s.ID, `pwd; echo "$HOME"; ls /sys/class/net | tr '\n' ' '`)
	assert.Equal(t, "/workspace/r\n"+workdir.HomeInside+"\nlo ", string(res.Stdout), string(res.Stderr))
	assert.NotEmpty(t, res.Limits)
	other := e.create(session.CreateOptions{})
	res = e.sh(other.ID, "pwd")
	assert.Equal(t, "/workspace/r\n", string(res.Stdout), "every session of a repository sees its view at one path")
}

// A finished session's scratch is removed at once, however it finished:
// ignored outputs of a Go module can take hundreds of megabytes. (No
// path of the engine moves a session to rejected: a rejected changeset
// leaves its session open to revise, scratch and all.)
func TestExecScratchRemovedWhenFinished(t *testing.T) {
	plainRunOnly(t, "commands in namespaces, then each way a session ends")
	e := newExecEnv(t, workdir.ModeOverlay)
	_, err := e.en.Repos.SetPolicy(t.Context(), repos.Policy{Repo: "r"})
	require.NoError(t, err)
	for _, finish := range []struct {
		name string
		ttl  time.Duration
		end  func(t *testing.T, s session.Session)
	}{
		{"abandoned", 0, func(t *testing.T, s session.Session) {
			_, err := e.m.Abandon(t.Context(), s.ID)
			require.NoError(t, err)
		}},
		{"accepted", 0, func(t *testing.T, s session.Session) {
			c, err := e.cs().Submit(t.Context(), s.ID, changeset.SubmitOptions{Intent: "x"})
			require.NoError(t, err)
			_, err = e.cs().Accept(t.Context(), c.ID, changeset.AcceptOptions{})
			require.NoError(t, err)
		}},
		{"expired", 3 * time.Second, func(t *testing.T, s session.Session) {
			got, err := e.m.Get(t.Context(), s.ID)
			require.NoError(t, err)
			time.Sleep(time.Until(got.ExpiresAt) + 10*time.Millisecond)
			n, err := e.m.ExpireDue(t.Context())
			require.NoError(t, err)
			require.Equal(t, 1, n)
		}},
	} {
		t.Run(finish.name, func(t *testing.T) {
			s := e.create(session.CreateOptions{TTL: finish.ttl})
			res := e.sh(s.ID, "mkdir -p build && echo out > build/x.out && echo "+finish.name+" > tracked.txt")
			require.Equal(t, 0, res.ExitCode, string(res.Stderr))
			scratch := filepath.Join(e.dataDir, "workdir", "sessions", s.ID.String())
			require.DirExists(t, scratch)
			finish.end(t, s)
			got, err := e.m.Get(t.Context(), s.ID)
			require.NoError(t, err)
			require.Equal(t, session.State(finish.name), got.State)
			assert.NoDirExists(t, scratch)
		})
	}
}

// A session that ended while no daemon could remove its scratch (a crash
// between the end and the removal) loses it at the next start; the
// scratch of a session still open stays.
func TestFinishedScratchesRemovedAtStart(t *testing.T) {
	plainRunOnly(t, "commands in namespaces, then the scratch sweep at start")
	e := newExecEnv(t, workdir.ModeOverlay)
	open, ended := e.create(session.CreateOptions{}), e.create(session.CreateOptions{})
	for _, s := range []session.Session{open, ended} {
		res := e.sh(s.ID, "mkdir -p build && echo out > build/x.out")
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
	}
	// The end as the store has it, with no engine to remove the scratch.
	require.NoError(t, e.store.InTx(t.Context(), func(tx session.Tx) error {
		return tx.SetSessionState(t.Context(), ended.ID, session.StateActive, session.StateAbandoned, time.Now())
	}))
	// And a scratch no session has any more.
	gone := filepath.Join(e.dataDir, "workdir", "sessions", uuid.NewString())
	require.NoError(t, os.MkdirAll(filepath.Join(gone, "home"), 0o700))
	scratch := func(s session.Session) string {
		return filepath.Join(e.dataDir, "workdir", "sessions", s.ID.String())
	}
	require.DirExists(t, scratch(ended))

	n, err := e.en.Exec.RemoveFinishedScratches(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.NoDirExists(t, scratch(ended))
	assert.NoDirExists(t, gone)
	assert.DirExists(t, scratch(open))
	res := e.sh(open.ID, "cat build/x.out")
	assert.Equal(t, "out\n", string(res.Stdout), "the open session keeps its ignored outputs")
}

// The repository's exec policy decides whether a command may share the
// host's network (where the daemon allows it at all), and narrows the
// daemon's limits.
func TestExecRepositoryPolicy(t *testing.T) {
	plainRunOnly(t, "commands in namespaces under a repository's exec policy")
	e := newExecEnv(t, workdir.ModeOverlay)
	s := e.create(session.CreateOptions{})
	ex := session.NewExecutor(e.m, session.ExecConfig{HostNetwork: true, Limits: workdir.Limits{Pids: 500}})
	run := func(opts session.ExecOptions) (session.ExecResult, error) {
		return ex.Exec(t.Context(), s.ID, opts)
	}
	_, err := run(session.ExecOptions{Argv: []string{"true"}, Network: true})
	require.ErrorIs(t, err, record.ErrForbidden, "no policy: no host network")
	assert.Contains(t, err.Error(), "exec.network")

	_, err = e.en.Repos.SetPolicy(t.Context(), repos.Policy{Repo: "r", Exec: repos.ExecPolicy{Network: true, Pids: 64, MemoryBytes: 1 << 40}})
	require.NoError(t, err)
	res, err := run(session.ExecOptions{Command: "ls /sys/class/net | wc -l", Network: true})
	require.NoError(t, err)
	assert.NotEqual(t, "1\n", string(res.Stdout), "the host's interfaces, not only lo")
	limits := map[string]int64{}
	for _, l := range res.Limits {
		limits[l.Name] = l.Value
	}
	assert.Equal(t, int64(64), limits[workdir.LimitPids], "the policy narrows the daemon's 500")
	assert.Equal(t, workdir.DefaultLimits.MemoryBytes, limits[workdir.LimitMemory], "and never widens the daemon's")

	_, err = e.en.Repos.SetPolicy(t.Context(), repos.Policy{Repo: "r", Exec: repos.ExecPolicy{Pids: -1}})
	require.ErrorIs(t, err, record.ErrInvalid)
}

// TestExecToolCaches: sessions of a repository share its tool caches and
// see their view at one path (pwd and go env GOMOD agree); a session
// whose policy limits reads, and an exec that asks for private caches,
// get the session's own: they neither read what the shared caches hold
// nor put anything there.
func TestExecToolCaches(t *testing.T) {
	plainRunOnly(t, "the go command in namespaces with shared and private caches")
	forExecModes(t, func(t *testing.T, e *execEnv) {
		goOff := map[string]string{"GOPROXY": "off", "GOTOOLCHAIN": "local"}
		run := func(id uuid.UUID, caches, script string) session.ExecResult {
			t.Helper()
			res, err := e.en.Exec.Exec(t.Context(), id, session.ExecOptions{Command: script, Env: goOff, Caches: caches})
			require.NoError(t, err)
			return res
		}
		a := e.create(session.CreateOptions{})
		b := e.create(session.CreateOptions{})
		where := "pwd; go env GOMOD"
		resA := run(a.ID, "", where+`; echo shared > "$GOCACHE/marker"`)
		require.Equal(t, 0, resA.ExitCode, string(resA.Stderr))
		resB := run(b.ID, "", where+`; cat "$GOCACHE/marker"`)
		require.Equal(t, 0, resB.ExitCode, string(resB.Stderr))
		assert.Equal(t, "/workspace/r\n/workspace/r/go.mod\n", string(resA.Stdout))
		assert.Equal(t, string(resA.Stdout)+"shared\n", string(resB.Stdout))

		limited := e.create(session.CreateOptions{Policy: session.Policy{Deny: []string{"docs/**"}}})
		res := run(limited.ID, "", `cat "$GOCACHE/marker"; echo hidden > "$GOCACHE/leak"; cat "$GOCACHE/leak"`)
		assert.Equal(t, "hidden\n", string(res.Stdout), "a read-limited session has caches of its own")
		res = run(b.ID, "", `cat "$GOCACHE/leak"`)
		assert.NotEqual(t, 0, res.ExitCode, "what a read-limited session cached reached the shared cache")
		res = run(b.ID, session.CachesPrivate, `cat "$GOCACHE/marker"`)
		assert.NotEqual(t, 0, res.ExitCode, "caches: private still saw the shared cache")
		res = run(b.ID, session.CachesShared, `cat "$GOCACHE/marker"`)
		assert.Equal(t, "shared\n", string(res.Stdout))

		// caches: private on the session, kept by the store and its forks.
		p := e.create(session.CreateOptions{Caches: session.CachesPrivate})
		got, err := e.m.Get(t.Context(), p.ID)
		require.NoError(t, err)
		assert.Equal(t, session.CachesPrivate, got.Caches)
		res = run(p.ID, "", `cat "$GOCACHE/marker"`)
		assert.NotEqual(t, 0, res.ExitCode, "a private session saw the shared cache")
		f, err := e.m.Fork(t.Context(), p.ID, session.ForkOptions{})
		require.NoError(t, err)
		assert.Equal(t, session.CachesPrivate, f.Caches)
		_, err = e.m.Create(t.Context(), session.CreateOptions{Repo: "r", Caches: "public"})
		assert.ErrorIs(t, err, record.ErrInvalid)
	})
}
