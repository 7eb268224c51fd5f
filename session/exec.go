package session

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/overlay"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/secret"
	"github.com/sessiond/sessiond/workdir"
)

// ExecConfig bounds commands run on sessions. Zero fields take the
// defaults of the specification.
type ExecConfig struct {
	// DefaultTimeout applies when a command names none: 600 s.
	DefaultTimeout time.Duration
	// MaxTimeout is the daemon's limit; a longer timeout is refused: 1 h.
	MaxTimeout time.Duration
	// OutputCap is the output kept per stream (its tail): 1 MiB.
	OutputCap int
	// Limits bound every command (zero fields: workdir.DefaultLimits).
	Limits workdir.Limits
	// HostNetwork lets commands that ask for it share the host's network.
	// A daemon without an admin token keeps it off unless told otherwise:
	// any process on the host network could drive its API.
	HostNetwork bool
	// Ran, when set, learns of every command that ran, with its result
	// (whether it changed files or not): the checks of changesets keep
	// them. It is called with the session's lock held, so it must be
	// quick, and it cannot fail the exec.
	Ran func(ctx context.Context, session uuid.UUID, res ExecResult)
}

func (c *ExecConfig) fill() {
	if c.DefaultTimeout <= 0 {
		c.DefaultTimeout = 600 * time.Second
	}
	if c.MaxTimeout <= 0 {
		c.MaxTimeout = time.Hour
	}
	if c.DefaultTimeout > c.MaxTimeout {
		c.DefaultTimeout = c.MaxTimeout
	}
	if c.OutputCap <= 0 {
		c.OutputCap = 1 << 20
	}
}

// Executor runs commands on sessions' views (package workdir) and records
// what each changed as one exec mutation: the busy mark that holds writes
// off while a command runs, the view a command sees, capturing and
// settling its scratch. It works on the sessions of the Manager it is
// built over (embedded: its methods reach the sessions as the Manager's
// do), in the view directories that Manager was configured with.
type Executor struct {
	*Manager
	workdirs *workdir.Manager
	exec     ExecConfig
	live     liveRegistry // the running commands, for FollowExec
	plans    planCache    // resolved environment plans (environment.go)
	svcs     *serviceRegistry
}

// NewExecutor returns the command runner over m's sessions, bounded by
// cfg. Without view directories (Config.Workdirs nil) every Exec is
// ErrNoWorkdir.
func NewExecutor(m *Manager, cfg ExecConfig) *Executor {
	cfg.fill()
	e := &Executor{Manager: m, workdirs: m.workdirs, exec: cfg, svcs: &serviceRegistry{}}
	// A session that ends stops its services.
	m.recorder.ended = func(id uuid.UUID) { e.stopSession(id, ReasonEnded) }
	m.services = e.CaptureServices
	m.recorder.mutated = e.pushToServices
	return e
}

// RecordMode says when an exec's changes are recorded.
type RecordMode string

// Record modes.
const (
	RecordAlways    RecordMode = "always"
	RecordOnSuccess RecordMode = "on_success"
	RecordNever     RecordMode = "never"
)

// ExecOptions describe a command to run on a session's view.
type ExecOptions struct {
	// Argv is the program and its arguments; Command, instead, is shell
	// text run by /bin/sh -c. Exactly one is given.
	Argv    []string
	Command string
	// Cwd is a directory of the view; "" is its root.
	Cwd string
	// Env is added to the minimal environment.
	Env   map[string]string
	Stdin []byte
	// Timeout: zero takes the default; over the daemon's limit is refused.
	Timeout time.Duration
	// Network asks for the network the repository's policy gives
	// (network.go): the host's, where the daemon allows it
	// (ExecConfig.HostNetwork), or an allowlist's destinations through
	// an egress proxy; without it the command has a network namespace of
	// its own with only its loopback.
	Network bool
	Record  RecordMode
	Actor   string
	// Caches is "shared" (the default: the repository's shared tool
	// caches) or "private" (the session's own). A session whose policy
	// limits reads always gets private ones, so hidden content never
	// reaches a cache another session reads.
	Caches string
	// Output, when set, receives the output as it comes.
	Output func(stream string, p []byte)
}

