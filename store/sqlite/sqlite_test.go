package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/sqlite"
	"github.com/chatd/chatd/store/storetest"
)

func newTestStore(t *testing.T) *sqlite.Store {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "chatd.db"), sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	p, err := s.Migrations()
	require.NoError(t, err)
	_, err = p.Up(ctx)
	require.NoError(t, err)
	return s
}

func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store { return newTestStore(t) })
}

func TestSecondOpenRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "chatd.db")
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	require.NoError(t, err)

	_, err = sqlite.Open(ctx, path, sqlite.Options{})
	require.ErrorIs(t, err, store.ErrLocked)
	require.Contains(t, err.Error(), "another chatd")

	require.NoError(t, s.Close())
	s2, err := sqlite.Open(ctx, path, sqlite.Options{})
	require.NoError(t, err, "the lock is released on close")
	require.NoError(t, s2.Close())
}

func TestPragmas(t *testing.T) {
	t.Parallel()
	s := newTestStore(t)
	ctx := context.Background()
	// The pragmas are per connection; read them through the writer.
	require.NoError(t, s.InTx(ctx, func(tx store.Tx) error {
		for pragma, want := range map[string]string{
			"journal_mode": "wal", "synchronous": "2", "foreign_keys": "1", "busy_timeout": "10000",
		} {
			got, err := sqlite.Pragma(ctx, tx, pragma)
			require.NoError(t, err)
			require.Equal(t, want, got, pragma)
		}
		return nil
	}))
}

func TestMigrateDownUp(t *testing.T) {
	t.Parallel()
	s := newTestStore(t)
	ctx := context.Background()
	p, err := s.Migrations()
	require.NoError(t, err)
	_, err = p.DownTo(ctx, 0)
	require.NoError(t, err)
	v, err := p.GetDBVersion(ctx)
	require.NoError(t, err)
	require.Zero(t, v)
	_, err = p.Up(ctx)
	require.NoError(t, err)
}
