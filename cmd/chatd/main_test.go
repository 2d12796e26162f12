package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/migrations"
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
	// The newest migration, whatever this binary's is.
	names, err := fs.Glob(migrations.SQLite(), "*.sql")
	require.NoError(t, err)
	newest := names[len(names)-1]
	version, err := strconv.Atoi(strings.SplitN(newest, "_", 2)[0])
	require.NoError(t, err)
	require.Contains(t, out, fmt.Sprintf("database version %d", version))

	out, err = run1("migrate", "--db", db, "down")
	require.NoError(t, err)
	require.Contains(t, out, fmt.Sprintf("rolled back %d %s", version, newest))

	_, err = run1("migrate", "--db", db, "sideways")
	require.ErrorContains(t, err, `unknown action "sideways"`)
	_, err = run1("frobnicate")
	require.ErrorContains(t, err, `unknown command "frobnicate"`)
}
