package graph_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/graph"
	"github.com/sessiond/sessiond/session"
)

// TestFinishedSessionsLeaveTheGraph: sessions that overlap a long-lived
// one and then finish (abandoned, or expired without being loaded) leave
// nothing behind, round after round: the graph holds the live session's
// delta only, and the engine holds no session in memory.
func TestFinishedSessionsLeaveTheGraph(t *testing.T) {
	var clock atomic.Int64 // seconds past start
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	e := newEnvClock(t, func() time.Time { return start.Add(time.Duration(clock.Load()) * time.Second) })
	ctx := t.Context()
	keep := e.create("keeper")
	e.write(keep.ID, "README", "kept\n")
	for round := range 4 {
		for i := range 6 {
			s, err := e.m.Create(ctx, session.CreateOptions{Repo: "r", Base: "main", AgentID: "churn", TTL: time.Minute})
			require.NoError(t, err)
			e.write(s.ID, "README", fmt.Sprintf("round %d session %d\n", round, i))
			e.write(s.ID, fmt.Sprintf("notes/%d-%d.md", round, i), "mine\n")
			if i%2 == 0 {
				_, err = e.m.Abandon(ctx, s.ID)
				require.NoError(t, err)
			}
		}
		// The others expire an hour later; the keeper has no TTL.
		clock.Add(3600)
		n, err := e.m.ExpireDue(ctx)
		require.NoError(t, err)
		require.Equal(t, 3, n)
		e.sync()
		sessions, where, paths, reported, jobs := graph.HeldForTest(e.g)
		assert.Equal(t, 1, sessions, "round %d: deltas", round)
		assert.Equal(t, 1, where, "round %d: session index", round)
		assert.Equal(t, 1, paths, "round %d: paths (the keeper's README)", round)
		assert.Zero(t, reported, "round %d: overlaps remembered with finished sessions", round)
		assert.Zero(t, jobs, "round %d: queued jobs", round)
		assert.Zero(t, e.m.Loaded()-1, "round %d: loaded sessions besides the keeper", round)
	}
}
