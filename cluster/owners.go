package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/record"
)

// Lease is a session's ownership as the store granted it.
type Lease struct {
	Session uuid.UUID
	Node    string
	// Epoch goes up by one on every take; the transactions that record
	// the session's durable state check it (OwnerStore's Tx side).
	Epoch int64
}

// OwnerStore keeps the sessions' ownership rows (package db implements it
// on PostgreSQL). Expiry is judged on the database's clock.
type OwnerStore interface {
	// TakeSession makes node the owner of session when it has no owner,
	// its owner's lease expired, or node holds it already, with the epoch
	// one higher than before (1 for the first) and a lease of lease from
	// the database's now; an *OwnedError naming the owner otherwise.
	TakeSession(ctx context.Context, session uuid.UUID, node string, lease time.Duration) (Lease, error)
	// RenewSession extends node's lease of session at epoch by lease from
	// now; ErrFenced when the row has another owner or epoch.
	RenewSession(ctx context.Context, session uuid.UUID, node string, epoch int64, lease time.Duration) error
	// ReleaseSession ends node's lease at epoch now, so another node may
	// take the session at once; nothing when it is not node's at epoch.
	ReleaseSession(ctx context.Context, session uuid.UUID, node string, epoch int64) error
}

// OwnersConfig configures Owners.
type OwnersConfig struct {
	Store OwnerStore
	Node  string
	// Lease is how long a take or renewal holds (DefaultLease when 0);
	// Renew how often the held leases are renewed (DefaultHeartbeat when
	// 0); Margin how long before its lease would end (by this process's
	// monotonic clock, counted from before the take or renewal was sent)
	// a node stops trusting a lease it could not renew (Lease/5 when 0).
	Lease, Renew, Margin time.Duration
	// Lost is called (from Run's goroutine) with each session whose lease
	// this node lost: fenced by another owner, or past its deadline
	// without a renewal. The node must stop serving it: kill its commands
	// and services and unload it.
	Lost   func(uuid.UUID)
	Logger *slog.Logger
}

// Owners holds this node's session leases: taken on first use, renewed
// together by Run, trusted only until each one's own monotonic deadline.
type Owners struct {
	cfg OwnersConfig
	now func() time.Time // monotonic; a test seam

	mu   sync.Mutex // guards held
	held map[uuid.UUID]held
	// draining: take no lease not held already (a drain hands them off).
	draining atomic.Bool
}

type held struct {
	epoch    int64
	deadline time.Time // by the monotonic clock: trusted before it only
}

// NewOwners returns the leases of cfg.Node, none held.
func NewOwners(cfg OwnersConfig) *Owners {
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Renew <= 0 {
		cfg.Renew = DefaultHeartbeat
	}
	if cfg.Margin <= 0 {
		cfg.Margin = cfg.Lease / 5
	}
	if cfg.Lost == nil {
		cfg.Lost = func(uuid.UUID) {}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Owners{cfg: cfg, now: time.Now, held: map[uuid.UUID]held{}}
}

// Take returns this node's epoch of session, taking its lease when the
// node holds none it can trust: an *OwnedError when another node's lease
// is live.
func (o *Owners) Take(ctx context.Context, session uuid.UUID) (int64, error) {
	if e, ok := o.Epoch(session); ok {
		return e, nil
	}
	if o.draining.Load() {
		return 0, fmt.Errorf("session %s: %w: node %q is draining and takes no session", session, record.ErrUnavailable, o.cfg.Node)
	}
	start := o.now()
	l, err := o.cfg.Store.TakeSession(ctx, session, o.cfg.Node, o.cfg.Lease)
	if err != nil {
		return 0, fmt.Errorf("take session %s: %w", session, err)
	}
	o.mu.Lock()
	o.held[session] = held{epoch: l.Epoch, deadline: start.Add(o.cfg.Lease - o.cfg.Margin)}
	o.mu.Unlock()
	return l.Epoch, nil
}

// Epoch returns this node's epoch of session when it holds a lease it can
// still trust (before its monotonic deadline).
func (o *Owners) Epoch(session uuid.UUID) (int64, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	h, ok := o.held[session]
	if !ok || !o.now().Before(h.deadline) {
		return 0, false
	}
	return h.epoch, true
}

// Release gives session's lease up now (an unload, a drain).
func (o *Owners) Release(ctx context.Context, session uuid.UUID) error {
	o.mu.Lock()
	h, ok := o.held[session]
	delete(o.held, session)
	o.mu.Unlock()
	if !ok {
		return nil
	}
	return o.cfg.Store.ReleaseSession(ctx, session, o.cfg.Node, h.epoch)
}

// Held is how many leases the node holds.
func (o *Owners) Held() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.held)
}

// Run renews the held leases every Renew until ctx ends. A lease fenced
// by another owner, or past its deadline without a renewal (the database
// unreachable meanwhile), is dropped and reported to Lost.
func (o *Owners) Run(ctx context.Context) {
	t := time.NewTicker(o.cfg.Renew)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			o.RenewAll(ctx)
		}
	}
}

// RenewAll renews every held lease once (Run's tick).
func (o *Owners) RenewAll(ctx context.Context) {
	o.mu.Lock()
	snapshot := make(map[uuid.UUID]held, len(o.held))
	for id, h := range o.held {
		snapshot[id] = h
	}
	o.mu.Unlock()
	for id, h := range snapshot {
		if ctx.Err() != nil {
			return
		}
		start := o.now()
		rctx, cancel := context.WithTimeout(ctx, o.cfg.Renew)
		err := o.cfg.Store.RenewSession(rctx, id, o.cfg.Node, h.epoch, o.cfg.Lease)
		cancel()
		o.mu.Lock()
		cur, still := o.held[id]
		if !still || cur.epoch != h.epoch {
			o.mu.Unlock()
			continue // released or taken again meanwhile
		}
		lost := false
		switch {
		case err == nil:
			o.held[id] = held{epoch: h.epoch, deadline: start.Add(o.cfg.Lease - o.cfg.Margin)}
		case errors.Is(err, ErrFenced), !o.now().Before(cur.deadline):
			delete(o.held, id)
			lost = true
		}
		o.mu.Unlock()
		if err != nil && !lost {
			o.cfg.Logger.Warn("renew session lease", "session", id, "error", err)
		}
		if lost {
			o.cfg.Logger.Warn("lost a session's lease: it is no longer served here", "session", id, "epoch", h.epoch, "error", err)
			o.cfg.Lost(id)
		}
	}
}

// Node is the id of the node whose leases these are.
func (o *Owners) Node() string { return o.cfg.Node }

// ReleaseAll gives every held lease up, for a node stopping cleanly: the
// other nodes may take its sessions at once instead of after the lease.
func (o *Owners) ReleaseAll(ctx context.Context) error {
	o.mu.Lock()
	all := o.held
	o.held = map[uuid.UUID]held{}
	o.mu.Unlock()
	var errs []error
	for id, h := range all {
		if err := o.cfg.Store.ReleaseSession(ctx, id, o.cfg.Node, h.epoch); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// HeldIDs lists the sessions whose leases the node holds.
func (o *Owners) HeldIDs() []uuid.UUID {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]uuid.UUID, 0, len(o.held))
	for id := range o.held {
		out = append(out, id)
	}
	return out
}
