package apitypes

import "time"

// ExecRequest runs a command on a session's view (section 9): Argv, or
// Command as shell text for /bin/sh -c.
type ExecRequest struct {
	Argv    []string          `json:"argv,omitempty"`
	Command string            `json:"command,omitempty"`
	Cwd     string            `json:"cwd,omitempty" sessiond:"path"`
	Env     map[string]string `json:"env,omitempty"`
	Stdin   string            `json:"stdin,omitempty"`
	// TimeoutSeconds: 0 takes the default (600); over the daemon's limit
	// is refused.
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
	// Network true asks for the network the repository's policy gives:
	// the host's (where the daemon allows it too), or the destinations
	// of its allowlist through the daemon's egress proxy; false or
	// absent gives the command a network namespace of its own with only
	// its loopback.
	Network *bool `json:"network,omitempty"`
	// Record is always (the default), on_success or never.
	Record string `json:"record,omitempty"`
	// Caches is shared (the default: the repository's shared tool
	// caches) or private (the session's own).
	Caches string `json:"caches,omitempty"`
}

// ExecChange is one path the command changed.
type ExecChange struct {
	Path   string `json:"path"`
	Status string `json:"status"`
	Mode   string `json:"mode,omitempty"`
}

// ExecRejection is a change that broke a rule: not recorded, and undone
// in the session's scratch directory.
type ExecRejection struct {
	Path    string `json:"path"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

// ExecResponse is what the command did and what was recorded. Mutation
// is null when nothing was; Recorded false (with NotRecorded saying why)
// when the session could not record or the record mode said not to.
type ExecResponse struct {
	ExitCode        int             `json:"exit_code"`
	Signal          string          `json:"signal,omitempty"`
	TimedOut        bool            `json:"timed_out"`
	DurationMS      int64           `json:"duration_ms"`
	Stdout          string          `json:"stdout"`
	Stderr          string          `json:"stderr"`
	OutputTruncated bool            `json:"output_truncated"`
	Changes         []ExecChange    `json:"changes"`
	Rejected        []ExecRejection `json:"rejected"`
	Mutation        *Mutation       `json:"mutation"`
	Recorded        bool            `json:"recorded"`
	NotRecorded     string          `json:"not_recorded,omitempty"`
	Isolated        bool            `json:"isolated"`
	// Limits are the limits the command ran under and how each was
	// enforced; LimitExceeded names those it ran into.
	Limits        []ExecLimit `json:"limits"`
	LimitExceeded []string    `json:"limit_exceeded,omitempty"`
	// LandlockABI is the Landlock ABI that restricted the command's
	// writes, signals and sockets besides its mounts; 0 where the kernel
	// has none.
	LandlockABI int `json:"landlock_abi,omitempty"`
	// Environment is the environment layer the command ran on;
	// EnvironmentStale: the session changed a key file since, so the
	// layer is the base's (run the install in the session if needed).
	Environment      *ExecEnvironment `json:"environment,omitempty"`
	EnvironmentStale bool             `json:"environment_stale,omitempty"`
	// Checkpoints are those the commits the command made in the view's
	// .git became, in order; GitNote says why commits did not (an amend
	// or a reset rewrites nothing recorded, a refused change); GitAbsent
	// why the view had no .git.
	Checkpoints []Checkpoint `json:"checkpoints"`
	GitNote     string       `json:"git_note,omitempty"`
	GitAbsent   string       `json:"git_absent,omitempty"`
	// NetworkRefused lists the destinations (host names or addresses, as
	// the command asked for them) the egress proxy refused, where the
	// command's network was the repository's allowlist.
	NetworkRefused []string `json:"network_refused,omitempty"`
}

// ExecLimit is one limit a command ran under: memory (bytes), pids,
// cpu_weight, scratch (bytes) or tmp (bytes of each private tmpfs), and
// how it was enforced: "cgroup v2", "cgroup v1", "rlimit" (per process),
// "nice", "tmpfs" or "watch" (the daemon measures the scratch and kills
// the command past it).
type ExecLimit struct {
	Name  string `json:"name"`
	Value int64  `json:"value"`
	Via   string `json:"via"`
}

// ExecOutput is the data of a stdout or stderr event of a streamed exec.
type ExecOutput struct {
	Data string `json:"data"`
}

// Exec is the exec details of an exec mutation.
type Exec struct {
	Argv       []string `json:"argv"`
	ExitCode   int      `json:"exit_code"`
	DurationMS int64    `json:"duration_ms"`
	// Service names the service(s) of a mutation with op service.
	Service string `json:"service,omitempty"`
}

// ExecFollowEvent is one event of GET /v1/sessions/{id}/exec, the
// output of a session's commands as another client follows it: type
// start (argv, at), output (stream, data; dropped counts chunks missed
// because the follower joined late), then end (exit_code, or error when
// the command could not run).
type ExecFollowEvent struct {
	Type     string     `json:"type"`
	Argv     []string   `json:"argv,omitempty"`
	At       *time.Time `json:"at,omitempty"`
	Stream   string     `json:"stream,omitempty"`
	Data     string     `json:"data,omitempty"`
	Dropped  int        `json:"dropped,omitempty"`
	ExitCode *int       `json:"exit_code,omitempty"`
	Error    string     `json:"error,omitempty"`
}
