package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/sessiond/sessiond/session"
)

// This file is the one boundary where driver errors become the session
// package's sentinels. The driver error's text is kept in the message, but
// never the error value, so no pgx or SQLite type escapes the package.

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
)

// pgError translates an error from pgx.
func pgError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return session.ErrNotFound
	}
	if cerr := ctxError(ctx, err); cerr != nil {
		return fmt.Errorf("db: %w", cerr)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == pgUniqueViolation:
			return fmt.Errorf("%w (%s)", session.ErrDuplicate, pe.ConstraintName)
		case pe.Code == pgForeignKeyViolation:
			return fmt.Errorf("%w: referenced row (%s)", session.ErrNotFound, pe.ConstraintName)
		case pe.Code == pgSerializationFailure || pe.Code == pgDeadlockDetected:
			return fmt.Errorf("%w: %s", errSerialization, pe.Message)
		case pe.Code == pgLockNotAvailable, pe.Code == pgAdminShutdown, pe.Code == pgCrashShutdown,
			pe.Code == pgCannotConnectNow, pe.Code[:2] == "08", pe.Code[:2] == "53":
			return fmt.Errorf("%w: %s", session.ErrUnavailable, pe.Message)
		}
		return fmt.Errorf("db: postgres: %s (SQLSTATE %s)", pe.Message, pe.Code)
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	if errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		pgconn.SafeToRetry(err) || pgconn.Timeout(err) || errors.Is(err, errPoolClosed) {
		return fmt.Errorf("%w: %s", session.ErrUnavailable, err.Error())
	}
	if isConnClosed(err) {
		return fmt.Errorf("%w: %s", session.ErrUnavailable, err.Error())
	}
	return fmt.Errorf("db: postgres: %s", err.Error())
}

var (
	// errPoolClosed is returned by a closed store.
	errPoolClosed = errors.New("store is closed")
	// errSerialization is a transaction the database gave up to keep
	// concurrent ones serializable; InTx runs such a transaction again.
	errSerialization = fmt.Errorf("%w: serialization failure", session.ErrConflict)
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
		return session.ErrNotFound
	}
	if cerr := ctxError(ctx, err); cerr != nil {
		return fmt.Errorf("db: %w", cerr)
	}
	if errors.Is(err, sql.ErrConnDone) || errors.Is(err, errPoolClosed) || err.Error() == "sql: database is closed" {
		return fmt.Errorf("%w: %s", session.ErrUnavailable, err.Error())
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		code := se.Code()
		switch code {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%w: %s", session.ErrDuplicate, se.Error())
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return fmt.Errorf("%w: referenced row: %s", session.ErrNotFound, se.Error())
		case sqlite3.SQLITE_BUSY_SNAPSHOT:
			// A read transaction that tried to write after another
			// writer committed: the serialization failure of WAL mode.
			return fmt.Errorf("%w: %s", errSerialization, se.Error())
		}
		switch code & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL,
			sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY:
			return fmt.Errorf("%w: %s", session.ErrUnavailable, se.Error())
		case sqlite3.SQLITE_INTERRUPT:
			return fmt.Errorf("db: %w", context.Canceled)
		}
		return fmt.Errorf("db: sqlite: %s", se.Error())
	}
	return fmt.Errorf("db: sqlite: %s", err.Error())
}
