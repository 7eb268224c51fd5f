package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sessiond/sessiond/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPgErrorTranslation(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
		err  error
		want error
	}{
		{"no rows", context.Background(), fmt.Errorf("scan: %w", pgx.ErrNoRows), record.ErrNotFound},
		{"unique", context.Background(), &pgconn.PgError{Code: "23505"}, record.ErrDuplicate},
		{"foreign key", context.Background(), &pgconn.PgError{Code: "23503"}, record.ErrNotFound},
		{"serialization", context.Background(), &pgconn.PgError{Code: "40001"}, record.ErrConflict},
		{"deadlock", context.Background(), &pgconn.PgError{Code: "40P01"}, record.ErrConflict},
		{"admin shutdown", context.Background(), &pgconn.PgError{Code: "57P01"}, record.ErrUnavailable},
		{"connection failure", context.Background(), &pgconn.PgError{Code: "08006"}, record.ErrUnavailable},
		{"too many connections", context.Background(), &pgconn.PgError{Code: "53300"}, record.ErrUnavailable},
		{"disk full", context.Background(), &pgconn.PgError{Code: "53100"}, record.ErrNoSpace},
		{"canceled", canceled, fmt.Errorf("read: %w", context.Canceled), context.Canceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := pgError(c.ctx, c.err)
			assert.ErrorIs(t, got, c.want)
			var pe *pgconn.PgError
			assert.False(t, errors.As(got, &pe), "the driver error escaped")
		})
	}
	assert.NoError(t, pgError(context.Background(), nil))
	other := pgError(context.Background(), &pgconn.PgError{Code: "42601", Message: "syntax error at or near"})
	assert.ErrorContains(t, other, "SQLSTATE 42601")
	assert.NotContains(t, other.Error(), "syntax error", "no driver text")
	dup := pgError(context.Background(), &pgconn.PgError{Code: "23505", Message: "duplicate key value violates unique constraint", ConstraintName: "repos_pkey"})
	assert.Equal(t, record.ErrDuplicate.Error(), dup.Error(), "no driver text")
	for _, s := range []error{record.ErrNotFound, record.ErrConflict, record.ErrDuplicate, record.ErrUnavailable, record.ErrNoSpace} {
		assert.NotErrorIs(t, other, s)
	}
	var full *record.NoSpaceError
	require.ErrorAs(t, pgError(context.Background(), &pgconn.PgError{Code: "53100"}), &full)
	assert.Equal(t, record.SpaceStore, full.What, "disk full names the store")
	assert.NotErrorIs(t, pgError(context.Background(), &pgconn.PgError{Code: "53300"}), record.ErrNoSpace, "too many connections is not disk full")
}

func TestSqliteErrorTranslation(t *testing.T) {
	assert.ErrorIs(t, sqliteError(context.Background(), sql.ErrNoRows), record.ErrNotFound)
	assert.ErrorIs(t, sqliteError(context.Background(), sql.ErrConnDone), record.ErrUnavailable)
	assert.NoError(t, sqliteError(context.Background(), nil))
}

// TestPostgresConnectionLost: when the server ends the store's
// connections, the next call fails with ErrUnavailable, and the store
// recovers on its own with fresh connections.
func TestPostgresConnectionLost(t *testing.T) {
	b, err := backendNamed("postgres")
	require.NoError(t, err)
	u, err := url.Parse(b.fresh(t))
	require.NoError(t, err)
	app := "sessiond_lost_" + t.Name()
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	s := b.openStore(t, u.String())
	mkRepo(t, s, "r")

	conn, err := pgx.Connect(t.Context(), postgresURL())
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, app)
	require.NoError(t, err)

	_, err = s.GetRepo(t.Context(), "r")
	t.Logf("first call after the kill: %v", err)
	if err != nil { // the pool may have noticed on its own
		assert.ErrorIs(t, err, record.ErrUnavailable)
		var pe *pgconn.PgError
		assert.False(t, errors.As(err, &pe), "the driver error escaped")
	}
	_, err = s.GetRepo(t.Context(), "r")
	assert.NoError(t, err, "the store reconnects")
}

// TestOpenPostgresSaysWhy: a database that cannot be opened says what is
// wrong, where, as whom, without the password the URL carries: the
// server's own words for a database that does not exist, the address for
// a refused connection.
func TestOpenPostgresSaysWhy(t *testing.T) {
	_ = freshSchema(t) // the server is there (or the test skips, or fails under CI)
	const password = "hunter2-not-for-logs"
	cfg, err := pgx.ParseConfig(postgresURL())
	require.NoError(t, err)
	missing, err := url.Parse(postgresURL())
	require.NoError(t, err)
	missing.User = url.UserPassword(cfg.User, password)
	missing.Path = "/nosuchdb"

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	require.NoError(t, ln.Close())

	for _, tc := range []struct {
		name, url string
		want      []string
	}{
		{"no such database", missing.String(), []string{`database "nosuchdb" does not exist`, `database "nosuchdb"`, "3D000"}},
		{"refused", "postgres://sessiond:" + password + "@" + closed + "/test", []string{"postgres at " + closed, "refused", `user "sessiond"`}},
		{"refused, key=value", "host=127.0.0.1 port=" + strings.TrimPrefix(closed, "127.0.0.1:") + " user=sessiond password=" + password + " dbname=test",
			[]string{"postgres at " + closed, "refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := OpenPostgres(t.Context(), tc.url)
			if p != nil {
				p.Close()
			}
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.NotContains(t, err.Error(), password)
			assert.NotContains(t, err.Error(), tc.url)
			assert.ErrorIs(t, err, record.ErrUnavailable)
			var pe *pgconn.PgError
			assert.False(t, errors.As(err, &pe), "the driver error escaped")
		})
	}
}
