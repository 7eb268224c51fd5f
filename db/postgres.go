package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sessiond/sessiond/session"
)

// DefaultPostgresURL is the local server on its standard socket directory.
const DefaultPostgresURL = "postgres:///test?host=/var/run/postgresql"

// migrateLockKey is the advisory lock key that serializes migrations of one
// database across processes ("sessiond" in ASCII).
const migrateLockKey int64 = 0x73657373696f6e64

// Postgres is the store on a Postgres server, through a pgx pool.
type Postgres struct {
	store
	pool *pgxpool.Pool
	// locks holds the connections of cluster-wide branch locks
	// (LockBranch) and runs the statements of session leases, apart from
	// pool so that neither ever waits for a connection the holder's
	// transactions need.
	locks *pgxpool.Pool
}

var _ session.Store = (*Postgres)(nil)

// CheckSpace probes whether the database takes writes: a write
// transaction that changes nothing (its WAL is written and flushed at
// commit, which the server refuses on a full disk). A full disk is a
// *record.NoSpaceError naming the store.
func (p *Postgres) CheckSpace(ctx context.Context) error { return p.probeWrite(ctx) }

// OpenPostgres connects to the database at url (a postgres:// URL or a
// key=value DSN; a search_path parameter selects the schema) and applies
// pending migrations before it returns.
func OpenPostgres(ctx context.Context, url string) (*Postgres, error) {
	cfg, err := parseURL(url)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("db: open postgres: %w", pgError(ctx, err))
	}
	// A first connection now, so that a database that is not there says
	// why in the server's or the network's words, not as a failed begin.
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, connectError(ctx, cfg.ConnConfig, err)
	}
	lcfg := cfg.Copy()
	lcfg.MaxConns, lcfg.MinConns = 16, 0
	locks, err := pgxpool.NewWithConfig(ctx, lcfg)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("db: open postgres: %w", pgError(ctx, err))
	}
	p := &Postgres{pool: pool, locks: locks}
	p.store = store{r: pgRunner{q: pool}, begin: p.begin}
	if err := p.migrate(ctx); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// CheckPostgresURL reports whether url is one OpenPostgres can parse (a
// postgres:// URL or a key=value DSN), without connecting. The error
// never quotes url, which may hold a password.
func CheckPostgresURL(url string) error {
	_, err := parseURL(url)
	return err
}

func parseURL(url string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The parse error may quote the password; keep only the fact.
		return nil, errors.New("db: invalid postgres url: want postgres://… or a key=value DSN")
	}
	return cfg, nil
}

// Close closes the pool, waiting for connections in use to be returned.
func (p *Postgres) Close() error {
	p.locks.Close()
	p.pool.Close()
	return nil
}

// begin runs fn in a read-committed transaction. Compare-and-swap and
// sequence assignment need no stronger isolation: their UPDATEs lock the
// rows they test. Serialization failures and deadlocks run fn again.
func (p *Postgres) begin(ctx context.Context, fn func(runner) error) error {
	var err error
	for range maxAttempts {
		err = p.once(ctx, fn)
		if !errors.Is(err, errSerialization) {
			return err
		}
	}
	return err
}

func (p *Postgres) once(ctx context.Context, fn func(runner) error) error {
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("db: begin: %w", pgError(ctx, err))
	}
	if err := fn(pgRunner{q: tx}); err != nil {
		// Rollback on a broken connection fails too; the server rolls
		// back when the connection goes, so that error adds nothing.
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("db: commit: %w", pgError(ctx, err))
	}
	return nil
}

// migrate applies pending migrations in one transaction under an advisory
// lock, so processes starting at once apply each migration exactly once.
func (p *Postgres) migrate(ctx context.Context) error {
	ms, err := loadMigrations("postgres")
	if err != nil {
		return err
	}
	return p.once(ctx, func(r runner) error {
		tx := r.(pgRunner)
		if _, err := tx.exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLockKey); err != nil {
			return fmt.Errorf("db: migrate lock: %w", err)
		}
		if _, err := tx.exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)`); err != nil {
			return fmt.Errorf("db: migrate: %w", err)
		}
		applied, err := appliedVersions(ctx, tx)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if applied[m.version] {
				continue
			}
			// No arguments: pgx sends the file with the simple protocol,
			// which runs every statement in it.
			if _, err := tx.exec(ctx, m.sql); err != nil {
				return fmt.Errorf("db: migration %s: %w", m.name, err)
			}
			if _, err := tx.exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
				m.version, m.name, time.Now().UTC()); err != nil {
				return fmt.Errorf("db: migration %s: %w", m.name, err)
			}
		}
		return nil
	})
}

func appliedVersions(ctx context.Context, r runner) (map[int]bool, error) {
	rs, err := r.query(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return nil, fmt.Errorf("db: migrate: %w", err)
	}
	vs, err := collect(rs, func(sc scanner) (int, error) {
		var v int
		err := sc.Scan(&v)
		return v, err
	})
	if err != nil {
		return nil, fmt.Errorf("db: migrate: %w", err)
	}
	applied := make(map[int]bool, len(vs))
	for _, v := range vs {
		applied[v] = true
	}
	return applied, nil
}

// pgQuerier is what a pool and a transaction have in common.
type pgQuerier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

type pgRunner struct{ q pgQuerier }

func (r pgRunner) exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := r.q.Exec(ctx, q, args...)
	if err != nil {
		return 0, pgError(ctx, err)
	}
	return tag.RowsAffected(), nil
}

func (r pgRunner) query(ctx context.Context, q string, args ...any) (rows, error) {
	rs, err := r.q.Query(ctx, q, args...)
	if err != nil {
		return nil, pgError(ctx, err)
	}
	return pgRows{ctx: ctx, rs: rs}, nil
}

func (r pgRunner) queryRow(ctx context.Context, q string, args ...any) scanner {
	return pgRow{ctx: ctx, row: r.q.QueryRow(ctx, q, args...)}
}

type pgRow struct {
	ctx context.Context
	row pgx.Row
}

func (r pgRow) Scan(dest ...any) error { return pgError(r.ctx, r.row.Scan(dest...)) }

type pgRows struct {
	ctx context.Context
	rs  pgx.Rows
}

func (r pgRows) Next() bool             { return r.rs.Next() }
func (r pgRows) Scan(dest ...any) error { return pgError(r.ctx, r.rs.Scan(dest...)) }
func (r pgRows) Err() error             { return pgError(r.ctx, r.rs.Err()) }
func (r pgRows) Close()                 { r.rs.Close() }
