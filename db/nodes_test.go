package db

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/cluster"
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
