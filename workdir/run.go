package workdir

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"
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
	// with only its own loopback; true shares the host's network.
	Network bool
	// Egress, when set, is the only thing the command reaches beyond its
	// own loopback: its egress proxy (egress.go; Network is then ignored).
	Egress Egress
	// Workspace is where the view appears inside the command's namespace
	// (DefaultWorkspace when empty); unisolated, the command runs in the
	// scratch's copy itself.
	Workspace string
	// Limits bound the command; zero fields take the Manager's.
	Limits Limits
	// Caches are the tool caches the command gets (caches.go).
	Caches Caches
	// OutputCap is the bytes kept per stream (the tail); 0: 1 MiB.
	OutputCap int
	// Output, when set, is called with each chunk of output as it comes
	// ("stdout" or "stderr"), from one goroutine at a time.
	Output func(stream string, p []byte)
	// Git, when set, gives the view a .git (gitview.go); NoGit says why
	// the view has none when it is not.
	Git   *Git
	NoGit string
	// Expose and Reach join ports of the command's loopback to Unix
	// sockets of the host (ports.go); isolated only, and Reach without
	// Network (with it, Expose joins the host's loopback).
	Expose, Reach []PortLink
	// Term, when closed, sends the command's process group SIGTERM
	// (the end of Timeout or of the context still kills its tree).
	Term <-chan struct{}
	// Started, when set, learns the command's process id (inside its
	// PID namespace, isolated) once it started.
	Started func(pid int)

	// service: the command outlives the scratch's commands (Serve): it
	// shows pres, and leaves the scratch's state alone.
	service bool
	pres    presentation
}

// DefaultWorkspace is where a view appears inside a command's namespace
// when the command names no path.
const DefaultWorkspace = "/workspace/view"

// HomeInside is the command's home directory inside its namespace, the
// same for every session, so that tools which key their caches on
// absolute paths find them again.
const HomeInside = "/home/sessiond"

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
	// directory and repositories absent.
	Isolated bool
	// Limits are the limits the command ran under and how each was
	// enforced; Exceeded names those it ran into (LimitMemory: the
	// kernel killed a process out of memory; LimitPids: a fork was
	// refused; LimitScratch: the scratch outgrew its bound, the command
	// was killed and the scratch's ignored outputs and home dropped;
	// LimitTmp: a private tmpfs filled up).
	Limits   []AppliedLimit
	Exceeded []string
	// Landlock is the Landlock ABI the command was restricted by; 0
	// where the kernel has none.
	Landlock int
	// Setup is where the time before the command's start went.
	Setup Setup
	// Git is what became of the view's .git.
	Git GitResult
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
	// Mounts: in the helper, the command's root and starting the command.
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

