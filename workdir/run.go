package workdir

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Command is one command to run on a view.
type Command struct {
	// Argv is the program and its arguments; not empty.
	Argv []string
	// Cwd is a directory of the view ("" for its root).
	Cwd string
	// Env is added to the minimal environment ("KEY=value").
	Env   []string
	Stdin []byte
	// Timeout kills the command's processes when it passes; zero: none.
	Timeout time.Duration
	// Network false runs the command in a network namespace of its own,
	// without interfaces.
	Network bool
	// OutputCap is the bytes kept per stream (the tail); 0: 1 MiB.
	OutputCap int
	// Output, when set, is called with each chunk of output as it comes
	// ("stdout" or "stderr"), from one goroutine at a time.
	Output func(stream string, p []byte)
}

// Result is what a command did, apart from its changes.
type Result struct {
	ExitCode int
	// Signal names the signal that ended the command ("SIGKILL"), if any.
	Signal   string
	TimedOut bool
	// Canceled: the context ended before the command did.
	Canceled bool
	// Started is when the command's process started; Duration runs from
	// there to its end.
	Started         time.Time
	Duration        time.Duration
	Stdout, Stderr  []byte
	OutputTruncated bool
	// Isolated: the command ran in its own namespaces with the data
	// directory and repositories hidden.
	Isolated bool
	// Setup is where the time before the command's start went.
	Setup Setup
}

// Setup splits the time from Run to the command's start (for
// benchmarks; zero parts where there is no helper).
type Setup struct {
	// Spawn: starting the helper process in its new namespaces (fork,
	// the user namespace's id maps, exec), until that call returns.
	Spawn time.Duration
	// Init: from there until the helper's code in the namespaces runs:
	// this binary's start (the runtime and package initializers) twice,
	// once outside to make the namespaces from a small process, once in
	// them.
	Init time.Duration
	// Mounts: in the helper, the view's mounts and covers and starting
	// the command.
	Mounts time.Duration
}

// tail keeps the last max bytes written to it.
type tail struct {
	max     int
	buf     []byte
	dropped bool
}

func (t *tail) Write(p []byte) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.dropped = true
	}
}

// minimalEnv is the command's environment before the request adds to it.
func minimalEnv(home, view string, extra []string) []string {
	lang := os.Getenv("LANG")
	if lang == "" {
		lang = "C.UTF-8"
	}
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"LANG=" + lang,
		"TERM=dumb",
		"TMPDIR=/tmp",
		// git run inside finds no repository above the view.
		"GIT_CEILING_DIRECTORIES=" + filepath.Dir(view),
	}
	return append(env, extra...)
}

