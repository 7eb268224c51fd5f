package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/secret"
	"github.com/sessiond/sessiond/workdir"
)

// Services (SPEC §15): processes that outlive the request that starts
// them, on the session's view, each in a sandbox of its own like a
// command's. A service's port is reached through a Unix socket in the
// session's scratch, which the service's sandbox relays to its loopback
// (workdir.PortLink); the daemon's port route and every later command of
// the session (on the same port of its own loopback) go through it, so
// two sessions' services on one port never meet. What services change in
// tracked files is recorded at the next capture point (the session's
// next command, a checkpoint, the service's stop) as one mutation with op
// service. The registry is in memory; its state is written to the
// scratch, so that after a restart the services read as stopped.

// OpService is the op of the mutation that records what services
// changed.
const OpService Op = "service"

// Service states.
const (
	ServiceStarting = "starting"
	ServiceRunning  = "running"
	ServiceStopped  = "stopped"
	ServiceExited   = "exited"
	ServiceFailed   = "failed"
)

// Reasons a service stopped.
const (
	ReasonRequested  = "stopped on request"
	ReasonIdle       = "idle"
	ReasonEnded      = "session ended"
	ReasonRestarted  = "daemon restarted"
	ReasonLost       = "this node lost the session's ownership"
	ReasonNotReady   = "ready check did not pass"
	ReasonRestarting = "restarting"
)

// DefaultServiceIdle stops a session's services when nothing reached
// their ports and no command ran for this long (a repository's policy
// may say otherwise: exec.service_idle_seconds).
const DefaultServiceIdle = 30 * time.Minute

// DefaultReadyTimeout is how long a ready check may take by default.
const DefaultReadyTimeout = 30 * time.Second

// serviceStopGrace is the time between SIGTERM and the kill of the
// whole tree.
const serviceStopGrace = 5 * time.Second

// ServiceReady is a service's ready check: an HTTP GET of a path
// answering below 400, or a TCP connection the service accepts and does
// not close at once.
type ServiceReady struct {
	HTTP    string
	TCP     bool
	Timeout time.Duration
}

// ServiceOptions describe a service to start.
type ServiceOptions struct {
	Name    string
	Argv    []string
	Command string
	Cwd     string
	Env     map[string]string
	// Port is the port the service listens on, inside (0: none).
	Port    int
	Ready   ServiceReady
	Restart string // "no" (default) or "on-failure"
	Actor   string
	// Network: the service gets the network a command that asks for one
	// gets (NetworkFor): the host's, or the policy's allowlist through
	// an egress proxy of its own; without it, its own loopback.
	Network bool

	// restarts counts the starts after failures before this one.
	restarts int
}

// ServiceInfo is a service as GET …/services lists it.
type ServiceInfo struct {
	Name     string     `json:"name"`
	Argv     []string   `json:"argv"`
	Port     int        `json:"port,omitempty"`
	State    string     `json:"state"`
	Reason   string     `json:"reason,omitempty"`
	PID      int        `json:"pid,omitempty"`
	Started  time.Time  `json:"started"`
	Ended    *time.Time `json:"ended,omitempty"`
	ExitCode *int       `json:"exit_code,omitempty"`
	Restarts int        `json:"restarts,omitempty"`
	Restart  string     `json:"restart,omitempty"`
	// LogTail is the end of its output, when it failed.
	LogTail string `json:"log_tail,omitempty"`
	// Network: it asked for the network (ServiceOptions.Network).
	Network bool `json:"network,omitempty"`
	// NetworkRefused lists the destinations its egress proxy refused so
	// far, as it asked for them.
	NetworkRefused []string `json:"network_refused,omitempty"`
}

// Running reports whether the service is (still) up.
func (s ServiceInfo) Running() bool { return s.State == ServiceStarting || s.State == ServiceRunning }

var serviceNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// CheckPort is the rule for a port number.
func CheckPort(port int) error {
	if port < 1 || port > 65535 {
		return fmt.Errorf("%w: port %d: want 1 to 65535", record.ErrInvalid, port)
	}
	return nil
}

// service is one service of a session.
type service struct {
	info ServiceInfo
	opts ServiceOptions
	sv   *workdir.Service
	logs *logRing
	// stop is set once a stop was asked (reason), so the end is not a
	// failure to restart after.
	stop string
	// started is closed once its process started (its sandbox built).
	started chan struct{}
	// network is what it runs with (its proxy's refusals come in while
	// it runs).
	network Network
}

// current is the service's info with its network's refusals so far
// (under the registry's lock).
func (s *service) current() ServiceInfo {
	if r := s.network.Refused(); len(r) > 0 {
		s.info.NetworkRefused = r
	}
	return s.info
}

