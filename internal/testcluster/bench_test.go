package testcluster

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
)

// BenchmarkForwarding: the median of a file read of one session asked of
// its owner (direct) and of another node (forwarded to the owner),
// interleaved in one run; reported as direct-ms, forwarded-ms and
// overhead-ms.
func BenchmarkForwarding(b *testing.B) {
	ctx := b.Context()
	origin := NewOrigin(b, "small")
	c := New(b, 2, "--repo", "app="+origin.URL)
	n1, n2 := c.Nodes[0], c.Nodes[1]
	s, err := n1.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "app", Base: "main"})
	require.NoError(b, err)
	_, err = n1.C.WriteFile(ctx, s.ID, "bench.txt", []byte("bench\n"), client.WriteOptions{})
	require.NoError(b, err)
	read := func(cl *client.Client) time.Duration {
		start := time.Now()
		_, _, err := cl.ReadFile(ctx, s.ID, "bench.txt")
		require.NoError(b, err)
		return time.Since(start)
	}
	for range 50 { // warm both paths' connections
		read(n1.C)
		read(n2.C)
	}
	const n = 2000
	direct, fwd := make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	b.ResetTimer()
	for range b.N {
		for range n {
			direct = append(direct, read(n1.C))
			fwd = append(fwd, read(n2.C))
		}
	}
	b.StopTimer()
	md, mf := median(direct), median(fwd)
	b.ReportMetric(float64(md.Microseconds())/1000, "direct-ms")
	b.ReportMetric(float64(mf.Microseconds())/1000, "forwarded-ms")
	b.ReportMetric(float64((mf-md).Microseconds())/1000, "overhead-ms")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkClusterWrites: acknowledged writes per second of 16 writers,
// each on a session of its own, for 5 s: against one node, against three
// nodes with each writer at its session's owner, and against three nodes
// with every request sent to the next node in turn (a load balancer that
// knows nothing of owners), one after the other in one run.
func BenchmarkClusterWrites(b *testing.B) {
	const writers, span = 16, 5 * time.Second
	origin := NewOrigin(b, "small")
	one := New(b, 1, "--repo", "app="+origin.URL)
	origin3 := NewOrigin(b, "small")
	three := New(b, 3, "--repo", "app="+origin3.URL)
	b.ResetTimer()
	for range b.N {
		b.ReportMetric(writeRate(b, one, writers, span, false), "one-node-writes/s")
		b.ReportMetric(writeRate(b, three, writers, span, false), "three-owner-writes/s")
		b.ReportMetric(writeRate(b, three, writers, span, true), "three-roundrobin-writes/s")
	}
}

// writeRate runs writers for span, writer i's session created on node
// i mod N; each write goes to that node, or with rr to the nodes in turn.
func writeRate(b *testing.B, c *Cluster, writers int, span time.Duration, rr bool) float64 {
	ctx := b.Context()
	ids := make([]string, writers)
	for i := range ids {
		s, err := c.Nodes[i%len(c.Nodes)].C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "app", Base: "main"})
		require.NoError(b, err)
		ids[i] = s.ID
	}
	var acked atomic.Int64
	wctx, cancel := context.WithTimeout(ctx, span)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; wctx.Err() == nil; k++ {
				node := i % len(c.Nodes)
				if rr {
					node = (i + k) % len(c.Nodes)
				}
				p := fmt.Sprintf("w/%d.txt", k%64)
				_, err := c.Nodes[node].C.WriteFile(wctx, ids[i], p, []byte(fmt.Sprintf("%d %d\n", i, k)), client.WriteOptions{})
				if err == nil {
					acked.Add(1)
				} else if wctx.Err() == nil {
					b.Errorf("write %d of writer %d: %v", k, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return float64(acked.Load()) / time.Since(start).Seconds()
}
