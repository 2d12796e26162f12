// Package dbtest opens isolated, migrated stores for tests outside the
// store packages: a temp-file SQLite database, or a fresh schema on the
// Postgres named by CHATD_TEST_POSTGRES_DSN.
package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/postgres"
	"github.com/chatd/chatd/store/sqlite"
)

// PostgresDSN returns CHATD_TEST_POSTGRES_DSN. Without it the test skips,
// except under CI=true, where a skip would hide a broken setup and fails.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("CHATD_TEST_POSTGRES_DSN")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CHATD_TEST_POSTGRES_DSN not set: Postgres tests must run in CI")
		}
		t.Skip("CHATD_TEST_POSTGRES_DSN not set: skipping Postgres tests")
	}
	return dsn
}

// NewSQLite opens a migrated SQLite store in a temp dir.
func NewSQLite(t testing.TB) *sqlite.Store {
	t.Helper()
	return OpenSQLite(t, filepath.Join(t.TempDir(), "chatd.db"))
}

// OpenSQLite opens (and migrates) the SQLite store at path, closed when
// the test ends.
func OpenSQLite(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	migrateUp(t, s.Migrations)
	return s
}

// PostgresSchema creates a fresh schema, dropped when the test ends.
func PostgresSchema(t testing.TB) (dsn, schema string) {
	t.Helper()
	dsn = PostgresDSN(t)
	var b [8]byte
	_, _ = rand.Read(b[:])
	schema = "chatd_test_" + hex.EncodeToString(b[:])
	admin(t, dsn, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
	t.Cleanup(func() { admin(t, dsn, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE") })
	return dsn, schema
}

// NewPostgres opens a migrated Postgres store on a fresh schema.
func NewPostgres(t testing.TB) *postgres.Store {
	t.Helper()
	dsn, schema := PostgresSchema(t)
	s, err := postgres.Open(context.Background(), dsn, postgres.Options{SearchPath: schema})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	migrateUp(t, s.Migrations)
	return s
}

// Each runs fn once per store kind, as subtests "sqlite" and "postgres".
func Each(t *testing.T, fn func(t *testing.T, newStore func(t testing.TB) store.Store)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		fn(t, func(t testing.TB) store.Store { return NewSQLite(t) })
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		PostgresDSN(t)
		fn(t, func(t testing.TB) store.Store { return NewPostgres(t) })
	})
}

// DatabaseLeaseClock reports whether s stamps and judges leases by the
// database's clock (Postgres) rather than the caller's (SQLite); see
// store.LeaseWindow.
func DatabaseLeaseClock(s store.Store) bool { return s.Dialect() == "postgres" }

// AgeLeases lets d pass for the leases and replica records of s, by the
// clock s judges them with. Postgres judges by the database's clock, which
// a test cannot move, so every heartbeat and replica record moves d into
// the past. SQLite judges by the caller's clock: the test advances its
// fake clock, and AgeLeases does nothing. Tests that let a lease go stale
// do both.
func AgeLeases(t testing.TB, s store.Store, d time.Duration) {
	t.Helper()
	if !DatabaseLeaseClock(s) {
		return
	}
	pg, ok := s.(*postgres.Store)
	require.True(t, ok, "a Postgres store from this package, got %T", s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, stmt := range []string{
		`UPDATE chat_heartbeats SET heartbeat_at = heartbeat_at - $1::bigint * interval '1 microsecond'`,
		`UPDATE chat_replicas SET updated_at = updated_at - $1::bigint * interval '1 microsecond'`,
	} {
		_, err := pg.Pool().Exec(ctx, stmt, d.Microseconds())
		require.NoError(t, err, stmt)
	}
}

func migrateUp(t testing.TB, provider func() (*goose.Provider, error)) {
	t.Helper()
	p, err := provider()
	require.NoError(t, err)
	_, err = p.Up(context.Background())
	require.NoError(t, err)
}

func admin(t testing.TB, dsn, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	require.NoError(t, err, sql)
}
