package changeset_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/internal/testengine"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/session"
)

// env is the session engine and the changeset service over one embedded
// store and a fixture repository "r", wired as the daemon wires them.
type env struct {
	t       testing.TB
	dataDir string
	repoDir string
	store   db.Store
	en      *testengine.Engine
	m       *session.Manager
	cs      *changeset.Service
}

func newEnv(t testing.TB, fixture string) *env {
	t.Helper()
	e := &env{t: t, dataDir: t.TempDir(), repoDir: testrepo.Build(t, fixture)}
	e.open()
	_, err := e.en.Repos.Register(t.Context(), "r", e.repoDir)
	require.NoError(t, err)
	return e
}

// open (re)starts the engines on the same data directory, as a restart of
// the daemon does.
func (e *env) open() {
	e.t.Helper()
	st, err := db.OpenSQLite(context.Background(), filepath.Join(e.dataDir, "sessiond.db"))
	require.NoError(e.t, err)
	e.store = st
	e.en = testengine.New(st, e.dataDir, session.Config{})
	e.m, e.cs = e.en.Sessions, e.en.Changesets
	e.t.Cleanup(func() { e.en.Close(); st.Close() })
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
