//go:build linux

package workdir

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func init() {
	spec := os.Getenv(helperEnv)
	if spec == "" {
		return
	}
	// Nothing of the helper runs on another thread than the one that
	// starts the command: what it drops there is what the command gets.
	runtime.LockOSThread()
	switch {
	case os.Getenv(helperOuterEnv) != "":
		os.Exit(helperOuter(spec))
	case os.Getenv(helperPlainEnv) != "":
		os.Exit(helperPlain(spec))
	}
	os.Exit(helperMain(spec))
}

// joinCgroups writes process pid (0: the caller) into each cgroup.procs
// file.
func joinCgroups(procs []string, pid int) error {
	for _, f := range procs {
		if err := os.WriteFile(f, []byte(strconv.Itoa(pid)+"\n"), 0); err != nil {
			return fmt.Errorf("join cgroup: %w", err)
		}
	}
	return nil
}

// joinedFD is the second stage's end of the pipe on which the first says
// that it moved the second into the command's cgroups ("ok") or why it
// could not.
const joinedFD = 4

// helperOuter is the helper's first stage: it starts the second stage in
// the namespaces, with the same standard streams and status pipe, moves
// it into the command's cgroups, and waits for it. The move runs while
// the second stage builds the command's root (in cgroup v1 a move waits
// for an RCU grace period, some milliseconds), and the second starts the
// command only once told the move is done. The second stage stays in
// this process group, so killing the group kills both, and dies with this
// one (its parent-death signal is tied to this thread).
func helperOuter(specJSON string) int {
	status := os.NewFile(3, "status")
	var spec helperSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		_ = json.NewEncoder(status).Encode(helperStatus{Error: "spec: " + err.Error()})
		return 125
	}
	closeExtraFiles(4)
	joinedR, joinedW, err := os.Pipe()
	if err != nil {
		_ = json.NewEncoder(status).Encode(helperStatus{Error: err.Error()})
		return 125
	}
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = []string{helperEnv + "=" + specJSON}
	cmd.SysProcAttr = nsAttr(spec.NewNet)
	cmd.SysProcAttr.Setpgid = false
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{status, joinedR}
	var term chan os.Signal
	if spec.Term {
		// Caught from before the start; passed on once started.
		term = make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		defer signal.Stop(term)
	}
	if err := cmd.Start(); err != nil {
		_ = json.NewEncoder(status).Encode(helperStatus{Error: "start in new namespaces: " + err.Error()})
		return 125
	}
	if term != nil {
		p := cmd.Process
		go func() {
			for range term {
				_ = p.Signal(syscall.SIGTERM)
			}
		}()
	}
	status.Close()
	joinedR.Close()
	if err := joinCgroups(spec.Cgroups, cmd.Process.Pid); err != nil {
		fmt.Fprintf(joinedW, "%v\n", err)
	} else {
		fmt.Fprintln(joinedW, "ok")
	}
	joinedW.Close()
	_ = cmd.Wait()
	if cmd.ProcessState == nil {
		return 125
	}
	return cmd.ProcessState.ExitCode()
}

// helperMain is the second stage, PID 1 of the namespaces: it builds the
// command's root, drops privilege and runs the command, then reports how
// it ended. When it returns, the kernel kills whatever else runs in the
// namespace.
func helperMain(specJSON string) int {
	began := time.Now().UnixNano()
	// The command must not inherit the status pipe, nor anything else.
	unix.CloseOnExec(3)
	unix.CloseOnExec(joinedFD)
	closeExtraFiles(joinedFD + 1)
	status := os.NewFile(3, "status")
	enc := json.NewEncoder(status)
	var spec helperSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		_ = enc.Encode(helperStatus{Error: "spec: " + err.Error()})
		return 125
	}
	fail := func(err error) int {
		_ = enc.Encode(helperStatus{Error: err.Error()})
		return 125
	}
	if spec.Hold != "" {
		return holdView(spec, enc)
	}
	var startPorts func() (int, error)
	if len(spec.Ports) > 0 {
		start, err := openPorts(spec.Ports)
		if err != nil {
			return fail(err)
		}
		startPorts = start
	}
	writable, err := buildRoot(spec)
	if err != nil {
		return fail(err)
	}
	if spec.NewNet {
		if err := loopbackUp(); err != nil {
			return fail(fmt.Errorf("loopback: %w", err))
		}
	}
	if startPorts != nil {
		proxy, err := startPorts()
		if err != nil {
			return fail(err)
		}
		if proxy != 0 {
			spec.Env = withEnv(spec.Env, proxyEnv(proxy))
		}
	}
	_ = unix.Sethostname([]byte("sessiond"))
	if spec.Probe {
		_ = enc.Encode(helperStatus{Exited: true})
		return 0
	}
	// Nothing inside may ptrace this process or read its /proc entries;
	// signals from inside are ignored (the daemon ends it with SIGKILL).
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fail(fmt.Errorf("undumpable: %w", err))
	}
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE)
	if spec.Term {
		// A service: the daemon's SIGTERM (passed on by the first
		// stage) goes to the command's process group.
		serviceTerm = make(chan os.Signal, 1)
		signal.Notify(serviceTerm, syscall.SIGTERM)
	} else {
		signal.Ignore(syscall.SIGTERM)
	}
	if spec.NoLandlock {
		writable = nil
	}
	abi, err := dropPrivileges(writable, !spec.NoLandlock)
	if err != nil {
		return fail(err)
	}
	if err := awaitCgroups(); err != nil {
		return fail(err)
	}
	return runAsChild(spec, enc, began, abi, false)
}

