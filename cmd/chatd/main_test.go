package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMigrateUpStatusDown(t *testing.T) {
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
	require.Contains(t, out, "pending")

	out, err = run1("migrate", "--db", db, "up")
	require.NoError(t, err)
	require.Contains(t, out, "applied 1 00001_init.sql")

	out, err = run1("migrate", "--db", db, "up")
	require.NoError(t, err)
	require.Contains(t, out, "already up to date")

	out, err = run1("migrate", "--db", db, "status")
	require.NoError(t, err)
	require.Contains(t, out, "database version 24")

	out, err = run1("migrate", "--db", db, "down")
	require.NoError(t, err)
	require.Contains(t, out, "rolled back 24 00024_webhooks.sql")

	_, err = run1("migrate", "--db", db, "sideways")
	require.ErrorContains(t, err, `unknown action "sideways"`)
	_, err = run1("frobnicate")
	require.ErrorContains(t, err, `unknown command "frobnicate"`)
}