// run starts the command (through the helper when isolated) and waits for
// it, killing its whole process tree on timeout or cancellation.
func (m *Manager) run(ctx context.Context, s *Scratch, c Command) (Result, error) {
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return Result{}, fmt.Errorf("%w: empty argv", ErrInvalid)
	}
	if c.OutputCap <= 0 {
		c.OutputCap = 1 << 20
	}
	runCtx := ctx
	var cancel context.CancelFunc
	if c.Timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	target := filepath.Join(s.dir, "mnt")
	home := filepath.Join(s.dir, "home")
	// Both exist before the helper starts: outside the hidden data
	// directory it finds the file system read-only.
	for _, d := range []string{home, target} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return Result{}, err
		}
	}
	var cmd *exec.Cmd
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return Result{}, err
	}
	defer statusR.Close()
	if m.isolated {
		spec := helperSpec{
			View: s.layer.present(), Target: target, Home: home, Hide: m.hidden(),
			Cwd: filepath.Join(target, c.Cwd), Argv: c.Argv, Env: minimalEnv(home, target, c.Env),
			NewNet: !c.Network,
		}
		b, err := json.Marshal(spec)
		if err != nil {
			statusW.Close()
			return Result{}, err
		}
		// Started plainly: the helper makes the namespaces (see nsAttr).
		cmd = exec.Command(m.exe)
		cmd.Env = []string{helperEnv + "=" + string(b), helperOuterEnv + "=1"}
		cmd.SysProcAttr = plainAttr()
	} else {
		view := s.layer.present().Src
		cmd = exec.Command(c.Argv[0], c.Argv[1:]...)
		cmd.Dir = filepath.Join(view, c.Cwd)
		cmd.Env = minimalEnv(home, view, c.Env)
		cmd.SysProcAttr = plainAttr()
	}
	if m.isolated {
		cmd.ExtraFiles = []*os.File{statusW}
	}
	cmd.Stdin = bytes.NewReader(c.Stdin)
	outR, outW, err := os.Pipe()
	if err != nil {
		statusW.Close()
		return Result{}, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		statusW.Close()
		outR.Close()
		outW.Close()
		return Result{}, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW

	res := Result{Isolated: m.isolated}
	stdout, stderr := &tail{max: c.OutputCap}, &tail{max: c.OutputCap}
	var outMu sync.Mutex
	var readers sync.WaitGroup
	pump := func(r io.ReadCloser, t *tail, name string) {
		defer readers.Done()
		defer r.Close()
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				outMu.Lock()
				t.Write(buf[:n])
				if c.Output != nil {
					c.Output(name, buf[:n])
				}
				outMu.Unlock()
			}
			if err != nil {
				return
			}
		}
	}
	// The thread that starts the helper must outlive it (Pdeathsig is
	// tied to the thread), so start and wait on one locked thread.
	startErr := make(chan error, 1)
	waited := make(chan error, 1)
	spawn := time.Now()
	var spawned time.Time
	go func() {
		runtime.LockOSThread()
		err := cmd.Start()
		spawned = time.Now()
		startErr <- err
		if err != nil {
			return
		}
		waited <- cmd.Wait()
	}()
	if err := <-startErr; err != nil {
		statusW.Close()
		outR.Close()
		outW.Close()
		errR.Close()
		errW.Close()
		if m.isolated {
			return Result{}, fmt.Errorf("%w: start helper: %w", ErrHelper, err)
		}
		// The program itself did not start.
		fmt.Fprintf(&writerFunc{func(p []byte) { stderr.Write(p) }}, "sessiond: %s: %v\n", c.Argv[0], unwrapExec(err))
		res.ExitCode, res.Stderr, res.Started = 127, stderr.buf, time.Now()
		return res, nil
	}
	m.track(cmd, true)
	defer m.track(cmd, false)
	statusW.Close()
	outW.Close()
	errW.Close()
	readers.Add(2)
	go pump(outR, stdout, "stdout")
	go pump(errR, stderr, "stderr")

	statusCh := make(chan helperStatus, 4)
	statuses := statusCh
	go func() {
		defer close(statusCh)
		sc := bufio.NewScanner(statusR)
		for sc.Scan() {
			var st helperStatus
			if json.Unmarshal(sc.Bytes(), &st) == nil {
				statuses <- st
			}
		}
	}()
	start := time.Now()
	if !m.isolated {
		res.Started = start
	}
	var final *helperStatus
	var began time.Time
	var setupErr string
	kill := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Process.Kill()
	}
	done := false
	for !done {
		select {
		case st, ok := <-statuses:
			if !ok {
				statuses = nil
				continue
			}
			switch {
			case st.Error != "":
				setupErr = st.Error
			case st.Started != 0:
				res.Started = time.Unix(0, st.Started)
				began = time.Unix(0, st.Began)
			case st.Exited:
				s := st
				final = &s
			}
		case err := <-waited:
			done = true
			if !m.isolated {
				var ee *exec.ExitError
				if err == nil {
					res.ExitCode = 0
				} else if errors.As(err, &ee) {
					if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
						res.ExitCode, res.Signal = 128+int(ws.Signal()), signalName(ws.Signal())
					} else {
						res.ExitCode = ee.ExitCode()
					}
				}
			}
			// Whatever the command left in its process group goes too.
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		case <-runCtx.Done():
			kill()
			if ctx.Err() != nil {
				res.Canceled = true
			} else {
				res.TimedOut = true
			}
			runCtx = context.Background()
		}
	}
	readers.Wait()
	if p := s.layer.present(); p.Overlay {
		// overlayfs leaves its work/work directory with mode 0, which a
		// daemon without privilege could not remove with the scratch.
		_ = os.Chmod(filepath.Join(p.Work, "work"), 0o755)
	}
	for st := range statusCh {
		switch {
		case st.Error != "":
			setupErr = st.Error
		case st.Started != 0:
			res.Started = time.Unix(0, st.Started)
			began = time.Unix(0, st.Began)
		case st.Exited:
			s := st
			final = &s
		}
	}
	end := time.Now()
	if res.Started.IsZero() {
		res.Started = start
	}
	res.Duration = end.Sub(res.Started)
	if m.isolated && !began.IsZero() {
		res.Setup = Setup{Spawn: spawned.Sub(spawn), Init: began.Sub(spawned), Mounts: res.Started.Sub(began)}
	}
	res.Stdout, res.Stderr = stdout.buf, stderr.buf
	res.OutputTruncated = stdout.dropped || stderr.dropped
	if m.isolated {
		switch {
		case setupErr != "":
			return res, fmt.Errorf("%w: %s", ErrHelper, setupErr)
		case final != nil:
			res.ExitCode, res.Signal = final.Code, final.Signal
		default:
			// The helper was killed (timeout, cancellation, shutdown).
			res.ExitCode, res.Signal = 128+int(syscall.SIGKILL), "SIGKILL"
		}
	}
	return res, nil
}

type writerFunc struct{ f func([]byte) }

func (w *writerFunc) Write(p []byte) (int, error) { w.f(p); return len(p), nil }

func signalName(s syscall.Signal) string { return unix.SignalName(s) }

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func jsonDecodeLine(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }
