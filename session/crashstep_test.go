package session_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/failpoint"
	"github.com/sessiond/sessiond/internal/pgtest"
	"github.com/sessiond/sessiond/internal/testengine"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/session"
)

const crashStepEnv = "SESSIOND_CRASH_STEP"

// TestCrashAtEachStep stops the write path at each of its steps, in the
// manner of Gitaly's transaction manager tests: a child process writes one
// file and kills itself (SIGKILL) at the step; the parent checks what the
// crash left on disk, restarts the engine and checks the exact state: the
// write is there if and only if the store committed it, the live ref
// matches the store again, every earlier file reads back, git fsck
// --strict passes, and the session keeps working. On both stores.
func TestCrashAtEachStep(t *testing.T) {
	if os.Getenv(crashStepEnv) != "" {
		crashStepChild()
		return
	}
	eachCrashStep(t, failpoint.Steps, crashAtStep)
}

// eachCrashStep runs crash at each of steps on SQLite and on a fresh
// PostgreSQL schema; a store's steps run in parallel.
func eachCrashStep(t *testing.T, steps []failpoint.Step, crash func(t *testing.T, url string, step failpoint.Step)) {
	stores := []struct {
		name string
		url  func(testing.TB) string
	}{
		{"sqlite", func(testing.TB) string { return "" }},
		{"postgres", pgtest.FreshSchema},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			for _, step := range steps {
				t.Run(string(step), func(t *testing.T) {
					t.Parallel()
					crash(t, st.url(t), step)
				})
			}
		})
	}
}

func openStore(t testing.TB, url, dataDir string) db.Store {
	t.Helper()
	st, err := db.Open(context.Background(), url, dataDir)
	require.NoError(t, err)
	return st
}

