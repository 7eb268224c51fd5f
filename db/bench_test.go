package db

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/session"
)

// BenchmarkCreateSession measures a single-row insert: one session row per
// op. ns/op is wall time per insert, so with writers=1 it is the latency and
// with more writers the inverse of the throughput; p50-µs and p99-µs are
// per-insert latencies.
func BenchmarkCreateSession(b *testing.B) {
	benchWriters(b, func(b *testing.B, s session.Store) func(w, i int) error {
		return func(w, i int) error {
			return s.CreateSession(b.Context(), session.Session{
				ID: uuid.New(), Repo: "r", AgentID: "a" + strconv.Itoa(w), BaseCommit: oid(1), CreatedAt: time.Now(),
			})
		}
	})
}

// BenchmarkAppendMutation measures the engine's hot write: the next
// sequence number, a mutation row and an overlay entry in one transaction,
// each writer on its own session.
func BenchmarkAppendMutation(b *testing.B) {
	benchWriters(b, func(b *testing.B, s session.Store) func(w, i int) error {
		ids := make([]uuid.UUID, 16)
		for w := range ids {
			ids[w] = mkSession(b, s, "r", nil).ID
		}
		return func(w, i int) error {
			path := "dir/file" + strconv.Itoa(i%100)
			_, err := s.AppendMutation(b.Context(), session.MutationRecord{Session: ids[w], Op: session.OpWrite, Paths: []string{path}, At: time.Now()},
				[]session.OverlayChange{write(path, i)})
			return err
		}
	})
}

func benchWriters(b *testing.B, setup func(*testing.B, session.Store) func(w, i int) error) {
	for _, be := range backends {
		for _, writers := range []int{1, 16} {
			b.Run("store="+be.name+"/writers="+strconv.Itoa(writers), func(b *testing.B) {
				s := be.openStore(b, be.fresh(b))
				mkRepo(b, s, "r")
				op := setup(b, s)
				var (
					next atomic.Int64
					wg   sync.WaitGroup
					mu   sync.Mutex
					lat  = make([]time.Duration, 0, b.N)
				)
				b.ResetTimer()
				start := time.Now()
				for w := range writers {
					wg.Go(func() {
						var mine []time.Duration
						for {
							i := next.Add(1)
							if i > int64(b.N) {
								break
							}
							t := time.Now()
							if err := op(w, int(i)); err != nil {
								b.Error(err)
								return
							}
							mine = append(mine, time.Since(t))
						}
						mu.Lock()
						lat = append(lat, mine...)
						mu.Unlock()
					})
				}
				wg.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				require.NotEmpty(b, lat)
				slices.Sort(lat)
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			})
		}
	}
}