// sessionServices are one session's services.
type sessionServices struct {
	list []*service
	// used is when a port request or a command last came.
	used time.Time
	// dirty: a service ran since the last capture of its changes.
	dirty bool
	// dir is the session's scratch directory (the state file and the
	// port sockets).
	dir string
	// loaded: the state file was read (after a restart).
	loaded bool
	// gone: the session ended; its scratch is removed, nothing is saved.
	gone bool
	// open counts the connections through the port route now (a
	// WebSocket held open is use, for the idle clock).
	open int
}

func (ss *sessionServices) find(name string) *service {
	for _, s := range ss.list {
		if s.info.Name == name {
			return s
		}
	}
	return nil
}

func (ss *sessionServices) running() int {
	n := 0
	for _, s := range ss.list {
		if s.info.Running() {
			n++
		}
	}
	return n
}

// serviceRegistry holds every session's services.
type serviceRegistry struct {
	mu      sync.Mutex
	by      map[uuid.UUID]*sessionServices
	closing bool
	// janitor runs while any service runs.
	janitor bool
}

func (r *serviceRegistry) session(e *Executor, id uuid.UUID) *sessionServices {
	if r.by == nil {
		r.by = map[uuid.UUID]*sessionServices{}
	}
	ss := r.by[id]
	if ss == nil {
		ss = &sessionServices{used: time.Now(), dir: e.workdirs.ScratchDir(id.String())}
		r.by[id] = ss
	}
	if !ss.loaded {
		ss.loaded = true
		ss.load()
	}
	return ss
}

// stateFile is the scratch's record of its services.
func (ss *sessionServices) stateFile() string { return filepath.Join(ss.dir, "services.json") }

// socket is where the daemon reaches port of the session's services.
func (ss *sessionServices) socket(port int) string {
	return filepath.Join(ss.dir, "ports", strconv.Itoa(port)+".sock")
}

// load reads what a daemon before this one left: its running services
// ended with it.
func (ss *sessionServices) load() {
	b, err := os.ReadFile(ss.stateFile())
	if err != nil {
		return
	}
	var infos []ServiceInfo
	if json.Unmarshal(b, &infos) != nil {
		return
	}
	for _, in := range infos {
		if in.Running() {
			in.State, in.Reason, in.PID = ServiceStopped, ReasonRestarted, 0
			ss.dirty = true // what it wrote is still to be recorded
		}
		ss.list = append(ss.list, &service{info: in, logs: newLogRing()})
	}
	ss.save()
}

// save writes the state file (best effort: it only tells a later daemon
// which services it no longer runs).
func (ss *sessionServices) save() {
	if ss.gone {
		return
	}
	infos := make([]ServiceInfo, 0, len(ss.list))
	for _, s := range ss.list {
		infos = append(infos, s.current())
	}
	b, _ := json.Marshal(infos)
	if err := os.MkdirAll(ss.dir, 0o700); err != nil {
		return
	}
	tmp := ss.stateFile() + ".tmp"
	if os.WriteFile(tmp, b, 0o600) == nil {
		_ = os.Rename(tmp, ss.stateFile())
	}
}

// checkService validates the options; nothing starts when they are
// wrong.
func (e *Executor) checkService(opts *ServiceOptions) ([]string, error) {
	if !serviceNameRE.MatchString(opts.Name) {
		return nil, fmt.Errorf("%w: service name %q: want 1 to 63 of a-z, 0-9, '.', '_', '-', starting with a letter or digit", record.ErrInvalid, opts.Name)
	}
	if opts.Port != 0 {
		if err := CheckPort(opts.Port); err != nil {
			return nil, err
		}
	}
	switch opts.Restart {
	case "":
		opts.Restart = "no"
	case "no", "on-failure":
	default:
		return nil, fmt.Errorf("%w: restart %q: use no or on-failure", record.ErrInvalid, opts.Restart)
	}
	if opts.Ready.HTTP != "" && opts.Ready.TCP {
		return nil, fmt.Errorf("%w: ready: give http or tcp, not both", record.ErrInvalid)
	}
	if opts.Ready.HTTP != "" && !strings.HasPrefix(opts.Ready.HTTP, "/") {
		return nil, fmt.Errorf("%w: ready.http %q: want a path starting with /", record.ErrInvalid, opts.Ready.HTTP)
	}
	if (opts.Ready.HTTP != "" || opts.Ready.TCP) && opts.Port == 0 {
		return nil, fmt.Errorf("%w: ready: a ready check needs the service's port", record.ErrInvalid)
	}
	if opts.Ready.Timeout < 0 || opts.Ready.Timeout > time.Hour {
		return nil, fmt.Errorf("%w: ready.timeout_seconds: want 0 to 3600", record.ErrInvalid)
	}
	if opts.Ready.Timeout == 0 {
		opts.Ready.Timeout = DefaultReadyTimeout
	}
	x := ExecOptions{Argv: opts.Argv, Command: opts.Command, Cwd: opts.Cwd, Env: opts.Env}
	argv, cwd, _, err := e.checkExec(&x)
	if err != nil {
		return nil, err
	}
	opts.Cwd = cwd
	return argv, nil
}

