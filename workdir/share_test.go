package workdir_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/workdir"
)

// A service, the session's commands and the daemon's own edits see one
// view, in both modes: a service that keeps reading a file sees the API
// write that creates it and the one that replaces it (in overlay mode
// with mounts of their own, it kept its cached miss and the old file);
// a command sees what the service wrote, and the service what the
// command wrote; the service's own write is captured, and a refused one
// settled back, under its feet.
func TestServeSharesView(t *testing.T) {
	warned := overlayWarnings()
	defer func() {
		if warned >= 0 {
			assert.Equal(t, warned, overlayWarnings(), "the kernel warned of an upper directory in use by two mounts")
		}
	}()
	forServedModes(t, func(t *testing.T, m *workdir.Manager, f *fixture) {
		// The service echoes api.txt and cmd.txt into seen-*.txt as
		// it finds them, every 20 ms (a miss first: the overlay
		// caches it).
		loop := `echo up > svc.txt
while :; do
  cat api.txt > seen-api.tmp 2>/dev/null && mv seen-api.tmp seen-api.txt
  cat cmd.txt > seen-cmd.tmp 2>/dev/null && mv seen-cmd.tmp seen-cmd.txt
  sleep 0.02
done`
		sv := serveOn(t, m, f, "/bin/sh", "-c", loop)

		// run runs script as a command of the session and records
		// what it and the service changed, but for the service's
		// echo files.
		run := func(script string) string {
			t.Helper()
			sc, err := m.Prepare(t.Context(), f.view())
			require.NoError(t, err)
			res, err := sc.Run(t.Context(), workdir.Command{Argv: []string{"/bin/sh", "-c", script}})
			require.NoError(t, err)
			require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
			cs, err := sc.CaptureNow(t.Context(), f.view(), 0)
			require.NoError(t, err)
			var keep []workdir.Change
			var drop []string
			for _, c := range cs {
				if strings.HasPrefix(c.Path, "seen-") {
					drop = append(drop, c.Path)
					continue
				}
				keep = append(keep, c)
			}
			f.record(keep)
			require.NoError(t, sc.Settle(t.Context(), f.view(), drop))
			return string(res.Stdout)
		}
		// eventually runs file's cat until it prints want.
		eventually := func(file, want string) {
			t.Helper()
			deadline := time.Now().Add(20 * time.Second)
			var got string
			for time.Now().Before(deadline) {
				got = run("cat " + file + " 2>/dev/null; true")
				if got == want {
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
			t.Fatalf("%s reads %q, want %q", file, got, want)
		}
		// seen waits for the service to echo want from name.
		seen := func(name, want string) { t.Helper(); eventually("seen-"+name+".txt", want) }

		eventually("svc.txt", "up\n") // the command sees the service's write
		f.write("api.txt", "one\n", gitstore.ModeFile)
		seen("api", "one\n")
		f.write("api.txt", "two\n", gitstore.ModeFile)
		seen("api", "two\n")
		run("echo from-command > cmd.txt")
		seen("cmd", "from-command\n")

		// A refused write of the service's is put back, and the
		// service sees it put back.
		sc, err := m.Prepare(t.Context(), f.view())
		require.NoError(t, err)
		_, err = sc.Run(t.Context(), workdir.Command{Argv: []string{"/bin/sh", "-c", "echo refused > api.txt"}})
		require.NoError(t, err)
		cs, err := sc.CaptureNow(t.Context(), f.view(), 0)
		require.NoError(t, err)
		assert.Contains(t, paths(cs), "api.txt")
		require.NoError(t, sc.Settle(t.Context(), f.view(), []string{"api.txt"}))
		seen("api", "two\n")

		sv.Stop(time.Second)
		// Without services, commands mount their own view again
		// and find everything recorded.
		assert.Equal(t, "two\nfrom-command\n", run("cat api.txt cmd.txt"))
	})
}

// forServedModes runs fn in each isolated mode on a fresh fixture.
func forServedModes(t *testing.T, fn func(t *testing.T, m *workdir.Manager, f *fixture)) {
	for _, mode := range []workdir.Mode{workdir.ModeOverlay, workdir.ModeCopy} {
		t.Run(string(mode), func(t *testing.T) {
			m := newManager(t, mode)
			if !m.Isolated() {
				t.Skip("no namespaces here")
			}
			fn(t, m, newFixture(t))
		})
	}
}

// serveOn starts argv as a service on the fixture's view (killed when
// the test ends).
func serveOn(t *testing.T, m *workdir.Manager, f *fixture, argv ...string) *workdir.Service {
	t.Helper()
	sc, err := m.Prepare(t.Context(), f.view())
	require.NoError(t, err)
	sv, err := sc.Serve(workdir.Command{Argv: argv, Env: []string{"LC_ALL=C"}})
	require.NoError(t, err)
	require.NoError(t, sc.Settle(t.Context(), f.view(), nil))
	t.Cleanup(func() { sv.Kill() })
	return sv
}

// awaitLayerFile waits until the service made name in the session's
// layer (the copy, or the upper directory): it is at work.
func awaitLayerFile(t *testing.T, m *workdir.Manager, sv *workdir.Service, name string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		_, errView := os.Lstat(filepath.Join(m.ScratchDir("s1"), "view", name))
		_, errUpper := os.Lstat(filepath.Join(m.ScratchDir("s1"), "upper", name))
		if errView == nil || errUpper == nil {
			return
		}
		select {
		case <-sv.Done():
			res, err := sv.Result()
			t.Fatalf("the service ended: %v %s", err, res.Stderr)
		default:
		}
		require.True(t, time.Now().Before(deadline), "the service never changed the view")
		time.Sleep(20 * time.Millisecond)
	}
}

// overlayWarnings counts the kernel's warnings of an overlay upper
// directory mounted twice, or -1 where the kernel log is not readable.
func overlayWarnings() int {
	out, err := exec.Command("dmesg").Output()
	if err != nil {
		return -1
	}
	return strings.Count(string(out), "upperdir is in-use")
}

// BenchmarkCommandBesideService: a command's whole round (an API write
// synced, prepare, run true, capture, settle) on a session alone, and on
// one whose service holds the view (the command attaches the shared
// mount; the write goes through it).
func BenchmarkCommandBesideService(b *testing.B) {
	for _, served := range []bool{false, true} {
		b.Run(map[bool]string{false: "alone", true: "beside-service"}[served], func(b *testing.B) {
			m, err := workdir.New(workdir.Config{Dir: filepath.Join(b.TempDir(), "workdir"), Mode: workdir.ModeOverlay})
			require.NoError(b, err)
			defer m.Close()
			if !m.Isolated() {
				b.Skip("no namespaces here")
			}
			f := newFixture(b)
			if served {
				sc, err := m.Prepare(b.Context(), f.view())
				require.NoError(b, err)
				sv, err := sc.Serve(workdir.Command{Argv: []string{"sleep", "600"}})
				require.NoError(b, err)
				require.NoError(b, sc.Settle(b.Context(), f.view(), nil))
				defer sv.Kill()
			}
			b.ResetTimer()
			for i := range b.N {
				f.write("api.txt", fmt.Sprintf("round %d\n", i), gitstore.ModeFile)
				sc, err := m.Prepare(b.Context(), f.view())
				require.NoError(b, err)
				res, err := sc.Run(b.Context(), workdir.Command{Argv: []string{"true"}})
				require.NoError(b, err)
				require.Equal(b, 0, res.ExitCode, "%s", res.Stderr)
				cs, err := sc.CaptureNow(b.Context(), f.view(), 0)
				require.NoError(b, err)
				require.Empty(b, cs)
				require.NoError(b, sc.Settle(b.Context(), f.view(), nil))
			}
		})
	}
}

// churnScript keeps making, replacing and removing files as build tools
// and editors do (a temporary file renamed over another, a file turned
// into a link and back, a directory made and removed), as fast as it can.
const churnScript = `import os
k = 0
while True:
    k += 1
    try:
        with open("churn.tmp", "w") as f:
            f.write("tmp %d\n" % k)
        os.replace("churn.tmp", "out.txt")
        os.symlink("out.txt", "flip.new")
        os.replace("flip.new", "flip")
        with open("flip.new", "w") as f:
            f.write("file\n")
        os.replace("flip.new", "flip")
        os.makedirs("d/e", exist_ok=True)
        with open("d/e/f.txt", "w") as f:
            f.write("f\n")
        os.remove("d/e/f.txt")
        os.rmdir("d/e")
        os.rmdir("d")
        os.remove("out.txt")
    except OSError:
        pass
`

// A capture beside a service that keeps changing files never fails on a
// file that went or changed kind between the listing, the stat and the
// read: what it finds is reported, what went is not.
func TestCaptureBesideChurningService(t *testing.T) {
	forServedModes(t, func(t *testing.T, m *workdir.Manager, f *fixture) {
		sv := serveOn(t, m, f, "python3", "-c", churnScript)
		rounds := 200
		if testing.Short() {
			rounds = 50
		}
		awaitLayerFile(t, m, sv, "flip")
		saw := 0
		for i := range rounds {
			sc, err := m.Prepare(t.Context(), f.view())
			require.NoError(t, err, "round %d", i)
			cs, err := sc.CaptureNow(t.Context(), f.view(), 0)
			require.NoError(t, err, "round %d", i)
			for _, c := range cs {
				assert.Contains(t, []string{"out.txt", "churn.tmp", "flip", "flip.new", "d/e/f.txt"}, c.Path)
			}
			if len(cs) > 0 {
				saw++
			}
			// Nothing recorded: each path goes back as the record has it.
			require.NoError(t, sc.Settle(t.Context(), f.view(), paths(cs)), "round %d", i)
		}
		assert.NotZero(t, saw, "no capture saw the service's files")
	})
}

// The view's holder outlives the daemon thread that started it. Its
// parent-death signal is tied to that thread, and Go ends a thread whose
// goroutine exits locked to it (as each command's starter does once the
// command ended). Here the service, and with it the holder, is started
// from a goroutine that exits locked: a holder started from the calling
// thread died with it, and the next command found its socket refusing.
func TestHolderOutlivesStartingThread(t *testing.T) {
	forServedModes(t, func(t *testing.T, m *workdir.Manager, f *fixture) {
		// A goroutine may land on the main thread, which Go never
		// ends: a few rounds make the thread's end all but certain.
		for round := range 6 {
			type started struct {
				sv  *workdir.Service
				err error
			}
			ch := make(chan started, 1)
			go func() {
				runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
				sc, err := m.Prepare(t.Context(), f.view())
				if err != nil {
					ch <- started{err: err}
					return
				}
				sv, err := sc.Serve(workdir.Command{Argv: []string{"sleep", "600"}})
				if err == nil {
					err = sc.Settle(t.Context(), f.view(), nil)
				}
				ch <- started{sv, err}
			}()
			st := <-ch
			require.NoError(t, st.err, "round %d", round)
			time.Sleep(50 * time.Millisecond) // the thread's end, and the signal it sends, take their time
			sc, err := m.Prepare(t.Context(), f.view())
			require.NoError(t, err, "round %d", round)
			res, err := sc.Run(t.Context(), workdir.Command{Argv: []string{"true"}})
			require.NoError(t, err, "round %d", round)
			require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
			require.NoError(t, sc.Settle(t.Context(), f.view(), nil))
			select {
			case <-st.sv.Done():
				res, err := st.sv.Result()
				t.Fatalf("round %d: the service ended: %v %s", round, err, res.Stderr)
			default:
			}
			st.sv.Kill()
			<-st.sv.Done()
		}
	})
}

// A holder killed from outside leaves the services on their clones of
// the view, and the session's next command is refused, naming the cause
// and what to do (a second mount of the upper directory beside theirs is
// what the share prevents), not a socket's "connection refused"; once
// the services stopped, commands mount their own view again.
func TestHolderKilled(t *testing.T) {
	m := newManager(t, workdir.ModeOverlay)
	if !m.Isolated() {
		t.Skip("no namespaces here")
	}
	f := newFixture(t)
	sv := serveOn(t, m, f, "/bin/sh", "-c", "echo up > svc.txt; sleep 600")
	awaitLayerFile(t, m, sv, "svc.txt")
	holder := holderOf(t, m.ScratchDir("s1"))
	require.NoError(t, syscall.Kill(-holder, syscall.SIGKILL))
	// The daemon sees the holder's end once it reaped it: until then a
	// command may still go through.
	deadline := time.Now().Add(10 * time.Second)
	sc, err := m.Prepare(t.Context(), f.view())
	for err == nil && time.Now().Before(deadline) {
		require.NoError(t, sc.Settle(t.Context(), f.view(), nil))
		time.Sleep(20 * time.Millisecond)
		sc, err = m.Prepare(t.Context(), f.view())
	}
	require.ErrorIs(t, err, workdir.ErrViewHeld)
	assert.ErrorContains(t, err, "holder ended")
	select {
	case <-sv.Done():
		t.Fatal("the service ended with the holder")
	default:
	}

	sv.Stop(time.Second)
	sc, err = m.Prepare(t.Context(), f.view())
	require.NoError(t, err)
	cs, err := sc.CaptureNow(t.Context(), f.view(), 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"svc.txt"}, paths(cs), "the service's write, kept in the upper directory")
	res, err := sc.Run(t.Context(), workdir.Command{Argv: []string{"cat", "svc.txt"}})
	require.NoError(t, err)
	assert.Equal(t, "up\n", string(res.Stdout), "%s", res.Stderr)
	require.NoError(t, sc.Settle(t.Context(), f.view(), nil))
}

// holderOf is the process (group leader) that holds the shared view of
// the scratch dir: the helper whose spec names the scratch's socket.
func holderOf(t *testing.T, scratch string) int {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/environ")
	require.NoError(t, err)
	sock := filepath.Join(scratch, "view.sock")
	for _, p := range procs {
		env, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(env)
		if strings.Contains(s, "SESSIOND_WORKDIR_HELPER_OUTER=1") && strings.Contains(s, `"hold":"`+sock+`"`) {
			pid, err := strconv.Atoi(strings.Split(p, "/")[2])
			require.NoError(t, err)
			return pid
		}
	}
	t.Fatalf("no holder for %s", sock)
	return 0
}
