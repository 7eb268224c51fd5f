package cluster

import "errors"

// Sentinel errors.
var (
	// ErrNodeLive: another live process holds the node id.
	ErrNodeLive = errors.New("a live node already has this id")
	// ErrIdentityLost: the node's row was taken by another process (this
	// one missed its heartbeats past the lease).
	ErrIdentityLost = errors.New("the node id was taken over by another process")
)