// StartService starts a service on the session's view and, with a ready
// check, waits until it passes. A check that does not pass in time stops
// the service; the error then carries the end of its output.
func (e *Executor) StartService(ctx context.Context, id uuid.UUID, opts ServiceOptions) (ServiceInfo, error) {
	if e.workdirs == nil {
		return ServiceInfo{}, ErrNoWorkdir
	}
	argv, err := e.checkService(&opts)
	if err != nil {
		return ServiceInfo{}, err
	}
	ls, err := e.lockLive(ctx, id)
	if err != nil {
		return ServiceInfo{}, err
	}
	if err := e.recorder.checkOpen(ctx, ls); err != nil {
		ls.unlock()
		return ServiceInfo{}, err
	}
	if ls.busy {
		ls.unlock()
		return ServiceInfo{}, fmt.Errorf("session %s: %w", id, ErrBusy)
	}
	if ls.policy.limitsReads() && !e.workdirs.Isolated() {
		ls.unlock()
		return ServiceInfo{}, fmt.Errorf("%w: the session's policy limits reads, and this daemon runs commands without namespaces (isolated false), where they could read past it", record.ErrForbidden)
	}
	if opts.Cwd != "" {
		if shown, err := e.shownDir(ctx, ls, opts.Cwd); err != nil || !shown {
			ls.unlock()
			return ServiceInfo{}, fmt.Errorf("%w: cwd %q is not a directory of the view", record.ErrInvalid, opts.Cwd)
		}
	}
	limits, network, err := e.limitsFor(ctx, ls.meta.Repo, opts.Network)
	if err != nil {
		ls.unlock()
		return ServiceInfo{}, err
	}
	vars, err := e.repos.Variables(ctx, ls.meta.Repo)
	if err != nil {
		ls.unlock()
		return ServiceInfo{}, err
	}
	env := commandEnv(vars, ls.meta.Env, opts.Env)
	private := ls.meta.Caches == CachesPrivate || ls.policy.limitsReads()

	e.svcs.mu.Lock()
	ss := e.svcs.session(e, id)
	if old := ss.find(opts.Name); old != nil && old.info.Running() {
		e.svcs.mu.Unlock()
		ls.unlock()
		return ServiceInfo{}, fmt.Errorf("%w: service %q: the session runs one by that name already", record.ErrDuplicate, opts.Name)
	}
	var reach []workdir.PortLink
	for _, o := range ss.list {
		if !o.info.Running() || o.info.Port == 0 {
			continue
		}
		if o.info.Port == opts.Port {
			e.svcs.mu.Unlock()
			ls.unlock()
			return ServiceInfo{}, fmt.Errorf("%w: port %d: service %q of the session has it", record.ErrDuplicate, opts.Port, o.info.Name)
		}
		reach = append(reach, workdir.PortLink{Port: o.info.Port, Socket: ss.socket(o.info.Port)})
	}
	s := &service{opts: opts, logs: newLogRing(), started: make(chan struct{}), info: ServiceInfo{Name: opts.Name, Argv: maskArgv(vars.Masker, argv), Port: opts.Port, State: ServiceStarting, Restart: opts.Restart, Restarts: opts.restarts, Started: time.Now().UTC(), Network: opts.Network}, network: network}
	if old := ss.find(opts.Name); old != nil {
		ss.list = slices.DeleteFunc(ss.list, func(x *service) bool { return x == old })
	}
	ss.list = append(ss.list, s)
	ss.used = time.Now()
	ss.dirty = true
	ls.serving++
	e.svcs.mu.Unlock()

	ls.busy = true
	view := e.execView(ls, ls.ov.Clone())
	target := targetOf(ls)
	ls.unlock()

	// The environment layer the session's commands get (a development
	// server needs the installed dependencies too).
	envLayer, _, _, err := e.environmentFor(ctx, target, vars, limits, workspaceOf(view))
	if err != nil {
		e.unbusy(ls)
		e.serviceEnded(id, ss, s, nil, err)
		return ServiceInfo{}, err
	}
	view.Env = envLayer

	var expose []workdir.PortLink
	if opts.Port != 0 {
		sock := ss.socket(opts.Port)
		if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
			e.unbusy(ls)
			e.serviceEnded(id, ss, s, nil, err)
			return ServiceInfo{}, err
		}
		_ = os.Remove(sock)
		expose = []workdir.PortLink{{Port: opts.Port, Socket: sock}}
	}
	cmd := workdir.Command{
		Argv: argv, Cwd: opts.Cwd, Env: env, Workspace: workspaceOf(view), Limits: limits,
		Caches: workdir.Caches{Repo: ls.meta.Repo, Private: private},
		Expose: expose, Reach: reach, OutputCap: 64 << 10,
	}
	network.Apply(&cmd)
	masker := vars.Masker
	out, _ := maskOutput(masker, s.logs.write)
	if out == nil {
		out = s.logs.write
	}
	cmd.Output = out
	cmd.Started = func(pid int) {
		e.svcs.mu.Lock()
		s.info.PID = pid
		e.svcs.mu.Unlock()
		close(s.started)
	}
	sv, err := e.serve(ctx, view, cmd)
	e.unbusy(ls)
	if err != nil {
		e.serviceEnded(id, ss, s, nil, err)
		return ServiceInfo{}, err
	}
	e.svcs.mu.Lock()
	s.sv = sv
	if opts.Ready.HTTP == "" && !opts.Ready.TCP {
		s.info.State = ServiceRunning
	}
	ss.save()
	e.startJanitor()
	e.svcs.mu.Unlock()
	go e.watch(id, ss, s, sv)
	// The answer names the pid the service has inside: wait for the
	// sandbox to report it, or, for a service that never started, for
	// its end to be recorded (so that the answer says how it failed).
	select {
	case <-s.started:
	case <-sv.Done():
		select {
		case <-e.ended(s):
		case <-ctx.Done():
		}
	case <-ctx.Done():
	}

	if opts.Ready.HTTP != "" || opts.Ready.TCP {
		if err := e.awaitReady(ctx, ss, s, sv); err != nil {
			e.svcs.mu.Lock()
			if s.stop == "" {
				s.stop = ReasonNotReady
			}
			e.svcs.mu.Unlock()
			sv.Stop(serviceStopGrace)
			<-e.ended(s)
			tail := s.logs.tail(40)
			e.svcs.mu.Lock()
			s.info.LogTail = tail
			ss.save()
			e.svcs.mu.Unlock()
			return ServiceInfo{}, fmt.Errorf("%w: service %q: %v; it was stopped. Its last output:\n%s", record.ErrInvalid, opts.Name, err, tail)
		}
		e.svcs.mu.Lock()
		if s.info.State == ServiceStarting {
			s.info.State = ServiceRunning
		}
		ss.save()
		e.svcs.mu.Unlock()
	}
	e.svcs.mu.Lock()
	defer e.svcs.mu.Unlock()
	return s.current(), nil
}

