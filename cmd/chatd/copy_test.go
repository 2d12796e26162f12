package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store/dbtest"
)

func TestCopyCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, schema := dbtest.PostgresSchema(t)
	pg := dsn + " search_path=" + schema
	dir := t.TempDir()
	db := filepath.Join(dir, "chatd.db")
	run1 := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(ctx, args, &out, &errOut)
		return out.String() + errOut.String(), err
	}

	_, err := run1("token", "create", "--db", db, "--user", "bob", "--label", "moved")
	require.NoError(t, err)

	_, err = run1("copy", "--from", db)
	require.ErrorContains(t, err, "copy needs --from and --to")

	out, err := run1("copy", "--from", db, "--to", pg)
	require.NoError(t, err, out)
	require.Contains(t, out, "api_tokens")
	require.Contains(t, out, "verified")
	require.Contains(t, out, "CHATD_SECRET_KEY")

	out, err = run1("token", "list", "--db", pg)
	require.NoError(t, err, out)
	require.Contains(t, out, "bob")
	require.Contains(t, out, "moved")

	back := filepath.Join(dir, "back.db")
	out, err = run1("copy", "--from", pg, "--to", back)
	require.NoError(t, err, out)
	out, err = run1("token", "list", "--db", back)
	require.NoError(t, err, out)
	require.Contains(t, out, "moved")

	out, err = run1("copy", "--from", back, "--to", pg)
	require.ErrorContains(t, err, "not empty", out)
}
