package main

import (
	"bytes"
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store/open"
)

// TestMigrateStatusSummary: migrate status says whether this binary
// matches the database: pending before up, matching after, and a database
// newer than the binary, which up (like serve) then refuses.
func TestMigrateStatusSummary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "chatd.db")
	run1 := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(ctx, args, &out, &errOut)
		return out.String() + errOut.String(), err
	}

	out, err := run1("migrate", "--db", db, "status")
	require.NoError(t, err)
	require.Regexp(t, `database version 0; this binary knows up to \d+: \d+ pending; serve \(or migrate up\) applies them`, out)

	_, err = run1("migrate", "--db", db, "up")
	require.NoError(t, err)
	out, err = run1("migrate", "--db", db, "status")
	require.NoError(t, err)
	require.Regexp(t, `database version (\d+); this binary knows up to (\d+): matches`, out)

	raw, err := sql.Open("sqlite", db)
	require.NoError(t, err)
	_, err = raw.ExecContext(ctx, `INSERT INTO goose_db_version (version_id, is_applied) VALUES (9999, true)`)
	require.NoError(t, err)
	require.NoError(t, raw.Close())

	out, err = run1("migrate", "--db", db, "status")
	require.NoError(t, err)
	require.Contains(t, out, "database version 9999; this binary knows up to")
	require.Contains(t, out, "the database is NEWER than this binary")

	_, err = run1("migrate", "--db", db, "up")
	require.ErrorIs(t, err, open.ErrSchemaNewer)
}