func maskArgv(m *secret.Masker, argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = m.String(a)
	}
	return out
}

// serve prepares the scratch for view and starts cmd as a service on it.
func (e *Executor) serve(ctx context.Context, view workdir.View, cmd workdir.Command) (*workdir.Service, error) {
	sc, err := e.workdirs.Prepare(ctx, view)
	if err != nil {
		return nil, err
	}
	sv, err := sc.Serve(cmd)
	if err != nil {
		sc.Abort()
		return nil, err
	}
	if err := sc.Settle(context.WithoutCancel(ctx), view, nil); err != nil {
		sv.Kill()
		return nil, err
	}
	return sv, nil
}

func (e *Executor) unbusy(ls *live) {
	ls.mu.Lock()
	ls.busy = false
	ls.unlock()
}

// ended is closed once s's watcher recorded its end.
func (e *Executor) ended(s *service) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		for {
			e.svcs.mu.Lock()
			done := !s.info.Running() && s.info.State != ""
			e.svcs.mu.Unlock()
			if done {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return ch
}

// awaitReady polls the service's ready check until it passes, the
// service ends, or the check's timeout passes.
func (e *Executor) awaitReady(ctx context.Context, ss *sessionServices, s *service, sv *workdir.Service) error {
	// The check's time runs from the process's start: building its
	// sandbox is the daemon's part.
	select {
	case <-s.started:
	case <-sv.Done():
		return errors.New("it exited before its ready check passed")
	case <-ctx.Done():
		return ctx.Err()
	}
	deadline := time.NewTimer(s.opts.Ready.Timeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	sock := ss.socket(s.opts.Port)
	for {
		if e.readyOnce(ctx, sock, s.opts) {
			return nil
		}
		select {
		case <-sv.Done():
			return errors.New("it exited before its ready check passed")
		case <-deadline.C:
			return fmt.Errorf("its ready check did not pass within %s", s.opts.Ready.Timeout)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// readyOnce runs the ready check once.
func (e *Executor) readyOnce(ctx context.Context, sock string, opts ServiceOptions) bool {
	dial := func(ctx context.Context) (net.Conn, error) { return e.dialSocket(ctx, sock, opts.Port) }
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if opts.Ready.TCP {
		if !e.workdirs.Isolated() {
			c, err := dial(ctx)
			if err == nil {
				c.Close()
			}
			return err == nil
		}
		// The relay accepts before it tries the port: its probe says.
		c, err := workdir.DialSocket(ctx, filepath.Join(filepath.Dir(sock), workdir.ProbeSocket(filepath.Base(sock))))
		if err != nil {
			return false
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		var b [1]byte
		_, err = io.ReadFull(c, b[:])
		return err == nil && b[0] == '1'
	}
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) }, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(opts.Port)+opts.Ready.HTTP, nil)
	if err != nil {
		return false
	}
	res, err := tr.RoundTrip(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
	res.Body.Close()
	return res.StatusCode < 400
}

// dialSocket reaches port of a session's service: through its socket,
// or (unisolated, where the service shares the host's network) directly.
func (e *Executor) dialSocket(ctx context.Context, sock string, port int) (net.Conn, error) {
	if !e.workdirs.Isolated() {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(port))
	}
	return workdir.DialSocket(ctx, sock)
}

// watch waits for the service's end and records it; a service that
// failed and may restart is started again.
func (e *Executor) watch(id uuid.UUID, ss *sessionServices, s *service, sv *workdir.Service) {
	res, err := sv.Result()
	e.serviceEnded(id, ss, s, &res, err)
	e.svcs.mu.Lock()
	restart := s.opts.Restart == "on-failure" && s.stop == "" && !e.svcs.closing && (err != nil || res.ExitCode != 0) && s.info.Restarts < 5
	n := s.info.Restarts
	e.svcs.mu.Unlock()
	if !restart {
		return
	}
	time.Sleep(time.Duration(n+1) * 200 * time.Millisecond)
	opts := s.opts
	opts.restarts = n + 1
	if _, err := e.StartService(context.Background(), id, opts); err != nil {
		e.svcs.mu.Lock()
		if cur := ss.find(s.info.Name); cur == s {
			s.info.Reason = "not restarted: " + err.Error()
			ss.save()
		}
		e.svcs.mu.Unlock()
	}
}

// serviceEnded records the end of s: how it ended, the state file, and
// the session's count of running services.
func (e *Executor) serviceEnded(id uuid.UUID, ss *sessionServices, s *service, res *workdir.Result, err error) {
	e.svcs.mu.Lock()
	if !s.info.Running() || e.svcs.closing {
		e.svcs.mu.Unlock()
		return
	}
	now := time.Now().UTC()
	s.info.Ended = &now
	switch {
	case s.stop != "":
		s.info.State, s.info.Reason = ServiceStopped, s.stop
		if s.stop == ReasonNotReady {
			s.info.State = ServiceFailed
		}
	case err != nil:
		s.info.State, s.info.Reason = ServiceFailed, err.Error()
	case res.ExitCode != 0:
		s.info.State = ServiceFailed
	default:
		s.info.State = ServiceExited
	}
	if res != nil && err == nil && s.stop == "" {
		code := res.ExitCode
		s.info.ExitCode = &code
		if res.Signal != "" {
			s.info.Reason = "ended by " + res.Signal
		}
	}
	if s.info.State == ServiceFailed && s.info.LogTail == "" {
		s.info.LogTail = s.logs.tail(20)
	}
	s.logs.close()
	ss.save()
	e.svcs.mu.Unlock()
	// The session may unload again once nothing serves.
	if ls, lerr := e.mem.lockEntry(context.Background(), id); lerr == nil {
		if ls.serving > 0 {
			ls.serving--
		}
		ls.unlock()
	}
}

// ListServices lists the session's services, the stopped ones too.
func (e *Executor) ListServices(ctx context.Context, id uuid.UUID) ([]ServiceInfo, error) {
	if e.workdirs == nil {
		return nil, ErrNoWorkdir
	}
	if _, err := e.Get(ctx, id); err != nil {
		return nil, err
	}
	e.svcs.mu.Lock()
	defer e.svcs.mu.Unlock()
	ss := e.svcs.session(e, id)
	out := make([]ServiceInfo, 0, len(ss.list))
	for _, s := range ss.list {
		out = append(out, s.current())
	}
	return out, nil
}

// StopService stops the named service: SIGTERM, then after a grace
// period its whole tree. What it changed is recorded then.
func (e *Executor) StopService(ctx context.Context, id uuid.UUID, name string) (ServiceInfo, error) {
	if e.workdirs == nil {
		return ServiceInfo{}, ErrNoWorkdir
	}
	if _, err := e.Get(ctx, id); err != nil {
		return ServiceInfo{}, err
	}
	e.svcs.mu.Lock()
	ss := e.svcs.session(e, id)
	s := ss.find(name)
	if s == nil {
		e.svcs.mu.Unlock()
		return ServiceInfo{}, fmt.Errorf("%w: service %q: the session has none by that name", record.ErrNotFound, name)
	}
	if !s.info.Running() || s.sv == nil {
		info := s.current()
		e.svcs.mu.Unlock()
		return info, nil
	}
	s.stop = ReasonRequested
	sv := s.sv
	e.svcs.mu.Unlock()
	sv.Stop(serviceStopGrace)
	<-e.ended(s)
	if err := e.CaptureServices(ctx, id); err != nil && !errors.Is(err, ErrBusy) {
		return ServiceInfo{}, err
	}
	e.svcs.mu.Lock()
	defer e.svcs.mu.Unlock()
	return s.current(), nil
}

// ServiceLogs passes the named service's output to out, line by line:
// the last tail lines first, then, with follow, what comes until the
// service ends or ctx does.
func (e *Executor) ServiceLogs(ctx context.Context, id uuid.UUID, name string, tail int, follow bool, out func(line string) error) error {
	if e.workdirs == nil {
		return ErrNoWorkdir
	}
	if tail < 0 || tail > maxLogLines {
		return fmt.Errorf("%w: tail %d: want 0 to %d", record.ErrInvalid, tail, maxLogLines)
	}
	if _, err := e.Get(ctx, id); err != nil {
		return err
	}
	e.svcs.mu.Lock()
	ss := e.svcs.session(e, id)
	s := ss.find(name)
	e.svcs.mu.Unlock()
	if s == nil {
		return fmt.Errorf("%w: service %q: the session has none by that name", record.ErrNotFound, name)
	}
	return s.logs.follow(ctx, tail, follow, out)
}

// dialTarget notes a request through the session's port (the idle
// clock starts again) and returns its socket, or an error naming the
// port when no running service of the session declared it.
func (e *Executor) dialTarget(id uuid.UUID, port int) (string, error) {
	if err := CheckPort(port); err != nil {
		return "", err
	}
	e.svcs.mu.Lock()
	defer e.svcs.mu.Unlock()
	ss := e.svcs.session(e, id)
	for _, s := range ss.list {
		if s.info.Running() && s.info.Port == port {
			ss.used = time.Now()
			return ss.socket(port), nil
		}
	}
	return "", fmt.Errorf("%w: port %d: no running service of session %s declared it", record.ErrNotFound, port, id)
}

// servicePorts are the links a command of the session gets to its
// running services' ports; touching counts as use (the idle clock).
func (e *Executor) servicePorts(id uuid.UUID) []workdir.PortLink {
	e.svcs.mu.Lock()
	defer e.svcs.mu.Unlock()
	ss := e.svcs.by[id]
	if ss == nil {
		return nil
	}
	ss.used = time.Now()
	var out []workdir.PortLink
	for _, s := range ss.list {
		if s.info.Running() && s.info.Port != 0 {
			out = append(out, workdir.PortLink{Port: s.info.Port, Socket: ss.socket(s.info.Port)})
		}
	}
	return out
}

// CaptureServices records what the session's services changed in
// tracked files since the last capture, as one mutation with op
// service. Nothing happens when no service ran since.
func (e *Executor) CaptureServices(ctx context.Context, id uuid.UUID) error {
	if e.workdirs == nil {
		return nil
	}
	e.svcs.mu.Lock()
	ss := e.svcs.session(e, id)
	if !ss.dirty {
		e.svcs.mu.Unlock()
		return nil
	}
	var names []string
	var argv []string
	for _, s := range ss.list {
		if s.info.Running() || s.info.Ended != nil {
			names = append(names, s.info.Name)
			argv = s.info.Argv
		}
	}
	if ss.running() == 0 {
		ss.dirty = false
	}
	e.svcs.mu.Unlock()
	if len(names) != 1 {
		argv = nil
	}
	ls, err := e.lockLive(ctx, id)
	if err != nil {
		return err
	}
	if ls.busy {
		ls.unlock()
		return fmt.Errorf("session %s: %w", id, ErrBusy)
	}
	if err := e.recorder.checkWritable(ctx, ls); err != nil {
		ls.unlock()
		return nil // nothing may be recorded: the next settling undoes it
	}
	ls.busy = true
	view := e.execView(ls, ls.ov.Clone())
	// Only to capture: the view is made as it is now.
	view.KeepEnv = true
	ls.unlock()
	sc, err := e.workdirs.Prepare(ctx, view)
	if err != nil {
		e.unbusy(ls)
		return err
	}
	cctx := context.WithoutCancel(ctx)
	changes, err := sc.CaptureNow(cctx, view, e.limits.MaxFileBytes)
	if err != nil {
		sc.Abort()
		e.unbusy(ls)
		return fmt.Errorf("capture: %w", err)
	}
	ls.mu.Lock()
	defer ls.unlock()
	ls.busy = false
	settle := make([]string, 0, len(changes))
	for _, c := range changes {
		settle = append(settle, c.Path)
	}
	if len(changes) > 0 {
		info := &ExecInfo{Argv: argv, Service: strings.Join(names, ",")}
		if _, _, _, err := e.recordChanges(cctx, ls, OpService, "", info, changes); err != nil {
			_ = sc.Settle(cctx, e.execView(ls, ls.ov), settle)
			return err
		}
	}
	return sc.Settle(cctx, e.execView(ls, ls.ov), settle)
}

// pushToServices brings what a mutation changed (an API write, a
// rollback, a rebase in copy mode) into the view of the session's running
// services at once, as a command's Prepare would: a development server
// sees the agent's edits while it runs. ls.mu is held and no command is
// between Prepare and Settle (writes wait for none: they are refused
// while one runs, and a command's own changes are in the view already).
// Best effort: what cannot be brought now is at the next command.
func (e *Executor) pushToServices(ctx context.Context, ls *live) {
	if e.workdirs == nil || ls.serving == 0 || ls.busy {
		return
	}
	view := e.execView(ls, ls.ov)
	view.KeepEnv = true
	sc, err := e.workdirs.Prepare(ctx, view)
	if err != nil {
		return // overlay mode on a new base: the next command says why
	}
	_ = sc.Settle(context.WithoutCancel(ctx), view, nil)
}

// stopSession kills the session's services at once (the session ended).
func (e *Executor) stopSession(id uuid.UUID, reason string) {
	e.svcs.mu.Lock()
	ss := e.svcs.by[id]
	var svs []*workdir.Service
	if ss != nil {
		ss.gone = true
		for _, s := range ss.list {
			if s.info.Running() && s.sv != nil {
				s.stop = reason
				svs = append(svs, s.sv)
			}
		}
	}
	e.svcs.mu.Unlock()
	for _, sv := range svs {
		sv.Kill()
	}
}

// StopAllServices stops every service at once (the daemon shuts down):
// a later daemon reads them as stopped by its restart.
func (e *Executor) StopAllServices() {
	e.svcs.mu.Lock()
	e.svcs.closing = true
	var svs []*workdir.Service
	for _, ss := range e.svcs.by {
		for _, s := range ss.list {
			if s.info.Running() && s.sv != nil {
				svs = append(svs, s.sv)
			}
		}
	}
	e.svcs.mu.Unlock()
	for _, sv := range svs {
		sv.Kill()
	}
}

// startJanitor starts the idle check while services run; e.svcs.mu must
// be held.
func (e *Executor) startJanitor() {
	if e.svcs.janitor {
		return
	}
	e.svcs.janitor = true
	go e.janitor()
}

// janitor stops the services of sessions idle for their period; it ends
// when no service runs.
func (e *Executor) janitor() {
	for {
		// A policy's period is whole seconds: a check every 250 ms
		// stops a service at most that late.
		time.Sleep(250 * time.Millisecond)
		e.svcs.mu.Lock()
		any := false
		unused := map[uuid.UUID]time.Duration{} // unused for so long
		for id, ss := range e.svcs.by {
			if ss.running() == 0 {
				continue
			}
			any = true
			if ss.open == 0 {
				unused[id] = time.Since(ss.used)
			}
		}
		if !any || e.svcs.closing {
			e.svcs.janitor = false
			e.svcs.mu.Unlock()
			return
		}
		e.svcs.mu.Unlock()
		for id, d := range unused {
			if d > e.idleOf(id) {
				e.stopIdle(id)
			}
		}
	}
}

// idleOf is the idle period of the session's services: its
// repository's policy's.
func (e *Executor) idleOf(id uuid.UUID) time.Duration {
	ctx := context.Background()
	s, err := e.store.GetSession(ctx, id)
	if err != nil {
		return DefaultServiceIdle
	}
	p, err := e.repos.Policy(ctx, s.Repo)
	if err != nil || p.Exec.ServiceIdleSeconds <= 0 {
		return DefaultServiceIdle
	}
	return time.Duration(p.Exec.ServiceIdleSeconds) * time.Second
}

// stopIdle stops the session's services for idleness, recording what
// they changed.
func (e *Executor) stopIdle(id uuid.UUID) {
	e.svcs.mu.Lock()
	ss := e.svcs.by[id]
	var svs []*service
	for _, s := range ss.list {
		if s.info.Running() && s.sv != nil {
			s.stop = ReasonIdle
			svs = append(svs, s)
		}
	}
	e.svcs.mu.Unlock()
	for _, s := range svs {
		s.sv.Stop(serviceStopGrace)
		<-e.ended(s)
	}
	_ = e.CaptureServices(context.Background(), id)
}

// maxLogLines is the lines of output a service keeps.
const maxLogLines = 1000

// logRing keeps a service's last lines of output and wakes followers.
type logRing struct {
	mu      sync.Mutex
	lines   []string
	partial bytes.Buffer
	seq     int64 // lines written in all
	closed  bool
	wake    chan struct{}
}

func newLogRing() *logRing { return &logRing{wake: make(chan struct{})} }

func (l *logRing) write(_ string, p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial.Write(p)
	data := l.partial.Bytes()
	last := bytes.LastIndexByte(data, '\n')
	if last < 0 && len(data) < 64<<10 {
		return
	}
	complete, rest := data, []byte(nil)
	if last >= 0 {
		complete, rest = data[:last], data[last+1:]
	}
	for _, line := range strings.Split(string(complete), "\n") {
		l.lines = append(l.lines, line)
		l.seq++
	}
	rest = slices.Clone(rest)
	l.partial.Reset()
	l.partial.Write(rest)
	if over := len(l.lines) - maxLogLines; over > 0 {
		l.lines = slices.Delete(l.lines, 0, over)
	}
	close(l.wake)
	l.wake = make(chan struct{})
}

func (l *logRing) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.partial.Len() > 0 {
		l.lines = append(l.lines, l.partial.String())
		l.seq++
		l.partial.Reset()
	}
	if !l.closed {
		l.closed = true
		close(l.wake)
	}
}

// tail is the last n lines, one string.
func (l *logRing) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := l.lines[max(0, len(l.lines)-n):]
	s := strings.Join(lines, "\n")
	if l.partial.Len() > 0 {
		if s != "" {
			s += "\n"
		}
		s += l.partial.String()
	}
	return s
}

// follow passes the last n lines, then each new one, until the log
// closes or ctx ends.
func (l *logRing) follow(ctx context.Context, n int, follow bool, out func(string) error) error {
	l.mu.Lock()
	start := l.seq - int64(min(n, len(l.lines)))
	l.mu.Unlock()
	next := start
	for {
		l.mu.Lock()
		first := l.seq - int64(len(l.lines))
		if next < first {
			next = first
		}
		pending := slices.Clone(l.lines[next-first:])
		next = l.seq
		wake, closed := l.wake, l.closed
		l.mu.Unlock()
		for _, line := range pending {
			if err := out(line); err != nil {
				return err
			}
		}
		if closed || !follow {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return nil
		}
	}
}

// PortRef names a port of a session's services: by the session's id, or
// (a preview host name) by the first characters of its id.
type PortRef struct {
	Session uuid.UUID
	Short   string
	Port    int
}

// ShortID is the part of a session's id in its preview host names.
func ShortID(id uuid.UUID) string { return id.String()[:8] }

// PortDialer checks that a running service of the session declared the
// port (ErrNotFound naming it when none did), notes the use (the idle
// clock starts again), and returns the session's id and how to connect
// to the port inside the service's sandbox.
func (e *Executor) PortDialer(ctx context.Context, ref PortRef) (uuid.UUID, func(context.Context) (net.Conn, error), error) {
	if e.workdirs == nil {
		return uuid.Nil, nil, ErrNoWorkdir
	}
	id := ref.Session
	if id == uuid.Nil {
		e.svcs.mu.Lock()
		var found []uuid.UUID
		for sid, ss := range e.svcs.by {
			if ShortID(sid) == ref.Short && ss.running() > 0 {
				found = append(found, sid)
			}
		}
		e.svcs.mu.Unlock()
		if len(found) != 1 {
			return uuid.Nil, nil, fmt.Errorf("%w: preview %d-%s: no one session with running services has that id", record.ErrNotFound, ref.Port, ref.Short)
		}
		id = found[0]
	}
	sock, err := e.dialTarget(id, ref.Port)
	if err != nil {
		return uuid.Nil, nil, err
	}
	port := ref.Port
	return id, func(ctx context.Context) (net.Conn, error) {
		c, err := e.dialSocket(ctx, sock, port)
		if err != nil {
			return nil, err
		}
		return e.counted(id, c), nil
	}, nil
}

// counted is c, counted among the session's open port connections
// until it closes.
func (e *Executor) counted(id uuid.UUID, c net.Conn) net.Conn {
	e.svcs.mu.Lock()
	ss := e.svcs.by[id]
	if ss != nil {
		ss.open++
	}
	e.svcs.mu.Unlock()
	if ss == nil {
		return c
	}
	return &countedConn{Conn: c, done: func() {
		e.svcs.mu.Lock()
		ss.open--
		ss.used = time.Now()
		e.svcs.mu.Unlock()
	}}
}

type countedConn struct {
	net.Conn
	once sync.Once
	done func()
}

func (c *countedConn) Close() error {
	c.once.Do(c.done)
	return c.Conn.Close()
}
