package testcluster

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
)

// storedObjects counts the objects the store keeps for repo.
func (c *Cluster) storedObjects(t *testing.T, repo string) int {
	t.Helper()
	var n int
	c.queryRow(t, &n, `SELECT count(*) FROM repo_objects WHERE repo = $1`, repo)
	return n
}

// TestObjectSweep: the objects stored for a repository's sessions stay
// while one of its sessions lives (a takeover of it reads its writes from
// them after sweeps ran), and are deleted once every session's changeset
// is accepted: another repository's, whose only session was accepted,
// go first (so sweeps ran).
func TestObjectSweep(t *testing.T) {
	ctx := t.Context()
	origin, other := NewOrigin(t, "small"), NewOrigin(t, "small")
	c := New(t, 3, "--repo", "app="+origin.URL, "--repo", "other="+other.URL, "--object-sweep", "100ms", "--node-heartbeat", "200ms", "--node-lease", "2s")
	n1, n2 := c.Nodes[0], c.Nodes[1]

	accept := func(cl *client.Client, id string) {
		t.Helper()
		cs, err := cl.Submit(ctx, id, apitypes.SubmitRequest{Intent: "sweep", TargetBranch: "main"})
		require.NoError(t, err)
		_, err = cl.Accept(ctx, cs.ID, apitypes.AcceptRequest{})
		require.NoError(t, err)
	}
	done, err := n2.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "other", Base: "main"})
	require.NoError(t, err)
	_, err = n2.C.WriteFile(ctx, done.ID, "done.txt", []byte("accepted first\n"), client.WriteOptions{})
	require.NoError(t, err)
	live := newSession(t, n1)
	_, err = n1.C.WriteFile(ctx, live.ID, "live.txt", []byte("only in the store and node-1\n"), client.WriteOptions{})
	require.NoError(t, err)
	_, err = n1.C.Checkpoint(ctx, live.ID, "kept", "")
	require.NoError(t, err)
	before := c.storedObjects(t, "app")
	require.Positive(t, before)
	require.Positive(t, c.storedObjects(t, "other"))
	accept(n2.C, done.ID)

	// Sweeps ran (other's objects went) while app's session lives.
	require.Eventually(t, func() bool { return c.storedObjects(t, "other") == 0 }, 30*time.Second, 100*time.Millisecond,
		"the objects of a repository whose every session was accepted stay")
	assert.Equal(t, before, c.storedObjects(t, "app"), "a live session's repository keeps its objects")
	n1.Kill()
	require.Eventually(t, func() bool {
		b, _, err := n2.C.ReadFile(ctx, live.ID, "live.txt")
		return err == nil && string(b) == "only in the store and node-1\n"
	}, 30*time.Second, 100*time.Millisecond, "node-2 never took the session over and read its write")
	assert.Equal(t, "node-2", c.owner(t, live.ID))

	accept(n2.C, live.ID)
	require.Eventually(t, func() bool { return c.storedObjects(t, "app") == 0 }, 30*time.Second, 100*time.Millisecond,
		"the objects stay after every session was accepted")
}
