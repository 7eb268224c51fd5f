// Package pgtest gives tests a fresh PostgreSQL schema on the real server:
// SESSIOND_TEST_DATABASE_URL when set, otherwise the local server on its
// standard socket. Without a server a test is skipped, or fails when
// CI=true, so CI never passes by skipping.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// DefaultURL is the local server on its standard socket directory.
const DefaultURL = "postgres:///test?host=/var/run/postgresql"

// URL is the server tests use.
func URL() string {
	if u := os.Getenv("SESSIOND_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultURL
}

var (
	pingOnce sync.Once
	pingErr  error
)

// FreshSchema creates an empty schema and returns a URL whose connections
// use it; the schema is dropped when tb ends.
func FreshSchema(tb testing.TB) string {
	tb.Helper()
	base := URL()
	pingOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			pingErr = err
			return
		}
		pingErr = conn.Ping(ctx)
		_ = conn.Close(ctx)
	})
	if pingErr != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("postgres unavailable in CI: %v", pingErr)
		}
		tb.Skipf("postgres unavailable (set SESSIOND_TEST_DATABASE_URL): %v", pingErr)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "sessiond_test_" + hex.EncodeToString(b[:])
	exec := func(ctx context.Context, sql string) error {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	require.NoError(tb, exec(tb.Context(), "CREATE SCHEMA "+schema))
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	require.NoError(tb, err, "SESSIOND_TEST_DATABASE_URL must be a URL")
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