// serviceTerm receives the SIGTERM a service's helper passes on to the
// command's process group (helperSpec.Term).
var serviceTerm chan os.Signal

// helperPlain runs a command where the kernel gives no namespaces: as a
// child subreaper in the command's cgroups, so that every descendant,
// even one that left the process group, is found and killed when the
// command ends or the daemon ends it (SIGTERM).
func helperPlain(specJSON string) int {
	began := time.Now().UnixNano()
	unix.CloseOnExec(3)
	closeExtraFiles(4)
	status := os.NewFile(3, "status")
	enc := json.NewEncoder(status)
	var spec helperSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		_ = enc.Encode(helperStatus{Error: "spec: " + err.Error()})
		return 125
	}
	fail := func(err error) int {
		_ = enc.Encode(helperStatus{Error: err.Error()})
		return 125
	}
	if err := joinCgroups(spec.Cgroups, 0); err != nil {
		return fail(err)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail(fmt.Errorf("subreaper: %w", err))
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fail(fmt.Errorf("no_new_privs: %w", err))
	}
	return runAsChild(spec, enc, began, 0, true)
}

// awaitCgroups waits for the first stage to say it moved this process
// into the command's cgroups (a probe has none, and no pipe).
func awaitCgroups() error {
	f := os.NewFile(joinedFD, "joined")
	if f == nil {
		return nil
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("cgroups: %w", err)
	}
	if msg := strings.TrimSpace(string(b)); msg != "ok" {
		return fmt.Errorf("cgroups: %s", msg)
	}
	return nil
}

// setRlimits puts the command's rlimits and niceness on process pid (0:
// this one).
func setRlimits(spec helperSpec, pid int) error {
	for _, r := range spec.Rlimits {
		lim := unix.Rlimit{Cur: r.Value, Max: r.Value}
		if err := unix.Prlimit(pid, r.Resource, &lim, nil); err != nil {
			return fmt.Errorf("rlimit %d: %w", r.Resource, err)
		}
	}
	if spec.Nice != 0 {
		_ = unix.Setpriority(unix.PRIO_PROCESS, pid, spec.Nice)
	}
	return nil
}

// startLimited starts the command with the rlimits of spec on it alone:
// the helper goes on living (it reaps, and reports), and an rlimit of
// the command's (a memory bound of a few megabytes, say) would end it. Go
// runs nothing between fork and exec, so the command starts traced: it
// stops at its exec, before any instruction of its own, gets its limits
// there and is let go. Where the kernel refuses tracing (Yama's
// ptrace_scope 3) the helper takes the limits itself before the start,
// as the command's parent that only waits from then on. It returns the
// command's pid, or its end when it ended before it could be let go.
func startLimited(path string, spec helperSpec, attr *syscall.ProcAttr) (pid int, ended *syscall.WaitStatus, err error) {
	if len(spec.Rlimits) == 0 && spec.Nice == 0 {
		pid, err = syscall.ForkExec(path, spec.Argv, attr)
		return pid, nil, err
	}
	traced := *attr
	sys := *attr.Sys
	sys.Ptrace = true
	traced.Sys = &sys
	pid, err = syscall.ForkExec(path, spec.Argv, &traced)
	if err == syscall.EPERM {
		if err := setRlimits(spec, 0); err != nil {
			return 0, nil, err
		}
		pid, err = syscall.ForkExec(path, spec.Argv, attr)
		return pid, nil, err
	}
	if err != nil {
		return 0, nil, err
	}
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return pid, nil, err
		}
		if !ws.Stopped() {
			return pid, &ws, nil // killed before it ran
		}
		limErr := setRlimits(spec, pid)
		if limErr != nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if err := syscall.PtraceDetach(pid); err != nil && limErr == nil {
			limErr = fmt.Errorf("let the command go: %w", err)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		return pid, nil, limErr
	}
}

