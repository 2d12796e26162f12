package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store/storetest"
)

func TestSystemPromptsMigration(t *testing.T) {
	t.Parallel()
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
	_, err = p.UpTo(ctx, storetest.SystemPromptsMigrationVersion-1)
	require.NoError(t, err)
	raw := func(query string, args ...any) error {
		_, err := s.Pool().Exec(ctx, query, args...)
		return err
	}
	storetest.SystemPromptsMigration(t, s, raw, p)
}
