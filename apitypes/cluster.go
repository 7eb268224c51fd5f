package apitypes

import "time"

// ClusterStatus is GET /v1/cluster: the nodes as the answering node sees
// them. Enabled is false for a daemon that is no cluster (Nodes is then
// that daemon alone).
type ClusterStatus struct {
	Enabled bool   `json:"enabled"`
	Self    string `json:"self"`
	// LeaseSeconds is how old a node's heartbeat may be before the others
	// hold it dead.
	LeaseSeconds float64       `json:"lease_seconds"`
	Nodes        []ClusterNode `json:"nodes"`
}

// ClusterNode is one node: where it is, its health (on the database's
// clock) and what it held at its last heartbeat.
type ClusterNode struct {
	ID           string    `json:"id"`
	AdvertiseURL string    `json:"advertise_url"`
	Version      string    `json:"version"`
	StartedAt    time.Time `json:"started_at"`
	HeartbeatAt  time.Time `json:"heartbeat_at"`
	// HeartbeatAgeSeconds is how long ago its last heartbeat was.
	HeartbeatAgeSeconds float64 `json:"heartbeat_age_seconds"`
	// Health is "live", "dead" (no heartbeat within the lease) or
	// "stopped" (it stopped cleanly).
	Health          string     `json:"health"`
	StoppedAt       *time.Time `json:"stopped_at,omitempty"`
	Sessions        int        `json:"sessions"`
	RunningCommands int        `json:"running_commands"`
	// Draining: the node hands its sessions to the others and takes no
	// new ones (sessiond node drain).
	Draining bool `json:"draining"`
}

// CodeLoopDetected is the error code of a request forwarded between the
// nodes of a cluster in a loop (508); the message names the hops.
const CodeLoopDetected = "loop_detected"

// DrainRequest is POST /v1/cluster/nodes/{node}/drain.
type DrainRequest struct {
	// TimeoutSeconds bounds the wait for the node's running commands to
	// finish before their sessions are handed off (default 60).
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
}

// DrainResult is what a drain did: the sessions handed off, and those it
// could not hand off (a session still busy at the timeout: it stays with
// the node until the node stops, which releases it).
type DrainResult struct {
	Node       string   `json:"node"`
	HandedOff  []string `json:"handed_off"`
	Kept       []string `json:"kept"`
	WaitedSecs float64  `json:"waited_seconds"`
}
