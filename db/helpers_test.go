package db

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sessiond/sessiond/internal/pgtest"
	"github.com/sessiond/sessiond/repos"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/session"
)

// Environment of a re-executed test binary (see TestMain).
const (
	envChild   = "SESSIOND_DB_CHILD" // "append" or "crash"
	envBackend = "SESSIOND_DB_BACKEND"
	envDSN     = "SESSIOND_DB_DSN"
	envSession = "SESSIOND_DB_SESSION"
	envCount   = "SESSIOND_DB_COUNT"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envChild); mode != "" {
		if err := runChild(mode); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// backend is one store implementation under test.
type backend struct {
	name string
	// fresh makes an empty database for t and returns its data source
	// name; the database is removed when t ends.
	fresh func(t testing.TB) string
	open  func(ctx context.Context, dsn string) (Store, error)
}

var backends = []backend{
	{
		name:  "sqlite",
		fresh: func(t testing.TB) string { return filepath.Join(t.TempDir(), SQLiteFile) },
		open: func(ctx context.Context, dsn string) (Store, error) {
			return OpenSQLite(ctx, dsn)
		},
	},
	{
		name:  "postgres",
		fresh: freshSchema,
		open: func(ctx context.Context, dsn string) (Store, error) {
			return OpenPostgres(ctx, dsn)
		},
	},
}

func backendNamed(name string) (backend, error) {
	for _, b := range backends {
		if b.name == name {
			return b, nil
		}
	}
	return backend{}, fmt.Errorf("no backend %q", name)
}

// openStore opens dsn and closes the store when t ends.
func (b backend) openStore(t testing.TB, dsn string) Store {
	t.Helper()
	s, err := b.open(t.Context(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// postgresURL is the server tests use.
func postgresURL() string { return pgtest.URL() }

func freshSchema(t testing.TB) string { return pgtest.FreshSchema(t) }

// Fixtures.

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 123456000, time.UTC)

func oid(n int) gitstore.OID {
	return gitstore.HashObject(gitstore.KindBlob, []byte(strconv.Itoa(n)))
}

func mkRepo(t testing.TB, s interface {
	CreateRepo(context.Context, repos.Repo) error
}, name string) repos.Repo {
	t.Helper()
	r := repos.Repo{Name: name, Path: "/srv/" + name + ".git", CreatedAt: t0}
	require.NoError(t, s.CreateRepo(t.Context(), r))
	return r
}

func mkSession(t testing.TB, s session.Tx, repo string, mod func(*session.Session)) session.Session {
	t.Helper()
	ss := session.Session{
		ID:         uuid.New(),
		Repo:       repo,
		AgentID:    "agent-1",
		AgentName:  "Agent One",
		Intent:     "fix the bug",
		BaseCommit: oid(1),
		BaseRef:    "main",
		Mode:       session.ModeReadWrite,
		State:      session.StateActive,
		CreatedAt:  t0,
	}
	if mod != nil {
		mod(&ss)
	}
	require.NoError(t, s.CreateSession(t.Context(), ss))
	got, err := s.GetSession(t.Context(), ss.ID)
	require.NoError(t, err)
	return got
}

func write(path string, blob int) session.OverlayChange {
	return session.OverlayChange{Entry: session.OverlayEntry{
		Path: path, Status: session.StatusModified, Blob: oid(blob), Mode: gitstore.ModeFile,
	}}
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

// runChild is the body of a re-executed test binary.
func runChild(mode string) error {
	ctx := context.Background()
	b, err := backendNamed(os.Getenv(envBackend))
	if err != nil {
		return err
	}
	id, err := uuid.Parse(os.Getenv(envSession))
	if err != nil {
		return err
	}
	s, err := b.open(ctx, os.Getenv(envDSN))
	if err != nil {
		return err
	}
	defer s.Close()
	switch mode {
	case "append":
		n, err := strconv.Atoi(os.Getenv(envCount))
		if err != nil {
			return err
		}
		for i := range n {
			m := session.MutationRecord{Session: id, Op: session.OpWrite, Paths: []string{"p"}, Actor: "child", At: time.Now()}
			if _, err := s.AppendMutation(ctx, m, []session.OverlayChange{write("p", i)}); err != nil {
				return err
			}
		}
		return nil
	case "crash":
		// Write until killed; a line goes out only after its commit.
		for i := 0; ; i++ {
			path := fmt.Sprintf("f/%d", i%50)
			m := session.MutationRecord{Session: id, Op: session.OpWrite, Paths: []string{path}, New: []gitstore.OID{oid(i)}, Actor: "crash", At: time.Now()}
			got, err := s.AppendMutation(ctx, m, []session.OverlayChange{write(path, i)})
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(os.Stdout, "ok %d %s %d\n", got.Seq, path, i); err != nil {
				return err
			}
		}
	}
	return fmt.Errorf("unknown child mode %q", mode)
}

// migrationRunner lets tests read tables the Store interface does not show.
func (s *store) migrationRunner() runner { return s.r }
