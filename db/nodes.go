package db

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/cluster"
	"github.com/sessiond/sessiond/record"
)

// The nodes of a cluster, on PostgreSQL only (the embedded store is one
// node's). Every liveness judgement is the database's now(), so the
// nodes' clocks never meet.

var _ cluster.Store = (*Postgres)(nil)

// JoinNode implements cluster.Store: insert the row, or take over one
// that is dead (heartbeat older than lease) or stopped, in one statement.
func (p *Postgres) JoinNode(ctx context.Context, n cluster.Node, incarnation uuid.UUID, lease time.Duration) error {
	k, err := p.r.exec(ctx, `
INSERT INTO nodes (id, advertise_url, version, incarnation, started_at, heartbeat_at, stopped_at, sessions, running_commands)
VALUES ($1, $2, $3, $4, now(), now(), NULL, 0, 0)
ON CONFLICT (id) DO UPDATE SET advertise_url = EXCLUDED.advertise_url, version = EXCLUDED.version,
    incarnation = EXCLUDED.incarnation, started_at = now(), heartbeat_at = now(), stopped_at = NULL,
    sessions = 0, running_commands = 0, draining = false
WHERE nodes.stopped_at IS NOT NULL OR nodes.heartbeat_at < now() - $5 * interval '1 microsecond'`,
		n.ID, n.AdvertiseURL, n.Version, incarnation.String(), lease.Microseconds())
	if err != nil {
		return fmt.Errorf("node %q: %w", n.ID, err)
	}
	if k == 0 {
		return cluster.ErrNodeLive
	}
	return nil
}

// NodeHeartbeat implements cluster.Store.
func (p *Postgres) NodeHeartbeat(ctx context.Context, id string, incarnation uuid.UUID, st cluster.Stats) error {
	k, err := p.r.exec(ctx, `UPDATE nodes SET heartbeat_at = now(), sessions = $3, running_commands = $4
WHERE id = $1 AND incarnation = $2 AND stopped_at IS NULL`, id, incarnation.String(), st.Sessions, st.RunningCommands)
	if err != nil {
		return fmt.Errorf("node %q heartbeat: %w", id, err)
	}
	if k == 0 {
		return cluster.ErrIdentityLost
	}
	return nil
}

// AgreeKey implements cluster.Store: it records fingerprint as the
// cluster's key name when none is recorded, and returns the recorded one
// with the node that recorded it.
func (p *Postgres) AgreeKey(ctx context.Context, name, fingerprint, node string) (string, string, error) {
	if _, err := p.r.exec(ctx, `INSERT INTO cluster_keys (name, fingerprint, node_id) VALUES ($1, $2, $3)
ON CONFLICT (name) DO NOTHING`, name, fingerprint, node); err != nil {
		return "", "", fmt.Errorf("cluster key %s: %w", name, err)
	}
	rs, err := p.r.query(ctx, `SELECT fingerprint, node_id FROM cluster_keys WHERE name = $1`, name)
	if err != nil {
		return "", "", fmt.Errorf("cluster key %s: %w", name, err)
	}
	got, err := collect(rs, func(sc scanner) ([2]string, error) {
		var v [2]string
		return v, sc.Scan(&v[0], &v[1])
	})
	if err != nil || len(got) != 1 {
		return "", "", fmt.Errorf("cluster key %s: %v", name, err)
	}
	return got[0][0], got[0][1], nil
}

// LeaveNode implements cluster.Store.
func (p *Postgres) LeaveNode(ctx context.Context, id string, incarnation uuid.UUID) error {
	_, err := p.r.exec(ctx, `UPDATE nodes SET stopped_at = now(), sessions = 0, running_commands = 0
WHERE id = $1 AND incarnation = $2`, id, incarnation.String())
	if err != nil {
		return fmt.Errorf("node %q leave: %w", id, err)
	}
	return nil
}