// runAsChild starts the command from this (locked) thread and reaps every
// child until the command has exited; plain, it then kills and reaps
// whatever descendants remain (as a subreaper they are its children), and
// on SIGTERM it does the same at once.
func runAsChild(spec helperSpec, enc *json.Encoder, began int64, abi int, plain bool) int {
	path := spec.Argv[0]
	if !strings.Contains(path, "/") {
		for _, kv := range spec.Env {
			if v, ok := strings.CutPrefix(kv, "PATH="); ok {
				os.Setenv("PATH", v)
			}
		}
		if lp, err := exec.LookPath(path); err == nil {
			path = lp
		} else {
			fmt.Fprintf(os.Stderr, "sessiond: %s: %v\n", spec.Argv[0], unwrapExec(err))
			_ = enc.Encode(helperStatus{Started: time.Now().UnixNano(), Began: began, Landlock: abi})
			_ = enc.Encode(helperStatus{Exited: true, Code: 127})
			return 0
		}
	}
	var term chan os.Signal
	if plain {
		term = make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
	}
	started := time.Now().UnixNano()
	pid, ended, err := startLimited(path, spec, &syscall.ProcAttr{
		Dir: spec.Cwd, Env: spec.Env,
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil && pid > 0 {
		// Started, but it could not be limited: it was killed.
		fmt.Fprintf(os.Stderr, "sessiond: %s: %v\n", spec.Argv[0], err)
		_ = enc.Encode(helperStatus{Started: started, Began: began, Landlock: abi})
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, 0, nil)
		_ = enc.Encode(helperStatus{Exited: true, Code: 126})
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sessiond: %s: %v\n", spec.Argv[0], err)
		_ = enc.Encode(helperStatus{Started: started, Began: began, Landlock: abi})
		code := 126
		if err == syscall.ENOENT {
			code = 127
		}
		_ = enc.Encode(helperStatus{Exited: true, Code: code})
		return 0
	}
	_ = enc.Encode(helperStatus{Started: started, Began: began, Landlock: abi, PID: pid})
	if serviceTerm != nil {
		go func() {
			for range serviceTerm {
				_ = syscall.Kill(-pid, syscall.SIGTERM)
			}
		}()
	}
	st := helperStatus{Exited: true}
	done := make(chan struct{})
	if plain {
		go func() {
			select {
			case <-term:
				// The main loop reaps; what is left after the
				// command is killed when it has been.
				killChildren()
			case <-done:
			}
		}()
	}
	for {
		var ws syscall.WaitStatus
		if ended != nil {
			ws = *ended
		} else {
			wpid, err := syscall.Wait4(-1, &ws, 0, nil)
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				st.Code = 126
				break
			}
			if wpid != pid {
				continue // an orphan reparented to this process
			}
		}
		if ws.Signaled() {
			st.Code, st.Signal = 128+int(ws.Signal()), unix.SignalName(ws.Signal())
		} else {
			st.Code = ws.ExitStatus()
		}
		break
	}
	close(done)
	if plain {
		killDescendants()
	} else {
		for _, d := range append(scratchDirs, "/dev/shm") {
			var fs unix.Statfs_t
			if unix.Statfs(d, &fs) == nil && fs.Blocks > 0 && fs.Bavail == 0 {
				st.Full = []string{LimitTmp}
				break
			}
		}
	}
	_ = enc.Encode(st)
	return 0
}

// killDescendants kills this process's children until none is left: as
// a child subreaper, every descendant whose parent died is one of them.
// It reaps them too, so it runs only once the command itself was reaped.
func killDescendants() {
	for round := 0; round < 1000; round++ {
		if killChildren() == 0 {
			return
		}
		// Reap what died; those that forked meanwhile come round again.
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); err != nil || pid <= 0 {
				break
			}
		}
		time.Sleep(time.Millisecond)
	}
}

// killChildren sends SIGKILL to every child and says how many there were.
func killChildren() int {
	kids := children(strconv.Itoa(os.Getpid()))
	for _, k := range kids {
		_ = syscall.Kill(k, syscall.SIGKILL)
	}
	return len(kids)
}

// children lists the processes whose parent is pid, from /proc.
func children(pid string) []int {
	var out []int
	tasks, _ := os.ReadDir("/proc/" + pid + "/task")
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/" + pid + "/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}
