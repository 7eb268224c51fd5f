package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/record"
)

// Owner is a session's ownership row as routing needs it: the owner, its
// epoch, whether its lease is live (on the database's clock) and where
// the owner is reached.
type Owner struct {
	Node  string
	Epoch int64
	Live  bool
	URL   string
}

// RouteStore is what routing reads and writes beside the leases (package
// db implements it on PostgreSQL).
type RouteStore interface {
	// SessionOwner returns session's owner row; ok false when it has none.
	SessionOwner(ctx context.Context, session uuid.UUID) (o Owner, ok bool, err error)
	// SetNodeDraining marks the node's row draining.
	SetNodeDraining(ctx context.Context, id string, incarnation uuid.UUID) error
}

// Placement modes of new sessions.
const (
	// PlaceLocal creates a session on the node the request reached.
	PlaceLocal = "local"
	// PlaceBalanced creates it on the live node with the fewest running
	// commands (this one on a tie).
	PlaceBalanced = "balanced"
)

// CheckPlacement checks a --placement value.
func CheckPlacement(p string) error {
	if p != PlaceLocal && p != PlaceBalanced {
		return fmt.Errorf("%w: placement %q: want %s or %s", record.ErrInvalid, p, PlaceLocal, PlaceBalanced)
	}
	return nil
}

// Target is where a request is served: here (Local), or by Node at URL.
type Target struct {
	Local bool
	Node  string
	URL   string
	// Session is the session Node serves, when the target is a session's
	// owner.
	Session uuid.UUID
}

// Router decides which node serves a session's requests and where new
// sessions go. A nil *Router is a single node: everything is local.
type Router struct {
	c         *Cluster
	owners    *Owners
	store     RouteStore
	placement string
	draining  atomic.Bool
}

// NewRouter returns the router of node c, whose leases are owners.
func NewRouter(c *Cluster, owners *Owners, store RouteStore, placement string) *Router {
	if placement == "" {
		placement = PlaceLocal
	}
	return &Router{c: c, owners: owners, store: store, placement: placement}
}

// Self is this node's id.
func (r *Router) Self() string { return r.c.cfg.ID }

// Session decides where session id is served: here when this node holds
// a lease it trusts, when the session has no owner row (nothing recorded
// it in a cluster yet: the engine takes it at its first write), or when
// its owner's lease expired and this node took it over; the owner when
// its lease is live. A draining node takes nothing over: it sends such a
// session to the node placement picks, which takes it.
func (r *Router) Session(ctx context.Context, id uuid.UUID) (Target, error) {
	if r == nil {
		return Target{Local: true}, nil
	}
	if _, ok := r.owners.Epoch(id); ok {
		return Target{Local: true}, nil
	}
	o, ok, err := r.store.SessionOwner(ctx, id)
	if err != nil {
		return Target{}, err
	}
	switch {
	case !ok:
		return Target{Local: true}, nil
	case o.Live && o.Node != r.Self():
		return Target{Node: o.Node, URL: o.URL, Session: id}, nil
	case r.draining.Load():
		t, err := r.pick(ctx, true)
		if err == nil && t.Local {
			err = fmt.Errorf("session %s: %w: node %q is draining and no other node is live to take it", id, record.ErrUnavailable, r.Self())
		}
		return t, err
	}
	// Ours by the row (a restart of this node) or expired: take it.
	if _, err := r.owners.Take(ctx, id); err != nil {
		var oe *OwnedError
		if errors.As(err, &oe) { // another node took it first
			return r.Session(ctx, id)
		}
		return Target{}, err
	}
	return Target{Local: true}, nil
}

// Place decides where a new session is created: here with local
// placement, else the live, undrained node with the fewest running
// commands. A draining node always places elsewhere when it can.
func (r *Router) Place(ctx context.Context) (Target, error) {
	if r == nil || (r.placement == PlaceLocal && !r.draining.Load()) {
		return Target{Local: true}, nil
	}
	return r.pick(ctx, r.draining.Load())
}

// pick is the live node not draining with the fewest running commands;
// this node on a tie unless away, then the lowest id. With away and no
// other node, here.
func (r *Router) pick(ctx context.Context, away bool) (Target, error) {
	st, err := r.c.Status(ctx)
	if err != nil {
		return Target{}, err
	}
	var cands []Node
	for _, n := range st.Nodes {
		if n.Live && !n.Draining && n.ID != r.Self() || (n.ID == r.Self() && !away) {
			cands = append(cands, n)
		}
	}
	if len(cands) == 0 {
		return Target{Local: true}, nil
	}
	slices.SortStableFunc(cands, func(a, b Node) int {
		if a.RunningCommands != b.RunningCommands {
			return a.RunningCommands - b.RunningCommands
		}
		if (a.ID == r.Self()) != (b.ID == r.Self()) {
			if a.ID == r.Self() {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	if cands[0].ID == r.Self() {
		return Target{Local: true}, nil
	}
	return Target{Node: cands[0].ID, URL: cands[0].AdvertiseURL}, nil
}

// Serves reports whether node holds a live lease of session (true too
// when the store cannot say: only a known expiry gives up on a node).
func (r *Router) Serves(ctx context.Context, session uuid.UUID, node string) bool {
	o, ok, err := r.store.SessionOwner(ctx, session)
	if err != nil {
		return true
	}
	return ok && o.Live && o.Node == node
}

// Interval is how often the leases are renewed.
func (r *Router) Interval() time.Duration { return r.owners.cfg.Renew }

// Draining reports whether this node is being drained.
func (r *Router) Draining() bool { return r != nil && r.draining.Load() }

// StartDrain marks this node draining, here and in its row: from now on
// it takes no session over and places new ones elsewhere.
func (r *Router) StartDrain(ctx context.Context) error {
	r.draining.Store(true)
	r.owners.draining.Store(true)
	return r.store.SetNodeDraining(ctx, r.Self(), r.c.Incarnation())
}

// Held lists the sessions whose leases this node holds.
func (r *Router) Held() []uuid.UUID { return r.owners.HeldIDs() }

// Release gives session id's lease up, for a hand-off.
func (r *Router) Release(ctx context.Context, id uuid.UUID) error { return r.owners.Release(ctx, id) }

// DrainReport is what a drain did.
type DrainReport struct {
	// HandedOff are the sessions whose leases were released for others
	// to take; Kept those still busy at the timeout.
	HandedOff, Kept []uuid.UUID
	// Waited is how long the drain waited for running commands.
	Waited time.Duration
}
