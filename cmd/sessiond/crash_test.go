package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// Knobs of the long variant (make crash): SESSIOND_CRASH_ROUNDS kills per
// store (default 2, as in make test) and SESSIOND_CRASH_LOAD busy
// goroutines spinning beside the daemon, so kills land under CPU load.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestCrash writes from several clients, kills the daemon with SIGKILL at
// a random moment and restarts it, over many rounds on one repository.
// After each kill it reads back every path written in that round, and
// every 50 rounds and at the end every path written in any round. A write
// in flight at the kill may or may not have landed; every acknowledged one
// must read back as written (else it is lost) and read at all (else
// unreadable). It ends with the figures and git fsck --strict.
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
	rounds := envInt("SESSIOND_CRASH_ROUNDS", 2)
	if load := envInt("SESSIOND_CRASH_LOAD", 0); load > 0 {
		stopLoad := cpuLoad(load)
		defer stopLoad()
	}
	repo := testrepo.Build(t, "small")
	d := newDaemon(t, st, "--repo", "r="+repo)
	const writers = 4
	ids := make([]string, writers)
	for i := range ids {
		s, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main"})
		require.NoError(t, err)
		ids[i] = s.ID
	}
	rng := rand.New(rand.NewPCG(uint64(len(st.name)), 7))
	acked := make([]map[string]string, writers) // writer → path → content
	for w := range acked {
		acked[w] = map[string]string{}
	}
	var acknowledged, lost, unreadable, mostPacks int
	for round := range rounds {
		var mu sync.Mutex
		// inflight is each writer's unacknowledged write: it may or may
		// not have landed when the daemon died.
		inflight := make([][2]string, writers)
		touched := make([]map[string]bool, writers) // paths written this round
		for w := range touched {
			touched[w] = map[string]bool{}
		}
		n := 0
		wctx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				c := client.New(d.URL, "")
				for i := 0; wctx.Err() == nil; i++ {
					// Rewrites of a few paths and new paths both.
					p := fmt.Sprintf("crash/%d/f%d.txt", w, i%20)
					if i%3 == 0 {
						p = fmt.Sprintf("crash/%d/new%d.txt", w, (round*1000+i)%40)
					}
					content := fmt.Sprintf("round %d writer %d write %d\n", round, w, i)
					mu.Lock()
					inflight[w] = [2]string{p, content}
					mu.Unlock()
					if _, err := c.WriteFile(wctx, ids[w], p, []byte(content), client.WriteOptions{}); err != nil {
						return // the daemon is gone
					}
					mu.Lock()
					acked[w][p] = content
					touched[w][p] = true
					inflight[w] = [2]string{}
					n++
					mu.Unlock()
				}
			})
		}
		// Kill after a random number of acknowledgements, between writes
		// or in the middle of one.
		target := 4 + rng.IntN(28)
		deadline := time.After(30 * time.Second)
		for {
			mu.Lock()
			got := n
			mu.Unlock()
			if got >= target {
				break
			}
			select {
			case <-deadline:
				t.Fatalf("round %d: only %d writes acknowledged", round, got)
			case <-time.After(time.Millisecond):
			}
		}
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
		d.Kill()
		stop()
		wg.Wait()
		acknowledged += n
		// The pack bound holds at every kill, not only after a graceful
		// stop: no process lives the retire delay here.
		packs := packCount(repo)
		mostPacks = max(mostPacks, packs)
		if packs > 50 {
			t.Errorf("round %d: %d packs after the kill", round, packs)
		}

		d.Start()
		full := round%50 == 49 || round == rounds-1
		for w, id := range ids {
			if inflight[w][0] != "" {
				touched[w][inflight[w][0]] = true
			}
			for p, want := range acked[w] {
				if !full && !touched[w][p] {
					continue
				}
				data, _, err := d.C.ReadFile(ctx, id, p)
				var ce *client.Error
				switch {
				case err == nil && string(data) == want:
				case err == nil && inflight[w][0] == p && string(data) == inflight[w][1]:
					acked[w][p] = inflight[w][1] // the unacknowledged write landed: allowed
				case err == nil, errors.As(err, &ce) && ce.Status == 404:
					lost++
					t.Errorf("round %d: %s %s lost: %q, %v", round, id, p, data, err)
				default:
					unreadable++
					t.Errorf("round %d: %s %s unreadable: %v", round, id, p, err)
				}
			}
		}
		if (round+1)%10 == 0 && round+1 < rounds {
			// Progress of a long run, printed at once (a killed run keeps it).
			fmt.Printf("crash: store=%s rounds=%d/%d acknowledged=%d lost=%d unreadable=%d most-packs=%d (running)\n", st.name, round+1, rounds, acknowledged, lost, unreadable, mostPacks)
		}
	}
	// The sessions work after the crashes: write and checkpoint.
	for _, id := range ids {
		_, err := d.C.WriteFile(ctx, id, "after.txt", []byte("after\n"), client.WriteOptions{})
		require.NoError(t, err)
		_, err = d.C.Checkpoint(ctx, id, "", "")
		require.NoError(t, err)
	}
	d.Stop()
	packs := packCount(repo)
	fmt.Printf("crash: store=%s rounds=%d acknowledged=%d lost=%d unreadable=%d packs=%d most-packs-at-a-kill=%d\n", st.name, rounds, acknowledged, lost, unreadable, packs, mostPacks)
	assert.LessOrEqual(t, packs, 50, "housekeeping keeps the packs under git's gc.autoPackLimit")
	assert.Zero(t, lost+unreadable)
	git(t, repo, "fsck", "--strict")
}

// packCount counts the packs git sees (by their index).
func packCount(repo string) int {
	idx, _ := filepath.Glob(filepath.Join(repo, ".git", "objects", "pack", "pack-*.idx"))
	return len(idx)
}

// cpuLoad spins n goroutines until the returned function is called.
func cpuLoad(n int) func() {
	done := make(chan struct{})
	for range n {
		go func() {
			runtime.LockOSThread()
			x := 0
			for {
				select {
				case <-done:
					return
				default:
					for i := range 1 << 16 {
						x += i
					}
				}
			}
		}()
	}
	return func() { close(done) }
}
