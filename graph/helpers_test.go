package graph_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/graph"
	"github.com/sessiond/sessiond/internal/graphsession"
	"github.com/sessiond/sessiond/internal/testengine"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/session"
)

// stdlibFiles are real Go sources from the toolchain, copied into the test
// repository at these paths.
var stdlibFiles = []string{"bufio/scan.go", "strings/reader.go", "sort/sort.go"}

// goroot is the toolchain's root, as `go env GOROOT` prints it.
var goroot = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	return strings.TrimSpace(string(out)), err
})

// stdlib returns the content of a file of the Go toolchain's source.
func stdlib(tb testing.TB, p string) string {
	tb.Helper()
	root, err := goroot()
	require.NoError(tb, err)
	data, err := os.ReadFile(filepath.Join(root, "src", filepath.FromSlash(p)))
	require.NoError(tb, err)
	return string(data)
}

// env is an engine with the graph as its observer, over a repository whose
// main holds stdlibFiles and a README.
type env struct {
	t     testing.TB
	store db.Store
	en    *testengine.Engine
	m     *session.Manager
	g     *graph.Graph
	dir   string
}

func newEnv(t testing.TB) *env {
	t.Helper()
	return newEnvClock(t, nil)
}

// newEnvClock is newEnv with the engine on clock now (time.Now when nil).
func newEnvClock(t testing.TB, now func() time.Time) *env {
	t.Helper()
	dir := testrepo.Init(t)
	for _, p := range stdlibFiles {
		full := filepath.Join(dir, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(stdlib(t, p)), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README"), []byte("hello\n"), 0o644))
	testrepo.Git(t, dir, "add", "-A")
	testrepo.Git(t, dir, "commit", "-q", "-m", "stdlib files")

	st, err := db.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "sessiond.db"))
	require.NoError(t, err)
	e := &env{t: t, store: st, dir: dir}
	evs := events.New(st, nil)
	e.g = graph.New(graph.Config{Events: evs})
	e.en = testengine.New(st, t.TempDir(), session.Config{Events: evs, Observers: []session.Observer{graphsession.Observer(e.g)}, Now: now})
	e.m = e.en.Sessions
	t.Cleanup(func() { e.m.Close(); e.g.Close(); e.en.Repos.Close(); st.Close() })
	_, err = e.en.Repos.Register(t.Context(), "r", dir)
	require.NoError(t, err)
	return e
}

func (e *env) create(agent string) session.Session {
	e.t.Helper()
	s, err := e.m.Create(e.t.Context(), session.CreateOptions{Repo: "r", Base: "main", AgentID: agent})
	require.NoError(e.t, err)
	return s
}

func (e *env) write(id uuid.UUID, p, content string) {
	e.t.Helper()
	_, _, err := e.m.Write(e.t.Context(), id, p, []byte(content), session.WriteOptions{})
	require.NoError(e.t, err)
	e.sync()
}

// sync waits for the graph to take in everything committed so far.
func (e *env) sync() {
	e.t.Helper()
	require.NoError(e.t, e.g.Sync(e.t.Context()))
}

func (e *env) read(id uuid.UUID, p string) string {
	e.t.Helper()
	data, _, err := e.m.Read(e.t.Context(), id, p, 0, -1)
	require.NoError(e.t, err)
	return string(data)
}

// edit rewrites file p of the session: old must occur exactly once.
func (e *env) edit(id uuid.UUID, p, old, new string) {
	e.t.Helper()
	src := e.read(id, p)
	require.Equal(e.t, 1, strings.Count(src, old), "%q in %s", old, p)
	e.write(id, p, strings.Replace(src, old, new, 1))
}

// overlaps returns the overlap events of a session, oldest first.
func (e *env) overlaps(id uuid.UUID) []graph.Overlap {
	e.t.Helper()
	e.sync()
	evs, err := e.store.ListEvents(e.t.Context(), events.Filter{Repo: "r", Session: id})
	require.NoError(e.t, err)
	var out []graph.Overlap
	for _, ev := range evs {
		if ev.Type != graph.EventOverlapDetected {
			continue
		}
		var o graph.Overlap
		require.NoError(e.t, json.Unmarshal(ev.Payload, &o))
		out = append(out, o)
	}
	return out
}

// delta returns the session's delta by path.
func (e *env) delta(id uuid.UUID) map[string]graph.FileSummary {
	e.t.Helper()
	e.sync()
	fs, err := e.g.Delta(id)
	require.NoError(e.t, err)
	out := map[string]graph.FileSummary{}
	for _, f := range fs {
		out[f.Path] = f
	}
	return out
}

func keys(ks ...string) []graph.Key {
	out := []graph.Key{}
	for _, k := range ks {
		out = append(out, parseKey(k))
	}
	return out
}

// parseKey reads "func F", "type T" or "method (R).M".
func parseKey(s string) graph.Key {
	kind, rest, _ := strings.Cut(s, " ")
	k := graph.Key{Kind: graph.Kind(kind), Name: rest}
	if kind == string(graph.KindMethod) {
		recv, name, _ := strings.Cut(strings.TrimPrefix(rest, "("), ").")
		k.Receiver, k.Name = recv, name
	}
	return k
}

func (e *env) oid(rev string) gitstore.OID {
	e.t.Helper()
	id, err := gitstore.ParseOID(testrepo.Git(e.t, e.dir, "rev-parse", rev))
	require.NoError(e.t, err)
	return id
}
