package workdir_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/failpoint"
	"github.com/sessiond/sessiond/overlay"
	"github.com/sessiond/sessiond/workdir"
)

// The environment layer tests run in every mode (forModes): overlay,
// copy, and copy without namespaces.

// countingSetup is a setup that writes an ignored output and counts its
// runs in the repository's shared caches (the same directory for every
// build of the repository, outside any view).
func countingSetup(extra string) []workdir.EnvStep {
	return []workdir.EnvStep{{Argv: []string{"/bin/sh", "-c", `set -e
echo built >> "$(dirname "$GOCACHE")/builds"
mkdir -p build/deps && echo dep > build/deps/dep.txt && echo log > setup.log
` + extra}}}
}

func builds(t *testing.T, m *workdir.Manager, repo string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(m.CachesDir(repo), "builds"))
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	return strings.Count(string(b), "built\n")
}

func (f *fixture) envView(session string, env *workdir.Env) workdir.View {
	v := f.view()
	v.Session, v.RepoName, v.Env = session, "r", env
	return v
}

// runEnv prepares session's view with env, runs script and captures.
func (f *fixture) runEnv(m *workdir.Manager, session string, env *workdir.Env, script string) (workdir.Result, []workdir.Change, *workdir.Scratch) {
	f.t.Helper()
	v := f.envView(session, env)
	s, err := m.Prepare(f.t.Context(), v)
	require.NoError(f.t, err)
	res, err := s.Run(f.t.Context(), workdir.Command{Argv: []string{"/bin/sh", "-c", script}, Caches: workdir.Caches{Repo: "r"}})
	require.NoError(f.t, err)
	cs, err := s.Capture(f.t.Context(), v, 0)
	require.NoError(f.t, err)
	return res, cs, s
}

func TestEnvironmentLayerSharedAcrossSessions(t *testing.T) {
	plainRunOnly(t, "environment builds in namespaces, one session after another")
	forModes(t, func(t *testing.T, m *workdir.Manager) {
		f := newFixture(t)
		env := &workdir.Env{Key: "aa01", Repo: "r", Steps: countingSetup(""),
			Include: []workdir.EnvFile{{Path: "conf/.env.local", Data: []byte("TOKEN=1\n")}}}

		res, cs, s := f.runEnv(m, "s1", env, "cat build/deps/dep.txt setup.log conf/.env.local")
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, "dep\nlog\nTOKEN=1\n", string(res.Stdout))
		assert.Empty(t, cs, "the layer's files are not the session's changes")
		got := s.Environment()
		assert.Equal(t, workdir.EnvReady, got.Status)
		assert.True(t, got.Built)
		require.NoError(t, s.Settle(t.Context(), f.envView("s1", env), nil))
		assert.Equal(t, 1, builds(t, m, "r"))

		// A command changing a layer file changes its own view only.
		res, cs, s = f.runEnv(m, "s1", env, "echo mine > build/deps/dep.txt && cat build/deps/dep.txt")
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, "mine\n", string(res.Stdout))
		assert.Empty(t, cs)
		require.NoError(t, s.Settle(t.Context(), f.envView("s1", env), nil))

		// A second session finds the layer built: no setup runs.
		res, cs, s = f.runEnv(m, "s2", env, "cat build/deps/dep.txt conf/.env.local")
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, "dep\nTOKEN=1\n", string(res.Stdout))
		assert.Empty(t, cs)
		assert.False(t, s.Environment().Built)
		require.NoError(t, s.Settle(t.Context(), f.envView("s2", env), nil))
		assert.Equal(t, 1, builds(t, m, "r"))

		// An include file a command changes is the session's change.
		res, cs, s = f.runEnv(m, "s2", env, "echo TOKEN=2 > conf/.env.local")
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, []string{"conf/.env.local"}, paths(cs))
		s.Abort()

		ls := m.Environments("r")
		require.Len(t, ls, 1)
		assert.Equal(t, workdir.EnvReady, ls[0].Status)
		assert.Equal(t, int64(3), ls[0].Files) // dep.txt, setup.log, .env.local
		assert.Contains(t, ls[0].Log, "set -e")
	})
}

func TestEnvironmentNewKeyRebuilds(t *testing.T) {
	plainRunOnly(t, "environment builds in namespaces, one after another")
	forModes(t, func(t *testing.T, m *workdir.Manager) {
		f := newFixture(t)
		one := &workdir.Env{Key: "bb01", Repo: "r", Steps: countingSetup("echo one > build/which")}
		res, _, s := f.runEnv(m, "s1", one, "cat build/which")
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, "one\n", string(res.Stdout))
		require.NoError(t, s.Settle(t.Context(), f.envView("s1", one), nil))

		two := &workdir.Env{Key: "bb02", Repo: "r", Steps: countingSetup("echo two > build/which")}
		res, _, s = f.runEnv(m, "s1", two, "cat build/which")
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, "two\n", string(res.Stdout), "the session's view stacks the new layer")
		require.NoError(t, s.Settle(t.Context(), f.envView("s1", two), nil))
		assert.Equal(t, 2, builds(t, m, "r"))
		assert.Len(t, m.Environments("r"), 2)
	})
}

func TestEnvironmentSetupEditingTrackedFileFails(t *testing.T) {
	plainRunOnly(t, "an environment build in namespaces")
	forModes(t, func(t *testing.T, m *workdir.Manager) {
		f := newFixture(t)
		env := &workdir.Env{Key: "cc01", Repo: "r", Steps: countingSetup("echo edited >> a.txt && rm dir/c.txt && echo SETUP-OUTPUT")}
		res, cs, s := f.runEnv(m, "s1", env, "cat a.txt; test ! -e build/deps/dep.txt")
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, "alpha\n", string(res.Stdout), "the command runs on the base, without the layer")
		assert.Empty(t, cs)
		got := s.Environment()
		assert.Equal(t, workdir.EnvFailed, got.Status)
		assert.Contains(t, got.Error, `"a.txt"`)
		assert.Contains(t, got.Error, `"dir/c.txt"`)
		assert.Contains(t, got.Log, "SETUP-OUTPUT")
		require.NoError(t, s.Settle(t.Context(), f.envView("s1", env), nil))

		// The failure is remembered: no retry until asked.
		_, _, s = f.runEnv(m, "s1", env, "true")
		assert.Equal(t, workdir.EnvFailed, s.Environment().Status)
		require.NoError(t, s.Settle(t.Context(), f.envView("s1", env), nil))
		assert.Equal(t, 1, builds(t, m, "r"))
		ls := m.Environments("r")
		require.Len(t, ls, 1)
		assert.Equal(t, workdir.EnvFailed, ls[0].Status)

		n, err := m.RebuildEnvironments("r")
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		_, _, s = f.runEnv(m, "s1", env, "true")
		assert.Equal(t, workdir.EnvFailed, s.Environment().Status)
		s.Abort()
		assert.Equal(t, 2, builds(t, m, "r"))
	})
}

func TestEnvironmentFailingStepKeepsLog(t *testing.T) {
	plainRunOnly(t, "an environment build in namespaces")
	forModes(t, func(t *testing.T, m *workdir.Manager) {
		f := newFixture(t)
		env := &workdir.Env{Key: "dd01", Repo: "r", Steps: []workdir.EnvStep{{Argv: []string{"/bin/sh", "-c", "echo installing; echo broken >&2; exit 3"}}}}
		res, _, s := f.runEnv(m, "s1", env, "echo ran")
		require.Equal(t, 0, res.ExitCode)
		got := s.Environment()
		assert.Equal(t, workdir.EnvFailed, got.Status)
		assert.Contains(t, got.Error, "exited with 3")
		assert.Contains(t, got.Log, "installing")
		assert.Contains(t, got.Log, "broken")
		s.Abort()
	})
}

func TestEnvironmentConcurrentFirstCommandsBuildOnce(t *testing.T) {
	forModes(t, func(t *testing.T, m *workdir.Manager) {
		f := newFixture(t)
		env := &workdir.Env{Key: "ee01", Repo: "r", Steps: countingSetup("sleep 0.3")}
		var wg sync.WaitGroup
		outs := make([]string, 4)
		for i := range 4 {
			wg.Add(1)
			// Each session reads its own overlay, as each of the engine's
			// sessions does (the fixture's is one, shared by its views).
			v := f.envView("c"+string(rune('0'+i)), env)
			v.Overlay = v.Overlay.Clone().Freeze()
			go func() {
				defer wg.Done()
				s, err := m.Prepare(t.Context(), v)
				if !assert.NoError(t, err) {
					return
				}
				defer s.Abort()
				res, err := s.Run(t.Context(), workdir.Command{Argv: []string{"cat", "build/deps/dep.txt"}})
				if assert.NoError(t, err) {
					outs[i] = string(res.Stdout)
				}
			}()
		}
		wg.Wait()
		assert.Equal(t, []string{"dep\n", "dep\n", "dep\n", "dep\n"}, outs)
		assert.Equal(t, 1, builds(t, m, "r"))
	})
}

func TestEnvironmentEviction(t *testing.T) {
	f := newFixture(t)
	data := t.TempDir()
	m, err := workdir.New(workdir.Config{Dir: filepath.Join(data, "workdir"), Mode: workdir.ModeCopy, EnvironmentBytes: 1,
		Hide: func() []string { return []string{data} }, Show: []string{outsideRoot()}})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	one := &workdir.Env{Key: "ff01", Repo: "r", Steps: countingSetup("")}
	s1, err := m.Prepare(t.Context(), f.envView("s1", one))
	require.NoError(t, err)
	two := &workdir.Env{Key: "ff02", Repo: "r", Steps: countingSetup("")}
	s2, err := m.Prepare(t.Context(), f.envView("s2", two))
	require.NoError(t, err)
	// Both are held: over the budget, neither goes.
	assert.Len(t, m.Environments("r"), 2)
	s1.Abort()
	ls := m.Environments("r")
	require.Len(t, ls, 1, "the layer nobody holds is evicted")
	assert.Equal(t, "ff02", ls[0].Key)
	s2.Abort()
	assert.Empty(t, m.Environments("r"))
	_, err = os.Stat(filepath.Join(data, "workdir", "environments", "ff01"))
	assert.True(t, os.IsNotExist(err))
}

