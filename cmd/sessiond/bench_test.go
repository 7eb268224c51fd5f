package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/api"
	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/internal/testengine"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/session"
)

// The HTTP benchmarks run each operation twice: in process on the
// Manager, and through the client over a loopback HTTP server with the
// API handler, both on the embedded store. The difference is the cost of
// the API layer (HTTP, JSON, auth, metrics, logging off).

type benchEnv struct {
	m  *session.Manager
	c  *client.Client
	id uuid.UUID // a session with one overlay file, "overlay.txt"
}

func newBenchEnv(b *testing.B) *benchEnv {
	b.Helper()
	ctx := context.Background()
	dir := b.TempDir()
	st, err := db.OpenSQLiteDir(ctx, dir)
	require.NoError(b, err)
	b.Cleanup(func() { st.Close() })
	en := testengine.New(st, dir, session.Config{})
	m := en.Sessions
	b.Cleanup(func() { m.Close() })
	_, err = en.Repos.Register(ctx, "r", testrepo.Build(b, "small"))
	require.NoError(b, err)
	srv := httptest.NewServer(api.New(api.Config{Manager: m, Repos: en.Repos, Events: en.Events, Exec: en.Exec, Changesets: en.Changesets}))
	b.Cleanup(srv.Close)
	e := &benchEnv{m: m, c: client.New(srv.URL, "")}
	e.id = e.session(b)
	return e
}

func (e *benchEnv) session(b *testing.B) uuid.UUID {
	b.Helper()
	s, err := e.m.Create(context.Background(), session.CreateOptions{Repo: "r", Base: "main"})
	require.NoError(b, err)
	_, _, err = e.m.Write(context.Background(), s.ID, "overlay.txt", []byte("in the overlay\n"), session.WriteOptions{})
	require.NoError(b, err)
	return s.ID
}

func BenchmarkSessionCreate(b *testing.B) {
	e := newBenchEnv(b)
	ctx := context.Background()
	b.Run("via=inproc", func(b *testing.B) {
		for b.Loop() {
			_, err := e.m.Create(ctx, session.CreateOptions{Repo: "r", Base: "main"})
			require.NoError(b, err)
		}
	})
	b.Run("via=http", func(b *testing.B) {
		for b.Loop() {
			_, err := e.c.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main"})
			require.NoError(b, err)
		}
	})
}

func BenchmarkRead(b *testing.B) {
	e := newBenchEnv(b)
	ctx := context.Background()
	for _, tc := range []struct{ name, path string }{{"overlay", "overlay.txt"}, {"base", "README.md"}} {
		b.Run("from="+tc.name+"/via=inproc", func(b *testing.B) {
			for b.Loop() {
				_, _, err := e.m.Read(ctx, e.id, tc.path, 0, -1)
				require.NoError(b, err)
			}
		})
		b.Run("from="+tc.name+"/via=http", func(b *testing.B) {
			for b.Loop() {
				_, _, err := e.c.ReadFile(ctx, e.id.String(), tc.path)
				require.NoError(b, err)
			}
		})
	}
}

func BenchmarkWrite(b *testing.B) {
	e := newBenchEnv(b)
	ctx := context.Background()
	i := 0
	b.Run("via=inproc", func(b *testing.B) {
		for b.Loop() {
			i++
			_, _, err := e.m.Write(ctx, e.id, "w.txt", fmt.Appendf(nil, "write %d\n", i), session.WriteOptions{})
			require.NoError(b, err)
		}
	})
	b.Run("via=http", func(b *testing.B) {
		for b.Loop() {
			i++
			_, err := e.c.WriteFile(ctx, e.id.String(), "w.txt", fmt.Appendf(nil, "write %d\n", i), client.WriteOptions{})
			require.NoError(b, err)
		}
	})
}

func BenchmarkCheckpoint(b *testing.B) {
	e := newBenchEnv(b)
	ctx := context.Background()
	b.Run("via=inproc", func(b *testing.B) {
		for b.Loop() {
			_, err := e.m.Checkpoint(ctx, e.id, "", "")
			require.NoError(b, err)
		}
	})
	b.Run("via=http", func(b *testing.B) {
		for b.Loop() {
			_, err := e.c.Checkpoint(ctx, e.id.String(), "", "")
			require.NoError(b, err)
		}
	})
}

