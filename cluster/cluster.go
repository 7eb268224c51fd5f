package cluster

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/record"
)

// Defaults of Config.
const (
	DefaultHeartbeat = 2 * time.Second
	DefaultLease     = 15 * time.Second
)

// Node is one node's row as the store has it, with its liveness judged
// on the database's clock.
type Node struct {
	ID           string
	AdvertiseURL string
	Version      string
	StartedAt    time.Time
	HeartbeatAt  time.Time
	// StoppedAt is when the node stopped cleanly; zero while it runs (or
	// died without stopping).
	StoppedAt time.Time
	// HeartbeatAge is how long ago its last heartbeat was, on the
	// database's clock.
	HeartbeatAge time.Duration
	// Live: heartbeat younger than the lease, and not stopped.
	Live bool
	// Draining: the node is handing its sessions to the others and takes
	// no new ones (sessiond node drain).
	Draining bool
	Stats
}

// Stats is what a node holds, published with each heartbeat.
type Stats struct {
	// Sessions are the sessions it holds in memory.
	Sessions int
	// RunningCommands are the commands running on its sessions.
	RunningCommands int
}

// Store keeps the nodes' rows (package db implements it on PostgreSQL).
// Times are the database's.
type Store interface {
	// JoinNode writes n's row for the process incarnation, with started_at
	// and heartbeat_at now: a new row, or over one whose heartbeat is older
	// than lease or that stopped; ErrNodeLive when the id's row is live.
	JoinNode(ctx context.Context, n Node, incarnation uuid.UUID, lease time.Duration) error
	// AgreeKey records fingerprint as the cluster's key name unless one
	// is recorded, and returns the recorded one and the node that
	// recorded it.
	AgreeKey(ctx context.Context, name, fingerprint, node string) (recorded, by string, err error)
	// NodeHeartbeat renews the row of id for incarnation with st;
	// ErrIdentityLost when the row is another incarnation's.
	NodeHeartbeat(ctx context.Context, id string, incarnation uuid.UUID, st Stats) error
	// LeaveNode marks the row of id stopped, if it is incarnation's.
	LeaveNode(ctx context.Context, id string, incarnation uuid.UUID) error
	// ListNodes returns every node's row, ordered by id.
	ListNodes(ctx context.Context, lease time.Duration) ([]Node, error)
}

// Config configures a node.
type Config struct {
	Store Store
	// ID names the node in the cluster; AdvertiseURL is where the other
	// nodes reach it (http:// or https://).
	ID           string
	AdvertiseURL string
	Version      string
	// Stats reports what the node holds, at each heartbeat; nil: nothing.
	Stats func() Stats
	// Heartbeat is the renewal interval (DefaultHeartbeat when 0); Lease
	// how old a heartbeat may be before the node is dead to the others
	// (DefaultLease when 0).
	Heartbeat time.Duration
	Lease     time.Duration
	Logger    *slog.Logger
	// Keys must be the same on every node (the token key, the secrets
	// key): Join refuses a node whose key differs from the cluster's.
	Keys []Key
}

// Cluster is this node's membership: its row, its heartbeat, and the view
// of the others. A single node (no store) reports only itself.
type Cluster struct {
	cfg         Config
	incarnation uuid.UUID
	startedAt   time.Time
	leaveOnce   sync.Once
}

// CheckConfig checks a node id and advertised URL before anything starts.
func CheckConfig(id, advertise string) error {
	if !validNodeID(id) {
		return fmt.Errorf("%w: node id %q: use 1 to 64 letters, digits, '-', '_' and '.'", record.ErrInvalid, id)
	}
	u, err := url.Parse(advertise)
	if advertise == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return fmt.Errorf("%w: advertised URL %q: want http://HOST:PORT or https://HOST:PORT, where the other nodes reach this one", record.ErrInvalid, advertise)
	}
	return nil
}

// Key is a key every node of the cluster must share, by the name of its
// file in the data directory.
type Key struct {
	Name string
	Key  []byte
}

// KeyFingerprint names key without revealing it: an HMAC of a fixed text
// under the key.
func KeyFingerprint(key []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("sessiond cluster key fingerprint"))
	return hex.EncodeToString(m.Sum(nil))
}

// validNodeID: id is 1 to 64 letters, digits, '-', '_' and '.'.
func validNodeID(id string) bool {
	return id != "" && len(id) <= 64 && strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == ""
}

