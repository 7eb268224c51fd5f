package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sessiond/sessiond/record"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// This file is the one boundary where driver errors become the session
// package's sentinels. Neither the driver's error value nor its text
// escapes: a translated error says what happened in the store's own words
// (the caller adds which row), and an error it does not know keeps only
// the driver's code (SQLSTATE, SQLite result code) for the logs.

// ctxError reports the context's error when err happened because ctx ended.
func ctxError(ctx context.Context, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if errors.Is(err, context.Canceled) {
			return context.Canceled
		}
		return context.DeadlineExceeded
	}
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return nil
}

// Postgres SQLSTATE codes the store distinguishes.
const (
	pgUniqueViolation      = "23505"
	pgForeignKeyViolation  = "23503"
	pgSerializationFailure = "40001"
	pgDeadlockDetected     = "40P01"
	pgLockNotAvailable     = "55P03"
	pgAdminShutdown        = "57P01"
	pgCrashShutdown        = "57P02"
	pgCannotConnectNow     = "57P03"
	pgDiskFull             = "53100"
)

// connectError is why the first connection to Postgres failed, in words a
// person can act on: the server's own message when it answered (a
// database or role that does not exist, authentication refused), else
// the address that refused or could not be reached. It names the host,
// port, user and database, never the URL or the password.
func connectError(ctx context.Context, cfg *pgx.ConnConfig, err error) error {
	if cerr := ctxError(ctx, err); cerr != nil {
		return fmt.Errorf("db: connect to postgres at %s: %w", pgAddress(cfg), cerr)
	}
	as := fmt.Sprintf("user %q, database %q", cfg.User, cfg.Database)
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		msg := pe.Message
		if cfg.Password != "" {
			msg = strings.ReplaceAll(msg, cfg.Password, "…")
		}
		return fmt.Errorf("%w: postgres at %s (%s): %s (SQLSTATE %s)", record.ErrUnavailable, pgAddress(cfg), as, msg, pe.Code)
	}
	var dns *net.DNSError
	why := "cannot connect"
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		why = "connection refused: is Postgres running and listening there?"
	case errors.Is(err, syscall.ENOENT):
		why = "no socket there: is Postgres running, and is that its socket directory?"
	case errors.As(err, &dns):
		why = fmt.Sprintf("host %q not found", cfg.Host)
	case pgconn.Timeout(err) || errors.Is(err, os.ErrDeadlineExceeded):
		why = "no answer in time"
	case errors.Is(err, syscall.EACCES):
		why = "permission denied"
	}
	return fmt.Errorf("%w: postgres at %s (%s): %s", record.ErrUnavailable, pgAddress(cfg), as, why)
}

// pgAddress is where cfg connects: host:port, or a Unix socket's path.
func pgAddress(cfg *pgx.ConnConfig) string {
	if strings.HasPrefix(cfg.Host, "/") {
		return fmt.Sprintf("%s/.s.PGSQL.%d", strings.TrimSuffix(cfg.Host, "/"), cfg.Port)
	}
	return net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
}

// errNoSpace is a write the database refused for lack of space: SQLite's
// SQLITE_FULL, Postgres's disk_full.
var errNoSpace = &record.NoSpaceError{What: record.SpaceStore}

// pgError translates an error from pgx.
func pgError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return record.ErrNotFound
	}
	if cerr := ctxError(ctx, err); cerr != nil {
		return fmt.Errorf("db: %w", cerr)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == pgUniqueViolation:
			return record.ErrDuplicate
		case pe.Code == pgForeignKeyViolation:
			return errMissingReference
		case pe.Code == pgSerializationFailure || pe.Code == pgDeadlockDetected:
			return errSerialization
		case pe.Code == pgDiskFull:
			return errNoSpace
		case pe.Code == pgLockNotAvailable, pe.Code == pgAdminShutdown, pe.Code == pgCrashShutdown,
			pe.Code == pgCannotConnectNow, pe.Code[:2] == "08", pe.Code[:2] == "53":
			return fmt.Errorf("%w: postgres SQLSTATE %s", record.ErrUnavailable, pe.Code)
		}
		return fmt.Errorf("db: postgres: SQLSTATE %s", pe.Code)
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	if errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		pgconn.SafeToRetry(err) || pgconn.Timeout(err) || errors.Is(err, errPoolClosed) || isConnClosed(err) {
		return errConnection
	}
	return fmt.Errorf("db: postgres: unexpected %T", err)
}

var (
	// errPoolClosed is returned by a closed store.
	errPoolClosed = errors.New("store is closed")
	// errSerialization is a transaction the database gave up to keep
	// concurrent ones serializable; InTx runs such a transaction again.
	errSerialization = fmt.Errorf("%w: serialization failure", record.ErrConflict)
	// errMissingReference is a foreign key pointing at no row.
	errMissingReference = fmt.Errorf("%w: a row it refers to", record.ErrNotFound)
	// errConnection is a connection to the database lost or refused.
	errConnection = fmt.Errorf("%w: no connection to the database", record.ErrUnavailable)
)

// maxAttempts bounds how often a transaction runs after serialization
// failures before the conflict reaches the caller.
const maxAttempts = 4

// isConnClosed recognises the errors pgx and pgxpool return on a closed
// connection or pool, which have no exported type.
func isConnClosed(err error) bool {
	switch err.Error() {
	case "conn closed", "closed pool", "conn busy":
		return true
	}
	return false
}

// sqliteError translates an error from database/sql with modernc.org/sqlite.
func sqliteError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return record.ErrNotFound
	}
	if cerr := ctxError(ctx, err); cerr != nil {
		return fmt.Errorf("db: %w", cerr)
	}
	if errors.Is(err, sql.ErrConnDone) || errors.Is(err, errPoolClosed) || err.Error() == "sql: database is closed" {
		return fmt.Errorf("%w: the database is closed", record.ErrUnavailable)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		code := se.Code()
		switch code {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return record.ErrDuplicate
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return errMissingReference
		case sqlite3.SQLITE_BUSY_SNAPSHOT:
			// A read transaction that tried to write after another
			// writer committed: the serialization failure of WAL mode.
			return errSerialization
		}
		switch code & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return fmt.Errorf("%w: the database is busy", record.ErrUnavailable)
		case sqlite3.SQLITE_FULL:
			return errNoSpace
		case sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY:
			return fmt.Errorf("%w: the database file cannot be written (sqlite result code %d)", record.ErrUnavailable, code)
		case sqlite3.SQLITE_INTERRUPT:
			return fmt.Errorf("db: %w", context.Canceled)
		}
		return fmt.Errorf("db: sqlite: result code %d", code)
	}
	return fmt.Errorf("db: sqlite: unexpected %T", err)
}
