package main

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/api"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// TestCrash writes in a loop from several clients, kills the daemon with
// SIGKILL, restarts it, and finds every acknowledged write.
func TestCrash(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			testCrash(t, st)
		})
	}
}

func testCrash(t *testing.T, st store) {
	ctx := t.Context()
	repo := testrepo.Build(t, "small")
	d := newDaemon(t, st, "--repo", "r="+repo)
	const writers = 4
	ids := make([]string, writers)
	for i := range ids {
		s, err := d.C.CreateSession(ctx, api.CreateSessionRequest{Repo: "r", Base: "main"})
		require.NoError(t, err)
		ids[i] = s.ID
	}

	var mu sync.Mutex
	acked := map[string]map[string]string{} // session → path → content
	// inflight is each writer's unacknowledged write: it may or may not
	// have landed when the daemon died.
	inflight := make([][2]string, writers)
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := range writers {
		acked[ids[w]] = map[string]string{}
		wg.Go(func() {
			c := client.New(d.URL, "")
			for i := 0; wctx.Err() == nil; i++ {
				// Rewrites of a few paths and new paths both.
				p := fmt.Sprintf("crash/%d/f%d.txt", w, i%20)
				if i%3 == 0 {
					p = fmt.Sprintf("crash/%d/new%d.txt", w, i)
				}
				content := fmt.Sprintf("writer %d write %d\n", w, i)
				mu.Lock()
				inflight[w] = [2]string{p, content}
				mu.Unlock()
				if _, err := c.WriteFile(wctx, ids[w], p, []byte(content), client.WriteOptions{}); err != nil {
					return // the daemon is gone
				}
				mu.Lock()
				acked[ids[w]][p] = content
				mu.Unlock()
			}
		})
	}
	deadline := time.After(10 * time.Second)
	for {
		mu.Lock()
		n := 0
		for _, m := range acked {
			n += len(m)
		}
		mu.Unlock()
		if n >= 120 {
			break
		}
		select {
		case <-deadline:
			t.Fatalf("only %d writes acknowledged", n)
		case <-time.After(10 * time.Millisecond):
		}
	}
	d.kill()
	stop()
	wg.Wait()

	d.start()
	for w, id := range ids {
		for p, want := range acked[id] {
			data, _, err := d.C.ReadFile(ctx, id, p)
			if assert.NoError(t, err, "%s %s", id, p) {
				if inflight[w][0] == p && string(data) == inflight[w][1] {
					continue // the unacknowledged write landed: allowed
				}
				assert.Equal(t, want, string(data), "%s %s", id, p)
			}
		}
		// The session works after the crash: write and checkpoint.
		_, err := d.C.WriteFile(ctx, id, "after.txt", []byte("after\n"), client.WriteOptions{})
		require.NoError(t, err)
		_, err = d.C.Checkpoint(ctx, id, "", "")
		require.NoError(t, err)
	}
	assert.Empty(t, git(t, repo, "fsck", "--strict", "--no-dangling"))
}
