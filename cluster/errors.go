package cluster

import (
	"errors"
	"fmt"

	"github.com/sessiond/sessiond/record"
)

// Sentinel errors.
var (
	// ErrNodeLive: another live process holds the node id.
	ErrNodeLive = errors.New("a live node already has this id")
	// ErrIdentityLost: the node's row was taken by another process (this
	// one missed its heartbeats past the lease).
	ErrIdentityLost = errors.New("the node id was taken over by another process")
	// ErrKeyMismatch: a key of this node's data directory is not the one
	// the cluster's nodes share.
	ErrKeyMismatch = errors.New("a key differs from the cluster's")
	// ErrFenced: this node's epoch of a session is no longer the
	// session's (another node took it): nothing is written, and the node
	// must drop the session. It is record.ErrUnavailable (503): the
	// session is served elsewhere.
	ErrFenced = fmt.Errorf("%w: the session is owned by another node now", record.ErrUnavailable)
)

// OwnedError: another node holds a live lease on the session.
type OwnedError struct {
	Node      string
	Epoch     int64
	ExpiresIn float64 // seconds, on the database's clock
}

func (e *OwnedError) Error() string {
	return fmt.Sprintf("the session is owned by node %q (epoch %d, lease for %.1fs more)", e.Node, e.Epoch, e.ExpiresIn)
}

// Unwrap makes it record.ErrUnavailable (503): the session is served by
// another node.
func (e *OwnedError) Unwrap() error { return record.ErrUnavailable }