// run starts the command through the helper and waits for it, killing
// its whole process tree on timeout or cancellation.
func (m *Manager) run(ctx context.Context, s *Scratch, c Command) (Result, error) {
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return Result{}, fmt.Errorf("%w: empty argv", ErrInvalid)
	}
	if c.OutputCap <= 0 {
		c.OutputCap = 1 << 20
	}
	limits := c.Limits.Fill(m.limits)
	runCtx := ctx
	var cancel context.CancelFunc
	if c.Timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	stage := filepath.Join(s.dir, "mnt")
	home := filepath.Join(s.dir, "home")
	for _, d := range []string{home, stage} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return Result{}, err
		}
	}
	res := Result{Isolated: m.isolated}
	spec := helperSpec{Argv: c.Argv}
	pres := c.pres
	if !c.service {
		pres = s.layer.present()
	} else {
		// Each service builds its root on a stage of its own.
		var err error
		if stage, err = os.MkdirTemp(s.dir, "mnt-"); err != nil {
			return Result{}, err
		}
		defer os.Remove(stage)
	}
	if m.isolated {
		target := c.Workspace
		if target == "" {
			target = DefaultWorkspace
		}
		spec.View, spec.Stage, spec.Target = pres, stage, target
		spec.Term = c.Term != nil
		spec.Home, spec.HomeSrc = HomeInside, home
		spec.Hide, spec.Show = m.hidden(), m.shown()
		spec.Cwd = filepath.Join(target, c.Cwd)
		spec.Env = minimalEnv(HomeInside, target, c.Env)
		spec.NewNet = !c.Network || c.Egress != nil
		if spec.NewNet {
			spec.Ports = portSpecs(c.Expose, c.Reach)
		} else {
			spec.Ports = portSpecs(c.Expose, nil)
		}
		spec.NoLandlock = m.noLandlock
		if limits.TmpBytes > 0 {
			spec.TmpBytes = limits.TmpBytes
			res.Limits = append(res.Limits, AppliedLimit{Name: LimitTmp, Value: limits.TmpBytes, Via: ViaTmpfs})
		}
	} else {
		view := pres.Src
		spec.Cwd = filepath.Join(view, c.Cwd)
		spec.Env = minimalEnv(home, view, c.Env)
	}
	if !c.service {
		// A service leaves the scratch alone: it gets no .git.
		if err := s.gitMountPoint(m.isolated && c.Git != nil); err != nil {
			return Result{}, err
		}
	}
	switch {
	case c.service:
		res.Git.Absent = "a service has no .git"
	case c.Git == nil:
		res.Git.Absent = c.NoGit
	case !m.isolated:
		res.Git.Absent = "commands run without namespaces here (isolated false), where a .git could not be kept to what the session may read"
	default:
		if err := m.prepareGit(ctx, s, c.Git, &spec); err != nil {
			// The command runs, without a .git, and is told why.
			res.Git.Absent = "the view's .git could not be prepared: " + err.Error()
			break
		}
		res.Git.Present = true
		res.Git.Before, _ = s.ReadGitHead()
	}
	cachesDone, err := m.tools.use(s, c.Caches, m.isolated, &spec)
	if err != nil {
		return Result{}, err
	}
	defer cachesDone()
	cg, applied, err := m.limit(s, &spec, limits)
	if err != nil {
		return Result{}, err
	}
	res.Limits = append(res.Limits, applied...)
	if cg != nil {
		defer m.cgroups.release(cg)
	}

	b, err := json.Marshal(spec)
	if err != nil {
		return Result{}, err
	}
	// Started plainly: isolated, the helper makes the namespaces (see
	// nsAttr); unisolated, it is the command's subreaper.
	cmd := exec.Command(m.exe)
	if m.isolated {
		cmd.Env = []string{helperEnv + "=" + string(b), helperOuterEnv + "=1"}
	} else {
		cmd.Env = []string{helperEnv + "=" + string(b), helperPlainEnv + "=1"}
	}
	cmd.SysProcAttr = plainAttr()
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return Result{}, err
	}
	defer statusR.Close()
	cmd.ExtraFiles = []*os.File{statusW}
	if c.Egress != nil {
		link, env, stop, err := serveEgress(c.Egress, s.dir, m.isolated)
		if err != nil {
			statusW.Close()
			return Result{}, err
		}
		defer stop()
		if link != nil {
			spec.Ports = append(spec.Ports, *link)
		}
		spec.Env = withEnv(spec.Env, env)
		if b, err = json.Marshal(spec); err != nil {
			statusW.Close()
			return Result{}, err
		}
		cmd.Env[0] = helperEnv + "=" + string(b)
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

	stdout, stderr := &tail{max: c.OutputCap}, &tail{max: c.OutputCap}
	var outMu sync.Mutex
	var readers sync.WaitGroup
	pump := func(r io.ReadCloser, t *tail, name string) {
		defer readers.Done()
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
	spawn := time.Now()
	scratchFree, watchScratch := freeBytes(s.dir)
	watchScratch = watchScratch && !c.service
	waited, err := startPinned(cmd)
	spawned := time.Now()
	if err != nil {
		statusW.Close()
		outR.Close()
		outW.Close()
		errR.Close()
		errW.Close()
		return Result{}, fmt.Errorf("%w: start helper: %w", ErrHelper, err)
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
	var final *helperStatus
	var began time.Time
	var setupErr string
	take := func(st helperStatus) {
		switch {
		case st.Error != "":
			setupErr = st.Error
		case st.Started != 0:
			res.Started = time.Unix(0, st.Started)
			if c.Started != nil && st.PID != 0 {
				c.Started(st.PID)
			}
			began = time.Unix(0, st.Began)
			res.Landlock = st.Landlock
		case st.Exited:
			s := st
			final = &s
		}
	}
	// kill ends the command's whole tree: isolated, killing the helper's
	// process group ends its PID namespace; unisolated, the helper kills
	// its descendants on SIGTERM and is killed outright after a grace.
	var killed bool
	var grace <-chan time.Time
	kill := func() {
		killed = true
		if m.isolated {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		} else {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			grace = time.After(2 * time.Second)
		}
		if cg != nil {
			cg.kill()
		}
	}
	term := c.Term
	var tick <-chan time.Time
	var ticks int
	if watchScratch && limits.ScratchBytes > 0 {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		tick = t.C
	}
	for done := false; !done; {
		select {
		case st, ok := <-statuses:
			if !ok {
				statuses = nil
				continue
			}
			take(st)
		case <-waited:
			done = true
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
		case <-grace:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			grace = nil
		case <-term:
			term = nil
			if m.isolated {
				_ = cmd.Process.Signal(syscall.SIGTERM)
			} else {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			}
		case <-tick:
			if killed {
				continue
			}
			ticks++
			// The scratch's tree is measured only when the file system
			// lost more than the scratch may still grow. That loss is
			// the whole file system's, which others free space on
			// meanwhile, so every two seconds the files the command
			// unlinked but keeps open (or mapped), which no walk of the
			// tree finds, are counted as well, from /proc.
			free, ok := freeBytes(s.dir)
			grew := ok && scratchFree-free > limits.ScratchBytes-s.st.Usage
			if !grew && ticks%8 == 0 {
				grew = s.st.Usage+hiddenBytes(cmd.Process.Pid) > limits.ScratchBytes
			}
			if !grew {
				continue
			}
			if s.st.Usage = sweep(s.dir); s.st.Usage+hiddenBytes(cmd.Process.Pid) > limits.ScratchBytes {
				res.Exceeded = append(res.Exceeded, LimitScratch)
				kill()
			}
			if ok {
				scratchFree = free
			}
		}
	}
	// Nothing outside the helper's tree can hold the output pipes open
	// (isolated, the namespace died with it; unisolated, it killed its
	// descendants); still, a reader never outwaits the helper by more
	// than a moment.
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(time.Second):
		outR.Close()
		errR.Close()
		<-drained
	}
	outR.Close()
	errR.Close()
	if p := pres; p.Overlay {
		// overlayfs leaves its work/work directory with mode 0, which a
		// daemon without privilege could not remove with the scratch.
		_ = os.Chmod(filepath.Join(p.Work, "work"), 0o755)
	}
	for st := range statusCh {
		take(st)
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
	if res.Git.Present {
		res.Git.After, res.Git.Branch = s.ReadGitHead()
	}
	res.OutputTruncated = stdout.dropped || stderr.dropped
	if cg != nil {
		res.Exceeded = append(res.Exceeded, cg.exceeded()...)
	}
	if final != nil {
		res.Exceeded = append(res.Exceeded, final.Full...)
	}
	// Setid bits and file capabilities go, and the scratch is measured.
	// (A service leaves that to the next command's settling.)
	if !c.service {
		if s.st.Usage = sweep(s.dir); limits.ScratchBytes > 0 && s.st.Usage > limits.ScratchBytes && !slices.Contains(res.Exceeded, LimitScratch) {
			res.Exceeded = append(res.Exceeded, LimitScratch)
		}
	}
	if slices.Contains(res.Exceeded, LimitScratch) && !c.service {
		s.overLimit = true
	}
	switch {
	case setupErr != "":
		return res, fmt.Errorf("%w: %s", ErrHelper, setupErr)
	case final != nil && !(killed && m.isolated):
		res.ExitCode, res.Signal = final.Code, final.Signal
	default:
		// The helper was killed (timeout, cancellation, shutdown).
		res.ExitCode, res.Signal = 128+int(syscall.SIGKILL), "SIGKILL"
	}
	return res, nil
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func jsonDecodeLine(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }

// startPinned starts cmd from a locked OS thread that lives until cmd
// has been waited for, and returns what Wait returned on waited. A
// helper's parent-death signal is tied to the thread that started it,
// and Go ends a thread whose goroutine exits locked (as every pinned
// starter does once its helper ended): a helper started from a plain
// thread is killed whenever a later starter happened to run there.
func startPinned(cmd *exec.Cmd) (waited <-chan error, err error) {
	started := make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		err := cmd.Start()
		started <- err
		if err != nil {
			return
		}
		done <- cmd.Wait()
	}()
	return done, <-started
}