func crashAtStep(t *testing.T, url string, step failpoint.Step) {
	ctx := t.Context()
	repoDir := testrepo.Build(t, "small")
	dataDir := t.TempDir()
	st := openStore(t, url, dataDir)
	en := testengine.New(st, dataDir, session.Config{})
	m := en.Sessions
	_, err := en.Repos.Register(ctx, "r", repoDir)
	require.NoError(t, err)
	s, err := m.Create(ctx, session.CreateOptions{Repo: "r", Base: "main", AgentID: "a"})
	require.NoError(t, err)
	_, _, err = m.Write(ctx, s.ID, "before.txt", []byte("acknowledged\n"), session.WriteOptions{})
	require.NoError(t, err)
	require.NoError(t, m.Close())
	require.NoError(t, st.Close())
	git := func(args ...string) string { return testrepo.Git(t, repoDir, args...) }
	liveRef := "refs/sessions/" + s.ID.String() + "/live"
	before := git("rev-parse", liveRef)
	packDir := filepath.Join(repoDir, ".git", "objects", "pack")
	packsBefore := listDir(t, packDir)

	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashAtEachStep$")
	cmd.Env = append(os.Environ(), crashStepEnv+"="+string(step), "SESSIOND_CRASH_DATA="+dataDir,
		"SESSIOND_CRASH_DB="+url, "SESSIOND_CRASH_SESSION="+s.ID.String())
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "the child must die at %s: %s", step, out)
	ws, ok := ee.Sys().(syscall.WaitStatus)
	require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "child: %v: %s", err, out)

	// What the crash left.
	blob := gitstore.HashObject(gitstore.KindBlob, []byte("in flight\n")).String()
	var newFiles []string
	for n := range listDir(t, packDir) {
		if !packsBefore[n] {
			newFiles = append(newFiles, n)
		}
	}
	hasBlob := exec.Command("git", "-C", repoDir, "cat-file", "-e", blob).Run() == nil
	live := git("rev-parse", liveRef)
	switch step {
	case failpoint.ObjectsWritten:
		assert.Len(t, newFiles, 2, "a tmp_pack_ and a tmp_idx_ file: %v", newFiles)
		for _, n := range newFiles {
			assert.True(t, strings.HasPrefix(n, "tmp_"), n)
		}
		assert.False(t, hasBlob)
	case failpoint.PackRenamed:
		require.Len(t, newFiles, 2, "%v", newFiles)
		assert.Contains(t, strings.Join(newFiles, " "), ".pack", "the pack without its index")
		assert.Contains(t, strings.Join(newFiles, " "), "tmp_idx_")
		assert.False(t, hasBlob, "git sees no pack without its index")
	case failpoint.IndexRenamed, failpoint.DirSynced:
		assert.Len(t, newFiles, 2, "pack and index: %v", newFiles)
		assert.True(t, hasBlob)
	case failpoint.RefMoved, failpoint.StoreCommitted:
		assert.True(t, hasBlob)
	}
	if step == failpoint.RefMoved || step == failpoint.StoreCommitted {
		assert.NotEqual(t, before, live, "the live ref moved")
		assert.Equal(t, blob, git("rev-parse", liveRef+":crash/new.txt"))
	} else {
		assert.Equal(t, before, live, "the live ref did not move")
	}

	// Restart and check the exact state.
	st = openStore(t, url, dataDir)
	defer st.Close()
	en = testengine.New(st, dataDir, session.Config{})
	m = en.Sessions
	defer en.Close()
	committed := step == failpoint.StoreCommitted
	muts, err := m.Mutations(ctx, s.ID, 0, 0)
	require.NoError(t, err)
	want := map[string]string{"before.txt": "acknowledged\n"}
	if committed {
		want["crash/new.txt"] = "in flight\n"
		assert.Len(t, muts, 2, "the committed write is in the log")
	} else {
		assert.Len(t, muts, 1, "the uncommitted write is not in the log")
	}
	for p, content := range want {
		data, _, err := m.Read(ctx, s.ID, p, 0, -1)
		require.NoError(t, err, p)
		assert.Equal(t, content, string(data), p)
	}
	_, _, err = m.Read(ctx, s.ID, "crash/new.txt", 0, -1)
	if !committed {
		assert.ErrorIs(t, err, record.ErrNotFound)
		assert.Equal(t, before, git("rev-parse", liveRef), "loading moved the live ref back to the store's view")
	} else {
		require.NoError(t, err)
		assert.Equal(t, live, git("rev-parse", liveRef))
	}
	git("fsck", "--strict")
	// The session keeps working after the crash.
	_, _, err = m.Write(ctx, s.ID, "after.txt", []byte("after\n"), session.WriteOptions{})
	require.NoError(t, err)
	_, err = m.Checkpoint(ctx, s.ID, "", "")
	require.NoError(t, err)
	require.NoError(t, m.Close())
	git("fsck", "--strict")
}

func listDir(t *testing.T, dir string) map[string]bool {
	t.Helper()
	es, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]bool{}
	}
	require.NoError(t, err)
	out := map[string]bool{}
	for _, e := range es {
		out[e.Name()] = true
	}
	return out
}

func crashStepChild() {
	ctx := context.Background()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	st, err := db.Open(ctx, os.Getenv("SESSIOND_CRASH_DB"), os.Getenv("SESSIOND_CRASH_DATA"))
	if err != nil {
		fail(err)
	}
	m := testengine.New(st, os.Getenv("SESSIOND_CRASH_DATA"), session.Config{}).Sessions
	id := uuid.MustParse(os.Getenv("SESSIOND_CRASH_SESSION"))
	if _, err := m.Get(ctx, id); err != nil {
		fail(err)
	}
	failpoint.Enable(failpoint.Step(os.Getenv(crashStepEnv)), func() {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	})
	if _, _, err := m.Write(ctx, id, "crash/new.txt", []byte("in flight\n"), session.WriteOptions{}); err != nil {
		fail(err)
	}
	fail(errors.New("the write finished: the step was never reached"))
}
