package session_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testengine"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/session"
)

// env is one engine over an embedded store and a fixture repository.
type env struct {
	t       testing.TB
	dataDir string
	repoDir string
	store   db.Store
	en      *testengine.Engine
	m       *session.Manager
}

// cs is the changeset service over the engine and its store, as the
// daemon wires it.
func (e *env) cs() *changeset.Service { return e.en.Changesets }

func newEnv(t testing.TB, fixture string) *env {
	t.Helper()
	e := &env{t: t, dataDir: t.TempDir(), repoDir: testrepo.Build(t, fixture)}
	e.open()
	_, err := e.en.Repos.Register(t.Context(), "r", e.repoDir)
	require.NoError(t, err)
	return e
}

// open (re)starts the engine on the same data directory, as a restart of
// the daemon does.
func (e *env) open() {
	e.t.Helper()
	st, err := db.OpenSQLite(context.Background(), filepath.Join(e.dataDir, "sessiond.db"))
	require.NoError(e.t, err)
	e.store = st
	e.start(session.Config{})
	e.t.Cleanup(func() { e.en.Close(); st.Close() })
}

// start wires the engines over e.store with cfg.
func (e *env) start(cfg session.Config) {
	e.en = testengine.New(e.store, e.dataDir, cfg)
	e.m = e.en.Sessions
}

func (e *env) restart() {
	e.t.Helper()
	require.NoError(e.t, e.en.Close())
	require.NoError(e.t, e.store.Close())
	e.open()
}

func (e *env) create(opts session.CreateOptions) session.Session {
	e.t.Helper()
	if opts.Repo == "" {
		opts.Repo = "r"
	}
	if opts.Base == "" {
		opts.Base = "main"
	}
	if opts.AgentID == "" {
		opts.AgentID = "agent-1"
	}
	s, err := e.m.Create(e.t.Context(), opts)
	require.NoError(e.t, err)
	return s
}

func (e *env) write(id uuid.UUID, p, content string) session.FileInfo {
	e.t.Helper()
	fi, _, err := e.m.Write(e.t.Context(), id, p, []byte(content), session.WriteOptions{})
	require.NoError(e.t, err)
	return fi
}

func (e *env) read(id uuid.UUID, p string) string {
	e.t.Helper()
	data, _, err := e.m.Read(e.t.Context(), id, p, 0, -1)
	require.NoError(e.t, err)
	return string(data)
}

func (e *env) git(args ...string) string {
	e.t.Helper()
	return testrepo.Git(e.t, e.repoDir, args...)
}

func (e *env) oid(rev string) gitstore.OID {
	e.t.Helper()
	id, err := gitstore.ParseOID(e.git("rev-parse", rev))
	require.NoError(e.t, err)
	return id
}

// view returns every file of the session's view: path → content.
func (e *env) view(id uuid.UUID) map[string]string {
	e.t.Helper()
	infos, err := e.m.ListFiles(e.t.Context(), id, session.ListOptions{Recursive: true})
	require.NoError(e.t, err)
	out := map[string]string{}
	for _, fi := range infos {
		if fi.Type == "dir" || fi.Type == "submodule" {
			continue
		}
		out[fi.Path] = e.read(id, fi.Path)
	}
	return out
}

// treeFiles returns every file of a tree as git sees it: path → content,
// with two git processes (ls-tree, then one cat-file --batch).
func (e *env) treeFiles(tree gitstore.OID) map[string]string {
	e.t.Helper()
	out := map[string]string{}
	var paths []string
	var req bytes.Buffer
	list := testrepo.GitRaw(e.t, e.repoDir, nil, "ls-tree", "-r", "-z", tree.String())
	for _, line := range splitZ(list) {
		meta, p, _ := cut(line, "\t")
		f := fields(meta)
		if f[1] != "blob" {
			continue
		}
		paths = append(paths, p)
		req.WriteString(f[2] + "\n")
	}
	if len(paths) == 0 {
		return out
	}
	batch := testrepo.GitRaw(e.t, e.repoDir, req.Bytes(), "cat-file", "--batch")
	for _, p := range paths {
		hdr, rest, _ := bytes.Cut(batch, []byte("\n"))
		size, err := strconv.Atoi(fields(string(hdr))[2])
		require.NoError(e.t, err)
		out[p] = string(rest[:size])
		batch = rest[size+1:]
	}
	return out
}

// writeWorkFile writes a file in the fixture's work tree (for commits made
// with the git CLI).
func writeWorkFile(t testing.TB, e *env, p, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(e.repoDir, p), []byte(content), 0o644))
}

// plainRunOnly skips t in make test's race detector run (-short): what
// says what t runs, all of which the plain run covers, with no goroutines
// of the daemon's own against each other for the detector to watch.
func plainRunOnly(t *testing.T, what string) {
	t.Helper()
	if testing.Short() {
		t.Skip(what + ": the plain run covers it; nothing of the daemon's races here")
	}
}