// ExecChange is one path a command changed.
type ExecChange struct {
	Path   string         `json:"path"`
	Status overlay.Status `json:"status"`
	Mode   gitstore.Mode  `json:"mode"`
}

// ExecRejection is a change that was not recorded, and undone.
type ExecRejection struct {
	Path    string `json:"path"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

// ExecResult is what a command did and what of it was recorded.
type ExecResult struct {
	Argv            []string
	ExitCode        int
	Signal          string
	TimedOut        bool
	Duration        time.Duration
	Stdout, Stderr  []byte
	OutputTruncated bool
	// Changes are what the command changed and was recorded (or, when
	// nothing was recorded, what it changed and was undone).
	Changes  []ExecChange
	Rejected []ExecRejection
	// Mutation is the exec mutation, nil when nothing was recorded.
	Mutation *MutationRecord
	// Seq is the session's latest mutation when the command finished:
	// Mutation's, or the one the command ran on.
	Seq int64
	// Recorded is false when the session could not record (read-only,
	// closed) or the record mode said not to; NotRecorded says why.
	Recorded    bool
	NotRecorded string
	Isolated    bool
	// Limits are the limits the command ran under and how each was
	// enforced; Exceeded those it ran into (workdir.Result).
	Limits   []workdir.AppliedLimit
	Exceeded []string
	// Landlock is the Landlock ABI that restricted the command (0: none).
	Landlock int
	// Checkpoints are those the commits the command made in the view's
	// .git became, in order; GitNote says why commits did not (an amend,
	// a reset, a refused change); GitAbsent why the view had no .git.
	Checkpoints []Checkpoint
	GitNote     string
	GitAbsent   string
	// NetworkRefused lists the destinations the egress proxy refused the
	// command, where its network was an allowlist (network.go).
	NetworkRefused []string
	// ToStart is the time from the call to the command's start; Prepare
	// the part of it until the scratch was ready, Setup the rest.
	// Resolve is the part of Prepare before the view's scratch is made
	// (the session, its policy and variables, the environment's plan).
	ToStart time.Duration
	Prepare time.Duration
	Resolve time.Duration
	Setup   workdir.Setup
	// Environment is the environment layer the command ran on;
	// EnvironmentStale: the session changed a key file of it.
	Environment      EnvironmentResult
	EnvironmentStale bool
}

// Values of ExecOptions.Caches.
const (
	CachesShared  = "shared"
	CachesPrivate = "private"
)

// Rules of rejected exec changes beside overlay's path rules.
const (
	RuleForbidden = "forbidden"
	RuleTooLarge  = "too_large"
	RuleSpecial   = "specialFile"
	RuleInvalid   = "invalid"
	// RuleSecret: the content holds the value of one of the repository's
	// secrets (the agent wrote a secret into the code). Writes are
	// refused by it too.
	RuleSecret = "secret"
)

// Exec runs a command on the session's view as a real directory and
// records what it changed as one exec mutation. While it runs, writes to
// the session are refused with ErrBusy and reads see the state before.
// Bad input (an empty argv, a cwd outside the view, a timeout over the
// limit) is refused before anything runs.
func (m *Executor) Exec(ctx context.Context, id uuid.UUID, opts ExecOptions) (ExecResult, error) {
	begin := time.Now()
	if m.workdirs == nil {
		return ExecResult{}, ErrNoWorkdir
	}
	argv, cwd, timeout, err := m.checkExec(&opts)
	if err != nil {
		return ExecResult{}, err
	}
	// What the session's services changed is theirs, recorded before
	// the command runs.
	if err := m.CaptureServices(ctx, id); err != nil {
		return ExecResult{}, err
	}
	ls, err := m.lockLive(ctx, id)
	if err != nil {
		return ExecResult{}, err
	}
	if ls.busy {
		ls.unlock()
		return ExecResult{}, fmt.Errorf("session %s: %w", id, ErrBusy)
	}
	limits, network, err := m.limitsFor(ctx, ls.meta.Repo, opts.Network)
	if err != nil {
		ls.unlock()
		return ExecResult{}, err
	}
	vars, err := m.repos.Variables(ctx, ls.meta.Repo)
	if err != nil {
		ls.unlock()
		return ExecResult{}, err
	}
	sessionEnv := ls.meta.Env
	if ls.policy.limitsReads() && !m.workdirs.Isolated() {
		// The view would leave the unreadable paths out, but a command
		// without namespaces can read the repository itself.
		ls.unlock()
		return ExecResult{}, fmt.Errorf("%w: the session's policy limits reads, and this daemon runs commands without namespaces (isolated false), where they could read past it", record.ErrForbidden)
	}
	if cwd != "" {
		shown, err := m.shownDir(ctx, ls, cwd)
		if err != nil || !shown {
			ls.unlock()
			if err != nil && !errors.Is(err, record.ErrNotFound) && !errors.Is(err, overlay.ErrNotFound) {
				return ExecResult{}, err
			}
			return ExecResult{}, fmt.Errorf("%w: cwd %q is not a directory of the view", record.ErrInvalid, cwd)
		}
	}
	notRecorded := ""
	if err := m.recorder.checkWritable(ctx, ls); err != nil {
		notRecorded = err.Error()
	}
	git, noGit, err := m.gitFor(ctx, ls)
	if err != nil {
		ls.unlock()
		return ExecResult{}, err
	}
	ls.busy = true
	view := m.execView(ls, ls.ov.Clone())
	target := targetOf(ls)
	ls.unlock()
	unbusy := func() {
		ls.mu.Lock()
		ls.busy = false
		ls.unlock()
	}

	envLayer, envRes, envStale, err := m.environmentFor(ctx, target, vars, limits, workspaceOf(view))
	if err != nil {
		unbusy()
		return ExecResult{}, err
	}
	view.Env = envLayer
	resolved := time.Now()
	sc, err := m.workdirs.Prepare(ctx, view)
	if err != nil {
		unbusy()
		return ExecResult{}, err
	}
	if envLayer != nil {
		envRes.fill(sc.Environment())
	}
	prepared := time.Now()
	env := commandEnv(vars, sessionEnv, opts.Env)
	// What is recorded, returned and shown to followers of the command
	// names no secret's value, even one given in its argv.
	shownArgv := argv
	if !vars.Masker.Empty() {
		shownArgv = make([]string, len(argv))
		for i, a := range argv {
			shownArgv[i] = vars.Masker.String(a)
		}
	}
	// Followers (FollowExec) see the output as the caller does.
	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	live := m.live.start(id, shownArgv, cancelRun)
	// Followers see the end once the command is recorded (Ran included)
	// and the session is no longer busy.
	end := ExecChunk{ExitCode: -1}
	defer func() { m.live.finish(id, live, end) }()
	// Every output leaves masked: the stream as it comes (a value split
	// across chunks too), to the caller and to followers alike, and the
	// kept tails below.
	output, flush := maskOutput(vars.Masker, func(stream string, p []byte) {
		live.write(stream, p)
		if opts.Output != nil {
			opts.Output(stream, p)
		}
	})
	cmd := workdir.Command{
		Argv: argv, Cwd: cwd, Env: env, Stdin: opts.Stdin, Timeout: timeout,
		OutputCap: m.exec.OutputCap, Output: output,
		Workspace: workspaceOf(view), Limits: limits,
		Caches: workdir.Caches{Repo: ls.meta.Repo, Private: opts.Caches == CachesPrivate || ls.meta.Caches == CachesPrivate || ls.policy.limitsReads()},
		Git:    git, NoGit: noGit,
		Reach: m.servicePorts(id),
	}
	network.Apply(&cmd)
	run, err := sc.Run(runCtx, cmd)
	flush()
	if err != nil {
		end.Error = err.Error()
		sc.Abort()
		unbusy()
		return ExecResult{}, err
	}
	argv = shownArgv
	end.ExitCode = run.ExitCode
	res := ExecResult{
		Argv: argv, ExitCode: run.ExitCode, Signal: run.Signal, TimedOut: run.TimedOut, Duration: run.Duration,
		Stdout: maskKept(vars.Masker, run.Stdout, run.OutputTruncated), Stderr: maskKept(vars.Masker, run.Stderr, run.OutputTruncated), OutputTruncated: run.OutputTruncated, Isolated: run.Isolated,
		Limits: run.Limits, Exceeded: run.Exceeded, Landlock: run.Landlock,
		ToStart: run.Started.Sub(begin), Prepare: prepared.Sub(begin), Resolve: resolved.Sub(begin), Setup: run.Setup,
		Environment: envRes, EnvironmentStale: envStale,
		NetworkRefused: network.Refused(),
	}
	// The view is the record's while busy: capture needs no lock. A
	// cancelled request still captures, so the scratch is settled.
	cctx := context.WithoutCancel(ctx)
	changes, err := sc.Capture(cctx, view, m.limits.MaxFileBytes)
	if err != nil {
		sc.Abort()
		unbusy()
		return ExecResult{}, fmt.Errorf("capture: %w", err)
	}

	ls.mu.Lock()
	defer ls.unlock()
	ls.busy = false
	switch {
	case notRecorded != "":
	case opts.Record == RecordNever:
		notRecorded = "record is never"
	case opts.Record == RecordOnSuccess && (run.ExitCode != 0 || run.TimedOut):
		notRecorded = "record is on_success and the command failed"
	case run.Canceled:
		notRecorded = "the request was cancelled"
	}
	settle := make([]string, 0, len(changes))
	for _, c := range changes {
		settle = append(settle, c.Path)
	}
	if notRecorded == "" && len(changes) > 0 {
		rec, applied, rejected, err := m.recordExec(cctx, ls, opts.Actor, argv, run, changes)
		switch {
		case err != nil:
			notRecorded = err.Error()
		default:
			res.Rejected, res.Changes = rejected, applied
			if rec.Seq > view.Seq {
				res.Mutation = &rec
			}
		}
	}
	res.GitAbsent = run.Git.Absent
	if notRecorded == "" {
		cps, note, err := m.gitCommits(cctx, ls, sc, run.Git, vars.Masker)
		if err != nil {
			note = "commits made in the view did not become checkpoints: " + err.Error()
		}
		res.Checkpoints, res.GitNote = cps, note
	} else if run.Git.Present && run.Git.After != run.Git.Before {
		res.GitNote = "commits made in the view did not become checkpoints: nothing of the command was recorded"
	}
	res.Seq = view.Seq
	if res.Mutation != nil {
		res.Seq = res.Mutation.Seq
	}
	res.Recorded = notRecorded == ""
	res.NotRecorded = notRecorded
	if !res.Recorded {
		for _, c := range changes {
			res.Changes = append(res.Changes, ExecChange{Path: vars.Masker.String(c.Path), Status: statusOf(ctx, view, view.Overlay, c), Mode: c.Mode})
		}
	}
	if err := sc.Settle(cctx, m.execView(ls, ls.ov), settle); err != nil {
		return res, err
	}
	// Finished while the command ran: its scratch goes now.
	m.recorder.removeScratch(ls)
	if m.exec.Ran != nil {
		m.exec.Ran(cctx, id, res)
	}
	return res, nil
}

// commandEnv is a command's environment beside the minimal one: the
// repository's plain variables and secrets, then the session's own
// variables, then the request's, each winning over those before it.
func commandEnv(vars repos.Variables, session, request map[string]string) []string {
	all := make(map[string]string, len(vars.Env)+len(vars.Secrets)+len(session)+len(request))
	for _, m := range []map[string]string{vars.Env, vars.Secrets, session, request} {
		maps.Copy(all, m)
	}
	env := make([]string, 0, len(all))
	for k, v := range all {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return env
}

// maskOutput wraps out so the secrets' values never pass, one masked
// stream per output stream; flush passes on what each held back, once
// the command ended.
func maskOutput(m *secret.Masker, out func(stream string, p []byte)) (func(string, []byte), func()) {
	if out == nil || m.Empty() {
		return out, func() {}
	}
	var mu sync.Mutex // the workdir may call from a goroutine per stream
	streams := map[string]*secret.Stream{}
	wrapped := func(stream string, p []byte) {
		mu.Lock()
		defer mu.Unlock()
		s := streams[stream]
		if s == nil {
			s = m.Stream(func(b []byte) { out(stream, b) })
			streams[stream] = s
		}
		s.Write(p)
	}
	flush := func() {
		mu.Lock()
		defer mu.Unlock()
		for _, name := range slices.Sorted(maps.Keys(streams)) {
			streams[name].Flush()
		}
	}
	return wrapped, flush
}

// maskKept masks an output's kept tail; a truncated one may start inside
// a value.
func maskKept(m *secret.Masker, p []byte, truncated bool) []byte {
	if truncated {
		return m.Tail(p)
	}
	return m.Bytes(p)
}

// limitsFor is what a command on a session of repo runs under: the
// daemon's limits narrowed by the repository's exec policy, and the
// network the policy gives a command that asks for one (network.go).
func (m *Executor) limitsFor(ctx context.Context, repo string, wantNetwork bool) (workdir.Limits, Network, error) {
	p, err := m.repos.Policy(ctx, repo)
	if err != nil {
		return workdir.Limits{}, Network{}, err
	}
	network, err := m.networkOf(p.Exec, repo, wantNetwork)
	if err != nil {
		return workdir.Limits{}, Network{}, err
	}
	e := p.Exec
	return m.exec.Limits.Fill(workdir.DefaultLimits).Narrow(workdir.Limits{
		MemoryBytes: e.MemoryBytes, Pids: e.Pids, CPUWeight: e.CPUWeight, ScratchBytes: e.ScratchBytes, TmpBytes: e.TmpBytes,
	}), network, nil
}

// workspaceOf is where a view appears inside its command's namespace:
// /workspace/<repository>, the same for every session of a repository,
// so tools that key caches on absolute paths find them again.
func workspaceOf(v workdir.View) string {
	if v.RepoName == "" {
		return workdir.DefaultWorkspace
	}
	return "/workspace/" + v.RepoName
}

// checkExec validates the options; nothing runs when they are wrong.
func (m *Executor) checkExec(opts *ExecOptions) (argv []string, cwd string, timeout time.Duration, err error) {
	argv = opts.Argv
	switch {
	case opts.Command != "" && len(argv) > 0:
		return nil, "", 0, fmt.Errorf("%w: give argv or command, not both", record.ErrInvalid)
	case opts.Command != "":
		argv = []string{"/bin/sh", "-c", opts.Command}
	case len(argv) == 0 || argv[0] == "":
		return nil, "", 0, fmt.Errorf("%w: empty argv", record.ErrInvalid)
	}
	for _, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, "", 0, fmt.Errorf("%w: argv holds a NUL byte", record.ErrInvalid)
		}
	}
	for k, v := range opts.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.IndexByte(v, 0) >= 0 {
			return nil, "", 0, fmt.Errorf("%w: environment variable %q", record.ErrInvalid, k)
		}
	}
	switch opts.Caches {
	case "", CachesShared, CachesPrivate:
	default:
		return nil, "", 0, fmt.Errorf("%w: caches %q: use shared or private", record.ErrInvalid, opts.Caches)
	}
	switch opts.Record {
	case "":
		opts.Record = RecordAlways
	case RecordAlways, RecordOnSuccess, RecordNever:
	default:
		return nil, "", 0, fmt.Errorf("%w: record %q: use always, on_success or never", record.ErrInvalid, opts.Record)
	}
	timeout = opts.Timeout
	switch {
	case timeout < 0:
		return nil, "", 0, fmt.Errorf("%w: negative timeout", record.ErrInvalid)
	case timeout == 0:
		timeout = m.exec.DefaultTimeout
	case timeout > m.exec.MaxTimeout:
		return nil, "", 0, fmt.Errorf("%w: timeout %s is over the limit of %s", record.ErrInvalid, timeout, m.exec.MaxTimeout)
	}
	cwd = strings.TrimSuffix(opts.Cwd, "/")
	if cwd == "." || cwd == "/" {
		cwd = ""
	}
	if cwd != "" {
		if err := overlay.ValidatePath(cwd); err != nil {
			return nil, "", 0, err
		}
	}
	return argv, cwd, timeout, nil
}

// shownDir reports whether dir is a directory of the session's view
// directory: one of the view with, where the policy limits reads, a file
// below it the session may read. ls.mu must be held.
func (m *Executor) shownDir(ctx context.Context, ls *live, dir string) (bool, error) {
	n, err := ls.ov.Stat(ctx, dir)
	if err != nil || !n.IsDir() {
		return false, err
	}
	if !ls.policy.limitsReads() {
		return true, nil
	}
	errFound := errors.New("found")
	err = ls.ov.List(ctx, overlay.ListOptions{Prefix: dir, Recursive: true}, func(n overlay.Node) error {
		if !n.IsDir() && ls.policy.canRead(n.Path) {
			return errFound
		}
		return ctx.Err()
	})
	if errors.Is(err, errFound) {
		return true, nil
	}
	return false, err
}

// execView is the session's view for the workdir, without the paths the
// policy does not let the session read; ls.mu must be held.
func (m *Executor) execView(ls *live, ov *overlay.Overlay) workdir.View {
	id := ls.meta.ID
	var readable func(string) bool
	if ls.policy.limitsReads() {
		readable = ls.policy.canRead
	}
	return workdir.View{
		Readable: readable,
		Session:  id.String(), Repo: ls.repo, RepoName: ls.meta.Repo, BaseTree: ls.baseTree, Seq: ls.meta.Seq, Overlay: ov,
		Changed: func(ctx context.Context, after int64) ([]string, bool, error) {
			ms, err := m.store.ListMutations(ctx, id, after, 0)
			if err != nil {
				return nil, false, err
			}
			var paths []string
			for _, mu := range ms {
				if mu.Op == OpFork || mu.Op == OpRebase {
					return nil, true, nil
				}
				paths = append(paths, mu.Paths...)
			}
			return paths, false, nil
		},
	}
}

// recordExec records the captured changes as one exec mutation, each
// change checked by the rules every write follows; those refused come
// back as rejections. ls.mu must be held.
func (m *Executor) recordExec(ctx context.Context, ls *live, actor string, argv []string, run workdir.Result, changes []workdir.Change) (MutationRecord, []ExecChange, []ExecRejection, error) {
	return m.recordChanges(ctx, ls, OpExec, actor, &ExecInfo{Argv: argv, ExitCode: run.ExitCode, DurationMS: run.Duration.Milliseconds()}, changes)
}

// recordChanges records captured changes as one mutation of op (exec, or
// service), each checked by the rules every write follows; those refused
// come back as rejections. ls.mu must be held.
func (m *Executor) recordChanges(ctx context.Context, ls *live, op Op, actor string, info *ExecInfo, changes []workdir.Change) (MutationRecord, []ExecChange, []ExecRejection, error) {
	// Deletions first, so a file may replace a directory and the reverse.
	cs := slices.Clone(changes)
	slices.SortStableFunc(cs, func(a, b workdir.Change) int {
		if a.Deleted != b.Deleted {
			if a.Deleted {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Path, b.Path)
	})
	var applied []ExecChange
	var rejected []ExecRejection
	rec, _, err := m.recorder.mutate(ctx, ls, op, actorOf(ls, actor), false, func(mu *draft) error {
		mu.exec = info
		for _, c := range cs {
			status := statusOf(ctx, m.execView(ls, mu.ov), mu.ov, c)
			err := m.applyExecChange(ctx, ls, mu, c)
			if err == nil {
				applied = append(applied, ExecChange{Path: c.Path, Status: status, Mode: c.Mode})
				continue
			}
			rj, ok := rejection(c.Path, err)
			if !ok {
				return err
			}
			// A command may have named a file after a secret.
			rj.Path, rj.Message = mu.secrets.String(rj.Path), mu.secrets.String(rj.Message)
			rejected = append(rejected, rj)
		}
		return nil
	})
	if err != nil {
		return MutationRecord{}, nil, nil, err
	}
	return rec, applied, rejected, nil
}

// statusOf says what change c is to the view ov as v shows it (a write
// over a file the view hides is an addition: the answer must not tell
// that the file exists).
func statusOf(ctx context.Context, v workdir.View, ov *overlay.Overlay, c workdir.Change) overlay.Status {
	if c.Deleted {
		return overlay.Deleted
	}
	if v.Readable != nil && !v.Readable(c.Path) {
		return overlay.Added
	}
	if _, err := ov.Stat(ctx, c.Path); err == nil {
		return overlay.Modified
	}
	return overlay.Added
}

func (m *Executor) applyExecChange(ctx context.Context, ls *live, mu *draft, c workdir.Change) error {
	if c.Special != "" {
		return &overlay.PathError{Rule: RuleSpecial, Path: c.Path, Message: "a " + c.Special + " is not a file git can hold"}
	}
	if err := overlay.ValidatePath(c.Path); err != nil {
		return err
	}
	if err := ls.policy.checkWrite(c.Path); err != nil {
		return err
	}
	if c.Deleted {
		err := ls.remove(ctx, mu, c.Path, true)
		if errors.Is(err, record.ErrNotFound) {
			return nil
		}
		return err
	}
	if c.Data == nil || c.Size > m.limits.MaxFileBytes {
		return fmt.Errorf("%w: %q is %d bytes, the limit is %d", ErrTooLarge, c.Path, c.Size, m.limits.MaxFileBytes)
	}
	if _, exists := mu.ov.Get(c.Path); !exists && mu.ov.Len() >= m.limits.MaxEntries {
		return fmt.Errorf("%w: %d overlay entries, the limit is %d", ErrTooLarge, mu.ov.Len(), m.limits.MaxEntries)
	}
	if mu.ov.ContentBytes()+c.Size > m.limits.MaxOverlayBytes {
		return fmt.Errorf("%w: %d bytes of overlay content, the limit is %d", ErrTooLarge, mu.ov.ContentBytes()+c.Size, m.limits.MaxOverlayBytes)
	}
	data := c.Data
	return ls.put(ctx, mu, c.Path, func([]byte) []byte { return data }, WriteOptions{Mode: c.Mode})
}

// rejection turns a refused change's error into its report; ok false for
// an error that is not about the change (it fails the whole record).
func rejection(p string, err error) (ExecRejection, bool) {
	var pe *overlay.PathError
	switch {
	case errors.As(err, &pe):
		return ExecRejection{Path: p, Rule: string(pe.Rule), Message: pe.Message}, true
	case errors.Is(err, record.ErrForbidden), errors.Is(err, ErrReadOnly):
		return ExecRejection{Path: p, Rule: RuleForbidden, Message: err.Error()}, true
	case errors.Is(err, ErrTooLarge):
		return ExecRejection{Path: p, Rule: RuleTooLarge, Message: err.Error()}, true
	case errors.Is(err, record.ErrInvalid), errors.Is(err, record.ErrNotFound), errors.Is(err, ErrPrecondition):
		return ExecRejection{Path: p, Rule: RuleInvalid, Message: err.Error()}, true
	}
	return ExecRejection{}, false
}

// RemoveFinishedScratches removes the scratch directory of every session
// that has ended (or that the store no longer has): one is removed at
// once when its session ends, but a crash in between leaves it. The
// daemon calls it at start, after settling interrupted accepts. It
// returns how many it removed.
func (e *Executor) RemoveFinishedScratches(ctx context.Context) (int, error) {
	if e.workdirs == nil {
		return 0, nil
	}
	n := 0
	for _, name := range e.workdirs.ScratchIDs() {
		id, err := uuid.Parse(name)
		if err != nil || id.String() != name {
			continue // not a session's
		}
		s, err := e.store.GetSession(ctx, id)
		switch {
		case errors.Is(err, record.ErrNotFound):
		case err != nil:
			return n, err
		case !s.State.Terminal():
			continue
		}
		if err := e.workdirs.Remove(name); err != nil {
			return n, fmt.Errorf("remove the scratch of session %s: %w", name, err)
		}
		n++
	}
	return n, nil
}
