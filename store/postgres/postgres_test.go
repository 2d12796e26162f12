package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// testDSN returns CHATD_TEST_POSTGRES_DSN, skipping the test when it is
// unset; in CI a skip would hide a broken setup, so it fails instead.
func testDSN(t *testing.T) string {
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

// newTestStore opens a migrated store on a fresh schema of its own, dropped
// when the test ends.
func newTestStore(t *testing.T) *Store {
	t.Helper()
	dsn := testDSN(t)
	ctx := context.Background()

	var b [8]byte
	_, _ = rand.Read(b[:])
	schema := "chatd_test_" + hex.EncodeToString(b[:])
	admin(t, dsn, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
	t.Cleanup(func() { admin(t, dsn, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE") })

	s, err := Open(ctx, dsn, Options{SearchPath: schema})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	p, err := s.Migrations()
	require.NoError(t, err)
	_, err = p.Up(ctx)
	require.NoError(t, err)
	return s
}

// admin runs one statement on a connection of its own.
func admin(t *testing.T, dsn, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	require.NoError(t, err, sql)
}