// Join joins the cluster: it writes this node's row, refused with
// ErrNodeLive (naming the live node) while another live process has the
// id. Run keeps the row alive; Leave marks it stopped.
func Join(ctx context.Context, cfg Config) (*Cluster, error) {
	if err := CheckConfig(cfg.ID, cfg.AdvertiseURL); err != nil {
		return nil, err
	}
	// Tokens minted by one node are checked by any other, and secrets
	// sealed by one are opened by any other: every node needs the same
	// keys. A node whose key differs is refused here, by name, rather
	// than answering 401 to every token another node made.
	for _, k := range cfg.Keys {
		fp := KeyFingerprint(k.Key)
		recorded, by, err := cfg.Store.AgreeKey(ctx, k.Name, fp, cfg.ID)
		if err != nil {
			return nil, fmt.Errorf("node %q: join: %w", cfg.ID, err)
		}
		if recorded != fp {
			return nil, fmt.Errorf("node %q: %w: its %s is not the cluster's (which node %q brought): copy %s from a node of the cluster into this node's data directory",
				cfg.ID, ErrKeyMismatch, k.Name, by, k.Name)
		}
	}
	c := newCluster(cfg)
	n := Node{ID: cfg.ID, AdvertiseURL: cfg.AdvertiseURL, Version: cfg.Version}
	if err := cfg.Store.JoinNode(ctx, n, c.incarnation, c.cfg.Lease); err != nil {
		if errors.Is(err, ErrNodeLive) {
			if live := c.find(ctx, cfg.ID); live != nil {
				return nil, fmt.Errorf("node %q: %w (at %s, heartbeat %s ago; it is dead to the cluster %s after its last heartbeat)",
					cfg.ID, ErrNodeLive, live.AdvertiseURL, live.HeartbeatAge.Round(time.Millisecond), c.cfg.Lease)
			}
		}
		return nil, fmt.Errorf("node %q: join: %w", cfg.ID, err)
	}
	return c, nil
}

// Single is the membership of a daemon that is no cluster: Status
// reports only itself.
func Single(cfg Config) *Cluster {
	cfg.Store = nil
	return newCluster(cfg)
}

func newCluster(cfg Config) *Cluster {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Stats == nil {
		cfg.Stats = func() Stats { return Stats{} }
	}
	return &Cluster{cfg: cfg, incarnation: uuid.New(), startedAt: time.Now().UTC()}
}

func (c *Cluster) find(ctx context.Context, id string) *Node {
	ns, err := c.cfg.Store.ListNodes(ctx, c.cfg.Lease)
	if err != nil {
		return nil
	}
	for i := range ns {
		if ns[i].ID == id {
			return &ns[i]
		}
	}
	return nil
}

// Run renews the node's row every heartbeat interval until ctx ends (nil)
// or the id was taken by another process (ErrIdentityLost: the node must
// stop). A heartbeat that fails otherwise (the database unreachable) is
// logged and tried again at the next tick; past the lease the others hold
// this node dead. A single node returns when ctx ends.
func (c *Cluster) Run(ctx context.Context) error {
	if c.cfg.Store == nil {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(c.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		hctx, cancel := context.WithTimeout(ctx, c.cfg.Heartbeat)
		err := c.cfg.Store.NodeHeartbeat(hctx, c.cfg.ID, c.incarnation, c.cfg.Stats())
		cancel()
		switch {
		case errors.Is(err, ErrIdentityLost):
			return fmt.Errorf("node %q: %w", c.cfg.ID, err)
		case err != nil && ctx.Err() == nil:
			c.cfg.Logger.Warn("node heartbeat", "node", c.cfg.ID, "error", err)
		}
	}
}

// Leave marks the node's row stopped (once), so its id may join again at
// once.
func (c *Cluster) Leave(ctx context.Context) error {
	var err error
	c.leaveOnce.Do(func() {
		if c.cfg.Store != nil {
			err = c.cfg.Store.LeaveNode(ctx, c.cfg.ID, c.incarnation)
		}
	})
	return err
}

// Incarnation is this process's identity in the nodes table.
func (c *Cluster) Incarnation() uuid.UUID { return c.incarnation }

// ID is this node's id ("" for a single node).
func (c *Cluster) ID() string {
	if c.cfg.Store == nil {
		return ""
	}
	return c.cfg.ID
}

// Status is the cluster as one node sees it.
type Status struct {
	// Enabled: several nodes over one database; false for a single node
	// (Nodes is then this node alone).
	Enabled bool
	// Self is this node's id.
	Self  string
	Lease time.Duration
	Nodes []Node
}

// Status lists the nodes, their health and what each holds (as of its
// last heartbeat; this node's now).
func (c *Cluster) Status(ctx context.Context) (Status, error) {
	st := Status{Enabled: c.cfg.Store != nil, Self: c.cfg.ID, Lease: c.cfg.Lease}
	if c.cfg.Store == nil {
		now := time.Now().UTC()
		st.Nodes = []Node{{ID: c.cfg.ID, AdvertiseURL: c.cfg.AdvertiseURL, Version: c.cfg.Version, StartedAt: c.startedAt,
			HeartbeatAt: now, Live: true, Stats: c.cfg.Stats()}}
		return st, nil
	}
	ns, err := c.cfg.Store.ListNodes(ctx, c.cfg.Lease)
	if err != nil {
		return Status{}, err
	}
	for i := range ns {
		if ns[i].ID == c.cfg.ID {
			ns[i].Stats = c.cfg.Stats()
		}
	}
	st.Nodes = ns
	return st, nil
}