// BenchmarkThroughput runs 16 concurrent clients, each on its own
// session; ns/op is the inverse of the throughput.
func BenchmarkThroughput(b *testing.B) {
	e := newBenchEnv(b)
	ctx := context.Background()
	const clients = 16
	ids := make([]uuid.UUID, clients)
	for i := range ids {
		ids[i] = e.session(b)
	}
	par := (clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0)
	run := func(b *testing.B, op func(id uuid.UUID, n int) error) {
		var next atomic.Int64
		b.SetParallelism(par)
		b.RunParallel(func(pb *testing.PB) {
			id := ids[int(next.Add(1)-1)%clients]
			n := 0
			for pb.Next() {
				n++
				if err := op(id, n); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.Run("op=read/clients=16/via=inproc", func(b *testing.B) {
		run(b, func(id uuid.UUID, _ int) error { _, _, err := e.m.Read(ctx, id, "README.md", 0, -1); return err })
	})
	b.Run("op=read/clients=16/via=http", func(b *testing.B) {
		run(b, func(id uuid.UUID, _ int) error { _, _, err := e.c.ReadFile(ctx, id.String(), "README.md"); return err })
	})
	b.Run("op=write/clients=16/via=inproc", func(b *testing.B) {
		run(b, func(id uuid.UUID, n int) error {
			_, _, err := e.m.Write(ctx, id, "t.txt", fmt.Appendf(nil, "%d\n", n), session.WriteOptions{})
			return err
		})
	})
	b.Run("op=write/clients=16/via=http", func(b *testing.B) {
		run(b, func(id uuid.UUID, n int) error {
			_, err := e.c.WriteFile(ctx, id.String(), "t.txt", fmt.Appendf(nil, "%d\n", n), client.WriteOptions{})
			return err
		})
	})
}

// BenchmarkWriteThroughput is the group-commit benchmark: durable writes
// in process on each store, by one writer on one session, and by 16
// writers on each of 16 sessions (256 writers in all). ns/op is the
// inverse of the throughput; writes/s is reported as well.
func BenchmarkWriteThroughput(b *testing.B) {
	for _, store := range []string{"sqlite", "postgres"} {
		for _, shape := range []struct{ sessions, writers int }{{1, 1}, {16, 16}} {
			name := fmt.Sprintf("store=%s/sessions=%d/writers=%d", store, shape.sessions, shape.writers)
			b.Run(name, func(b *testing.B) {
				ctx := context.Background()
				dir := b.TempDir()
				var st db.Store
				var err error
				if store == "sqlite" {
					st, err = db.OpenSQLiteDir(ctx, dir)
				} else {
					st, err = db.OpenPostgres(ctx, freshSchema(b))
				}
				require.NoError(b, err)
				b.Cleanup(func() { st.Close() })
				en := testengine.New(st, dir, session.Config{})
				m := en.Sessions
				b.Cleanup(func() { m.Close() })
				_, err = en.Repos.Register(ctx, "r", testrepo.Build(b, "small"))
				require.NoError(b, err)
				ids := make([]uuid.UUID, shape.sessions)
				for i := range ids {
					s, err := m.Create(ctx, session.CreateOptions{Repo: "r", Base: "main"})
					require.NoError(b, err)
					ids[i] = s.ID
					// The first write makes the session's ref directory.
					_, _, err = m.Write(ctx, s.ID, "warm.txt", []byte("warm\n"), session.WriteOptions{})
					require.NoError(b, err)
				}
				writers := shape.sessions * shape.writers
				var next atomic.Int64
				if writers == 1 {
					n := 0
					for b.Loop() {
						n++
						_, _, err := m.Write(ctx, ids[0], "t.txt", fmt.Appendf(nil, "%d\n", n), session.WriteOptions{})
						require.NoError(b, err)
					}
				} else {
					b.ResetTimer() // the setup above is not timed
					b.SetParallelism((writers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
					b.RunParallel(func(pb *testing.PB) {
						w := int(next.Add(1) - 1)
						id := ids[w%len(ids)]
						path := fmt.Sprintf("w%d.txt", w)
						n := 0
						for pb.Next() {
							n++
							if _, _, err := m.Write(ctx, id, path, fmt.Appendf(nil, "%d\n", n), session.WriteOptions{}); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
			})
		}
	}
}
