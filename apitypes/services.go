package apitypes

import "time"

// ServiceReady is a service's ready check: HTTP, a path answered below
// 400, or TCP, a connection the service accepts.
type ServiceReady struct {
	HTTP string `json:"http,omitempty"`
	TCP  bool   `json:"tcp,omitempty"`
	// TimeoutSeconds: 0 takes the default, 30.
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
}

// ServiceRequest starts a service on a session's view (SPEC §15): Argv,
// or Command as shell text for /bin/sh -c.
type ServiceRequest struct {
	Name    string            `json:"name"`
	Argv    []string          `json:"argv,omitempty"`
	Command string            `json:"command,omitempty"`
	Cwd     string            `json:"cwd,omitempty" sessiond:"path"`
	Env     map[string]string `json:"env,omitempty"`
	// Port is the port the service listens on (127.0.0.1 inside its
	// sandbox), 1 to 65535; absent: none.
	Port  *int          `json:"port,omitempty"`
	Ready *ServiceReady `json:"ready,omitempty"`
	// Restart is no (the default) or on-failure.
	Restart string `json:"restart,omitempty"`
	// Network asks for the network a command that asks for one gets:
	// the host's (where the policy and the daemon allow it) or the
	// policy's allowlist through the daemon's egress proxy. Without it,
	// the service has only its own loopback.
	Network bool `json:"network,omitempty"`
}

// Service is one of a session's services.
type Service struct {
	Name string   `json:"name"`
	Argv []string `json:"argv"`
	Port int      `json:"port,omitempty"`
	// State is starting, running, stopped, exited or failed; Reason says
	// why it stopped ("daemon restarted", "idle", ...).
	State    string     `json:"state"`
	Reason   string     `json:"reason,omitempty"`
	PID      int        `json:"pid,omitempty"`
	Started  time.Time  `json:"started"`
	Ended    *time.Time `json:"ended,omitempty"`
	ExitCode *int       `json:"exit_code,omitempty"`
	Restart  string     `json:"restart,omitempty"`
	Restarts int        `json:"restarts,omitempty"`
	LogTail  string     `json:"log_tail,omitempty"`
	// Network: it was started with network true.
	Network bool `json:"network,omitempty"`
	// NetworkRefused lists the destinations the allowlist refused it so
	// far.
	NetworkRefused []string `json:"network_refused,omitempty"`
	// URL opens the service's port through the daemon (with the
	// session's token, or a link of POST …/ports/{port}/link).
	URL string `json:"url,omitempty"`
	// PreviewURL is its preview host name's, with --preview-domain.
	PreviewURL string `json:"preview_url,omitempty"`
}

// ServiceList is GET /v1/sessions/{id}/services.
type ServiceList struct {
	Services []Service `json:"services"`
}

// ServiceLogLine is one event of GET …/services/{name}/logs.
type ServiceLogLine struct {
	Line string `json:"line"`
}

// PortLinkRequest asks for a signed link to a port of a session.
type PortLinkRequest struct {
	// TTLSeconds: 0 takes the default, 3600; at most 7 days.
	TTLSeconds float64 `json:"ttl_seconds,omitempty"`
}

// PortLink is a URL that opens one port of one session without a
// bearer header, until ExpiresAt.
type PortLink struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expires_at"`
}
