package db

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/cluster"
	"github.com/sessiond/sessiond/record"
)

// TestNodes: one live process per node id, judged on the database's
// clock; a process whose id was taken over loses it; a stopped node's id
// joins again at once.
func TestNodes(t *testing.T) {
	ctx := t.Context()
	p, err := OpenPostgres(ctx, freshSchema(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	hour := time.Hour

	a1, a2 := uuid.New(), uuid.New()
	n := cluster.Node{ID: "a", AdvertiseURL: "http://10.0.0.1:7420", Version: "v1"}
	require.NoError(t, p.JoinNode(ctx, n, a1, hour))
	assert.ErrorIs(t, p.JoinNode(ctx, n, a2, hour), cluster.ErrNodeLive, "a live row is not taken")
	require.NoError(t, p.JoinNode(ctx, cluster.Node{ID: "b", AdvertiseURL: "http://10.0.0.2:7420", Version: "v1"}, uuid.New(), hour))
	require.NoError(t, p.NodeHeartbeat(ctx, "a", a1, cluster.Stats{Sessions: 3, RunningCommands: 1}))

	ns, err := p.ListNodes(ctx, hour)
	require.NoError(t, err)
	require.Len(t, ns, 2)
	assert.Equal(t, "a", ns[0].ID)
	assert.True(t, ns[0].Live)
	assert.Equal(t, cluster.Stats{Sessions: 3, RunningCommands: 1}, ns[0].Stats)
	assert.Equal(t, "http://10.0.0.1:7420", ns[0].AdvertiseURL)

	// With a lease of zero every heartbeat is too old: dead, and taken.
	time.Sleep(time.Millisecond) // now() of the next transaction is later
	ns, err = p.ListNodes(ctx, 0)
	require.NoError(t, err)
	assert.False(t, ns[0].Live)
	require.NoError(t, p.JoinNode(ctx, n, a2, 0))
	assert.ErrorIs(t, p.NodeHeartbeat(ctx, "a", a1, cluster.Stats{}), cluster.ErrIdentityLost, "the old process lost the id")
	require.NoError(t, p.NodeHeartbeat(ctx, "a", a2, cluster.Stats{}))

	// Stopped: not live whatever the lease, and the id joins again.
	require.NoError(t, p.LeaveNode(ctx, "a", a2))
	ns, err = p.ListNodes(ctx, hour)
	require.NoError(t, err)
	assert.False(t, ns[0].Live)
	assert.False(t, ns[0].StoppedAt.IsZero())
	require.NoError(t, p.JoinNode(ctx, n, uuid.New(), hour))
}

// TestLockBranch: the branch lock is the database's, so another
// connection (another node) cannot take it while it is held, and can once
// released; another branch's is another lock.
func TestLockBranch(t *testing.T) {
	ctx := t.Context()
	p, err := OpenPostgres(ctx, freshSchema(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	other, err := p.pool.Acquire(ctx) // another node's connection
	require.NoError(t, err)
	defer other.Release()
	free := func(repo, branch string) bool {
		var ok bool
		require.NoError(t, other.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, branchLockKey(repo, branch)).Scan(&ok))
		if ok {
			_, err := other.Exec(ctx, `SELECT pg_advisory_unlock_all()`)
			require.NoError(t, err)
		}
		return ok
	}
	release, err := p.LockBranch(ctx, "app", "main")
	require.NoError(t, err)
	assert.False(t, free("app", "main"), "held")
	assert.True(t, free("app", "other"))
	assert.True(t, free("other", "main"))
	release()
	assert.True(t, free("app", "main"), "released")
}

// TestSessionOwners: a session's lease is taken by conditional upserts
// with the epoch up on every take; another node's live lease refuses a
// take; the fence in a transaction holds only the current owner at the
// current epoch; a released or expired lease may be taken at once.
func TestSessionOwners(t *testing.T) {
	ctx := t.Context()
	p, err := OpenPostgres(ctx, freshSchema(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	hour := time.Hour
	s := uuid.New()
	fence := func(node string, epoch int64) error {
		return p.atomic(ctx, func(tx *store) error { return tx.CheckSessionEpoch(ctx, s, node, epoch) })
	}

	l, err := p.TakeSession(ctx, s, "a", hour)
	require.NoError(t, err)
	assert.Equal(t, int64(1), l.Epoch)
	require.NoError(t, fence("a", 1))
	l, err = p.TakeSession(ctx, s, "a", hour)
	require.NoError(t, err)
	assert.Equal(t, int64(2), l.Epoch, "every take is a new epoch")
	assert.ErrorIs(t, fence("a", 1), cluster.ErrFenced, "an old epoch of the same node is fenced")
	assert.ErrorIs(t, fence("a", 1), record.ErrUnavailable)

	_, err = p.TakeSession(ctx, s, "b", hour)
	var oe *cluster.OwnedError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "a", oe.Node)
	assert.Equal(t, int64(2), oe.Epoch)
	assert.ErrorIs(t, err, record.ErrUnavailable)
	assert.ErrorIs(t, fence("b", 2), cluster.ErrFenced)

	require.NoError(t, p.RenewSession(ctx, s, "a", 2, hour))
	require.NoError(t, p.ReleaseSession(ctx, s, "a", 2))
	time.Sleep(time.Millisecond) // now() of the next transaction is later
	l, err = p.TakeSession(ctx, s, "b", hour)
	require.NoError(t, err)
	assert.Equal(t, int64(3), l.Epoch)
	assert.ErrorIs(t, p.RenewSession(ctx, s, "a", 2, hour), cluster.ErrFenced, "the old owner cannot renew")
	assert.ErrorIs(t, fence("a", 2), cluster.ErrFenced, "nor write")
	require.NoError(t, fence("b", 3))

	// A lease that expired is taken without a release.
	s2 := uuid.New()
	_, err = p.TakeSession(ctx, s2, "a", 0)
	require.NoError(t, err)
	time.Sleep(time.Millisecond)
	l, err = p.TakeSession(ctx, s2, "b", hour)
	require.NoError(t, err)
	assert.Equal(t, int64(2), l.Epoch)

	// A fenced transaction writes nothing of what it wrote before the check.
	require.NoError(t, p.JoinNode(ctx, cluster.Node{ID: "a", AdvertiseURL: "http://a", Version: "v1"}, uuid.New(), hour))
	err = p.atomic(ctx, func(tx *store) error {
		if _, err := tx.r.exec(ctx, `UPDATE nodes SET version = 'written by a fenced owner'`); err != nil {
			return err
		}
		return tx.CheckSessionEpoch(ctx, s2, "a", 1)
	})
	assert.ErrorIs(t, err, cluster.ErrFenced)
	ns, err := p.ListNodes(ctx, hour)
	require.NoError(t, err)
	assert.Equal(t, "v1", ns[0].Version)
}
