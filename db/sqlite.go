package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/session"
)

// SQLiteFile is the name of the embedded store's file in the data directory.
const SQLiteFile = "sessiond.db"

// sqlitePragmas apply to every connection. See doc.go for why
// synchronous=FULL. busy_timeout is how long a writer waits for another
// process's write transaction before the store reports ErrUnavailable.
const sqlitePragmas = "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(FULL)"

// SQLite is the embedded store: one database file in WAL mode, through the
// pure-Go modernc.org/sqlite driver.
//
// Writes go through one connection (w), so writers in this process queue in
// Go instead of spinning in SQLite's busy handler; each write transaction
// starts with BEGIN IMMEDIATE, which takes the database write lock at once,
// so writers in other processes queue on the lock (busy_timeout) and a
// transaction never has to upgrade a read snapshot another writer made
// stale. Reads outside transactions use a pool of read-only connections,
// which WAL lets run beside the writer.
type SQLite struct {
	store
	path string
	w    *sql.DB
	r    *sql.DB
}

var _ session.Store = (*SQLite)(nil)

// OpenSQLite opens (creating if needed) the database file at path and
// applies pending migrations before it returns.
func OpenSQLite(ctx context.Context, path string) (*SQLite, error) {
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("db: sqlite path %q may not contain ? or #", path)
	}
	// The database is the daemon's alone: 0600, its journal files too
	// (SQLite gives them the database's mode).
	if err := privateFile(path); err != nil {
		return nil, fmt.Errorf("db: open sqlite: %w", err)
	}
	w, err := sql.Open("sqlite", path+"?"+sqlitePragmas+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("db: open sqlite: %w", sqliteError(ctx, err))
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	r, err := sql.Open("sqlite", path+"?"+sqlitePragmas+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("db: open sqlite: %w", sqliteError(ctx, err))
	}
	r.SetMaxOpenConns(4)
	s := &SQLite{path: path, w: w, r: r}
	s.store = store{r: sqlRunner{w: w, r: r}, begin: s.begin}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// privateFile creates path with mode 0600, or makes it (and the journal
// files beside it) 0600 where it exists.
func privateFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		if err := os.Chmod(p, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// OpenSQLiteDir opens the embedded store in a data directory.
func OpenSQLiteDir(ctx context.Context, dataDir string) (*SQLite, error) {
	return OpenSQLite(ctx, filepath.Join(dataDir, SQLiteFile))
}

// CheckSpace probes whether the database takes writes: the device of the
// database file has room (gitstore.ProbeSpace: SQLite's own writes reuse
// pages and WAL frames, so a small write can pass on a device the next
// larger one fills), then a write transaction that changes nothing. The
// lack of space is a *record.NoSpaceError naming the store.
func (s *SQLite) CheckSpace(ctx context.Context) error {
	dir, name := filepath.Split(s.path)
	err := gitstore.ProbeSpace(dir, name+"-space-")
	if gitstore.IsNoSpace(err) {
		return &record.NoSpaceError{What: record.SpaceStore, Err: errors.New("the database's device is full")}
	}
	if err != nil {
		return fmt.Errorf("db: %w", err)
	}
	return s.probeWrite(ctx)
}

// Close closes both connection pools.
func (s *SQLite) Close() error {
	return errors.Join(s.r.Close(), s.w.Close())
}

// begin runs fn in a BEGIN IMMEDIATE transaction on the writer connection.
func (s *SQLite) begin(ctx context.Context, fn func(runner) error) error {
	var err error
	for range maxAttempts {
		err = s.once(ctx, fn)
		if !errors.Is(err, errSerialization) {
			return err
		}
	}
	return err
}

func (s *SQLite) once(ctx context.Context, fn func(runner) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("db: begin: %w", sqliteError(ctx, err))
	}
	if err := fn(sqlRunner{w: tx, r: tx}); err != nil {
		// A failed rollback leaves nothing to undo: SQLite rolls back
		// when the connection is reset or closed.
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("db: commit: %w", sqliteError(ctx, err))
	}
	return nil
}

// migrate applies pending migrations in one write transaction; BEGIN
// IMMEDIATE makes a second process wait and then find them applied.
func (s *SQLite) migrate(ctx context.Context) error {
	ms, err := loadMigrations("sqlite")
	if err != nil {
		return err
	}
	// While a new file switches to WAL, SQLite can answer SQLITE_BUSY
	// without waiting in the busy handler, so processes opening a new
	// database together retry for a while instead of failing.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := s.applyMigrations(ctx, ms)
		if !errors.Is(err, record.ErrUnavailable) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("db: migrate: %w", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (s *SQLite) applyMigrations(ctx context.Context, ms []migration) error {
	return s.once(ctx, func(r runner) error {
		if _, err := r.exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version integer PRIMARY KEY, name text NOT NULL, applied_at integer NOT NULL) STRICT`); err != nil {
			return fmt.Errorf("db: migrate: %w", err)
		}
		applied, err := appliedVersions(ctx, r)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if applied[m.version] {
				continue
			}
			if _, err := r.exec(ctx, m.sql); err != nil {
				return fmt.Errorf("db: migration %s: %w", m.name, err)
			}
			if _, err := r.exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
				m.version, m.name, time.Now().UTC()); err != nil {
				return fmt.Errorf("db: migration %s: %w", m.name, err)
			}
		}
		return nil
	})
}

// sqlQuerier is what *sql.DB and *sql.Tx have in common.
type sqlQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// sqlRunner sends statements that start with SELECT to r and the rest to
// w; in a transaction both are the transaction.
type sqlRunner struct{ w, r sqlQuerier }

func (s sqlRunner) pick(q string) sqlQuerier {
	if strings.HasPrefix(strings.TrimSpace(q), "SELECT") {
		return s.r
	}
	return s.w
}

// sqliteArgs stores times as integer microseconds since the epoch, which
// sort and compare as numbers in SQL.
func sqliteArgs(args []any) []any {
	var out []any
	for i, a := range args {
		if t, ok := a.(time.Time); ok {
			if out == nil {
				out = make([]any, len(args))
				copy(out, args)
			}
			out[i] = t.UnixMicro()
		}
	}
	if out == nil {
		return args
	}
	return out
}

func (s sqlRunner) exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := s.w.ExecContext(ctx, q, sqliteArgs(args)...)
	if err != nil {
		return 0, sqliteError(ctx, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, sqliteError(ctx, err)
	}
	return n, nil
}

func (s sqlRunner) query(ctx context.Context, q string, args ...any) (rows, error) {
	rs, err := s.pick(q).QueryContext(ctx, q, sqliteArgs(args)...)
	if err != nil {
		return nil, sqliteError(ctx, err)
	}
	return sqlRows{ctx: ctx, rs: rs}, nil
}

func (s sqlRunner) queryRow(ctx context.Context, q string, args ...any) scanner {
	return sqlRow{ctx: ctx, row: s.pick(q).QueryRowContext(ctx, q, sqliteArgs(args)...)}
}

type sqlRow struct {
	ctx context.Context
	row *sql.Row
}

func (r sqlRow) Scan(dest ...any) error { return sqliteError(r.ctx, r.row.Scan(dest...)) }

type sqlRows struct {
	ctx context.Context
	rs  *sql.Rows
}

func (r sqlRows) Next() bool             { return r.rs.Next() }
func (r sqlRows) Scan(dest ...any) error { return sqliteError(r.ctx, r.rs.Scan(dest...)) }
func (r sqlRows) Err() error             { return sqliteError(r.ctx, r.rs.Err()) }
func (r sqlRows) Close()                 { _ = r.rs.Close() }