// ListNodes implements cluster.Store.
func (p *Postgres) ListNodes(ctx context.Context, lease time.Duration) ([]cluster.Node, error) {
	rs, err := p.r.query(ctx, `SELECT id, advertise_url, version, started_at, heartbeat_at, stopped_at, sessions, running_commands,
    (EXTRACT(EPOCH FROM now() - heartbeat_at) * 1000000)::bigint,
    stopped_at IS NULL AND heartbeat_at >= now() - $1 * interval '1 microsecond', draining
FROM nodes ORDER BY id`, lease.Microseconds())
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	return collect(rs, func(sc scanner) (cluster.Node, error) {
		var n cluster.Node
		var ageMicros int64
		err := sc.Scan(&n.ID, &n.AdvertiseURL, &n.Version, timeCol{&n.StartedAt}, timeCol{&n.HeartbeatAt}, timeCol{&n.StoppedAt},
			&n.Sessions, &n.RunningCommands, &ageMicros, &n.Live, &n.Draining)
		n.HeartbeatAge = time.Duration(ageMicros) * time.Microsecond
		return n, err
	})
}

// LockBranch takes the cluster-wide lock of repo's branch, for the
// accepts and undos of every node sharing the database (a PostgreSQL
// session-level advisory lock, on a connection of its own held until
// release). A node that dies loses its connection, and with it the lock.
func (p *Postgres) LockBranch(ctx context.Context, repo, branch string) (func(), error) {
	conn, err := p.locks.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("lock branch %s of %q: %w", branch, repo, pgError(ctx, err))
	}
	key := branchLockKey(repo, branch)
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, key); err != nil {
		// A wait cut short may leave the connection in any state.
		_ = conn.Conn().Close(context.WithoutCancel(ctx))
		conn.Release()
		return nil, fmt.Errorf("lock branch %s of %q: %w", branch, repo, pgError(ctx, err))
	}
	return func() {
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock($1)`, key); err != nil {
			// Closing the connection releases the lock for sure.
			_ = conn.Conn().Close(uctx)
		}
		conn.Release()
	}, nil
}

// branchLockKey is the advisory lock key of a branch: FNV-1a of a prefix
// of its own, the repository and the branch.
func branchLockKey(repo, branch string) int64 {
	h := fnv.New64a()
	h.Write([]byte("sessiond branch\x00" + repo + "\x00" + branch))
	return int64(h.Sum64())
}

// Sessions' owners. TakeSession, RenewSession and ReleaseSession are
// PostgreSQL's (a cluster's); CheckSessionEpoch runs in any transaction
// of either store.

var _ cluster.OwnerStore = (*Postgres)(nil)

// side runs the statements of session leases on the pool of branch locks,
// apart from the pool of the engines' transactions: a lease is taken
// while a transaction of the node may be open, and must never wait for a
// connection that transaction holds.
func (p *Postgres) side() runner { return pgRunner{q: p.locks} }

// TakeSession implements cluster.OwnerStore: one conditional upsert.
func (p *Postgres) TakeSession(ctx context.Context, session uuid.UUID, node string, lease time.Duration) (cluster.Lease, error) {
	l := cluster.Lease{Session: session, Node: node}
	err := p.side().queryRow(ctx, `
INSERT INTO session_owners (session_id, node_id, epoch, lease_expires_at)
VALUES ($1, $2, 1, now() + $3 * interval '1 microsecond')
ON CONFLICT (session_id) DO UPDATE SET node_id = EXCLUDED.node_id, epoch = session_owners.epoch + 1,
    lease_expires_at = EXCLUDED.lease_expires_at
WHERE session_owners.node_id = EXCLUDED.node_id OR session_owners.lease_expires_at <= now()
RETURNING epoch`, session.String(), node, lease.Microseconds()).Scan(&l.Epoch)
	if errors.Is(err, record.ErrNotFound) {
		oe := &cluster.OwnedError{}
		err = p.side().queryRow(ctx, `SELECT node_id, epoch, EXTRACT(EPOCH FROM lease_expires_at - now())::float8
FROM session_owners WHERE session_id = $1`, session.String()).Scan(&oe.Node, &oe.Epoch, &oe.ExpiresIn)
		if err == nil {
			return cluster.Lease{}, oe
		}
		if errors.Is(err, record.ErrNotFound) { // released and gone between the two: a race to take again
			return cluster.Lease{}, fmt.Errorf("session %s: the owner changed while taking it: %w", session, record.ErrConflict)
		}
	}
	if err != nil {
		return cluster.Lease{}, fmt.Errorf("take session %s: %w", session, err)
	}
	return l, nil
}

// RenewSession implements cluster.OwnerStore.
func (p *Postgres) RenewSession(ctx context.Context, session uuid.UUID, node string, epoch int64, lease time.Duration) error {
	k, err := p.side().exec(ctx, `UPDATE session_owners SET lease_expires_at = now() + $4 * interval '1 microsecond'
WHERE session_id = $1 AND node_id = $2 AND epoch = $3`, session.String(), node, epoch, lease.Microseconds())
	if err != nil {
		return fmt.Errorf("renew session %s: %w", session, err)
	}
	if k == 0 {
		return fmt.Errorf("renew session %s at epoch %d: %w", session, epoch, cluster.ErrFenced)
	}
	return nil
}

// ReleaseSession implements cluster.OwnerStore.
func (p *Postgres) ReleaseSession(ctx context.Context, session uuid.UUID, node string, epoch int64) error {
	_, err := p.side().exec(ctx, `UPDATE session_owners SET lease_expires_at = now()
WHERE session_id = $1 AND node_id = $2 AND epoch = $3`, session.String(), node, epoch)
	if err != nil {
		return fmt.Errorf("release session %s: %w", session, err)
	}
	return nil
}

// CheckSessionEpoch is the fence of a transaction that records durable
// state of session: node must own it at epoch, or the transaction fails
// with cluster.ErrFenced (and the caller's writes roll back with it). The
// row stays locked until the transaction ends, so a take by another node
// waits for it, and no write of the old owner lands after a takeover.
func (s *store) CheckSessionEpoch(ctx context.Context, session uuid.UUID, node string, epoch int64) error {
	k, err := s.r.exec(ctx, `UPDATE session_owners SET epoch = epoch WHERE session_id = $1 AND node_id = $2 AND epoch = $3`,
		session.String(), node, epoch)
	if err != nil {
		return fmt.Errorf("session %s: check owner: %w", session, err)
	}
	if k == 0 {
		return fmt.Errorf("session %s, node %q at epoch %d: %w", session, node, epoch, cluster.ErrFenced)
	}
	return nil
}

// SetNodeDraining implements cluster.RouteStore: marks the row of id, if
// it is incarnation's, as draining (placement skips it).
func (p *Postgres) SetNodeDraining(ctx context.Context, id string, incarnation uuid.UUID) error {
	k, err := p.r.exec(ctx, `UPDATE nodes SET draining = true WHERE id = $1 AND incarnation = $2 AND stopped_at IS NULL`,
		id, incarnation.String())
	if err != nil {
		return fmt.Errorf("node %q drain: %w", id, err)
	}
	if k == 0 {
		return fmt.Errorf("node %q drain: %w", id, cluster.ErrIdentityLost)
	}
	return nil
}

// SessionOwner implements cluster.RouteStore: the owner row of session
// with its node's advertised URL, on the pool of leases; ok false when
// the session has no owner row.
func (p *Postgres) SessionOwner(ctx context.Context, session uuid.UUID) (o cluster.Owner, ok bool, err error) {
	err = p.side().queryRow(ctx, `SELECT o.node_id, o.epoch, o.lease_expires_at > now(), COALESCE(n.advertise_url, '')
FROM session_owners o LEFT JOIN nodes n ON n.id = o.node_id WHERE o.session_id = $1`, session.String()).
		Scan(&o.Node, &o.Epoch, &o.Live, &o.URL)
	if errors.Is(err, record.ErrNotFound) {
		return cluster.Owner{}, false, nil
	}
	if err != nil {
		return cluster.Owner{}, false, fmt.Errorf("owner of session %s: %w", session, err)
	}
	return o, true, nil
}