// crashEnvEnv names the repository a child process builds a layer of and
// dies at EnvironmentBuilt (TestEnvironmentCrashMidBuild).
const crashEnvEnv = "SESSIOND_TEST_ENV_CRASH"

func TestEnvironmentCrashMidBuild(t *testing.T) {
	if spec := os.Getenv(crashEnvEnv); spec != "" {
		repoDir, dataDir, _ := strings.Cut(spec, "\n")
		r, err := gitstore.Open(repoDir)
		require.NoError(t, err)
		tree, err := r.TreeOf(t.Context(), mustRev(t, r, "HEAD"))
		require.NoError(t, err)
		m, err := workdir.New(workdir.Config{Dir: dataDir, Mode: workdir.ModeCopy, NoNamespaces: true})
		require.NoError(t, err)
		failpoint.Enable(failpoint.EnvironmentBuilt, func() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL) })
		v := workdir.View{Session: "s1", Repo: r, RepoName: "r", BaseTree: tree, Overlay: overlay.New(r.View(tree), overlay.Options{}), Env: &workdir.Env{Key: "ab01", Repo: "r", Steps: countingSetup("")}}
		_, _ = m.Prepare(t.Context(), v)
		t.Fatal("the failpoint did not stop the build")
	}
	f := newFixture(t)
	data := filepath.Join(t.TempDir(), "workdir")
	cmd := exec.Command(os.Args[0], "-test.run=^TestEnvironmentCrashMidBuild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnvEnv+"="+f.dir+"\n"+data)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, string(out))
	require.Equal(t, "signal: killed", ee.Error(), string(out))

	// What the crash left: a temporary directory holding a whole layer,
	// under a name that never looks complete.
	ents, err := os.ReadDir(filepath.Join(data, "environments"))
	require.NoError(t, err)
	require.NotEmpty(t, ents)
	for _, e := range ents {
		assert.True(t, strings.HasPrefix(e.Name(), ".tmp-"), e.Name())
	}

	m, err := workdir.New(workdir.Config{Dir: data, Mode: workdir.ModeCopy, NoNamespaces: true})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	assert.Empty(t, m.Environments("r"))
	ents, err = os.ReadDir(filepath.Join(data, "environments"))
	require.NoError(t, err)
	assert.Empty(t, ents, "the interrupted build is removed on open")
	env := &workdir.Env{Key: "ab01", Repo: "r", Steps: countingSetup("")}
	res, _, s := f.runEnv(m, "s1", env, "cat build/deps/dep.txt")
	require.Equal(t, 0, res.ExitCode, string(res.Stderr))
	assert.True(t, s.Environment().Built, "built again after the crash")
	s.Abort()
	assert.Equal(t, 2, builds(t, m, "r"))
}

// TestEnvironmentConnectOnlyWhenBuilding: a setup step's network is
// asked for only when the step runs, so a command whose layer exists
// makes no egress proxy and reads no policy; a Connect error fails the
// command, and leaves no failure remembered.
func TestEnvironmentConnectOnlyWhenBuilding(t *testing.T) {
	plainRunOnly(t, "environment builds in namespaces and their egress")
	forModes(t, func(t *testing.T, m *workdir.Manager) {
		f := newFixture(t)
		var connects atomic.Int64
		steps := countingSetup("")
		steps[0].Connect = func(context.Context) (bool, workdir.Egress, error) {
			connects.Add(1)
			return false, nil, nil
		}
		env := &workdir.Env{Key: "ac01", Repo: "r", Steps: steps}
		res, _, s := f.runEnv(m, "s1", env, "cat build/deps/dep.txt")
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.True(t, s.Environment().Built)
		require.NoError(t, s.Settle(t.Context(), f.envView("s1", env), nil))
		assert.Equal(t, int64(1), connects.Load(), "the build's step connects once")

		res, _, s = f.runEnv(m, "s2", env, "cat build/deps/dep.txt")
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.False(t, s.Environment().Built)
		require.NoError(t, s.Settle(t.Context(), f.envView("s2", env), nil))
		assert.Equal(t, int64(1), connects.Load(), "a command on the existing layer does not connect")

		broken := countingSetup("")
		broken[0].Connect = func(context.Context) (bool, workdir.Egress, error) {
			return false, nil, errors.New("policy unreadable")
		}
		bad := &workdir.Env{Key: "ac02", Repo: "r", Steps: broken}
		_, err := m.Prepare(t.Context(), f.envView("s3", bad))
		require.ErrorContains(t, err, "policy unreadable")
		for _, l := range m.Environments("r") {
			assert.NotEqual(t, "ac02", l.Key, "no failure remembered for ac02")
		}
	})
}
