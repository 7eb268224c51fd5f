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
}
