package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/storetest"
)

func newTestStore(t *testing.T) *Store {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "chatd.db"), Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	p, err := s.Migrations()
	require.NoError(t, err)
	_, err = p.Up(ctx)
	require.NoError(t, err)
	return s
}

// rawExec runs one statement on the transaction's own connection. It is
// the conformance suite's way around the typed operations, and exists only
// in tests.
func rawExec(ctx context.Context, stx store.Tx, query string, args ...any) (int64, error) {
	return stx.(*tx).exec(ctx, query, args...)
}

// pragma reads a pragma's value on the transaction's connection.
func pragma(ctx context.Context, r store.Reader, name string) (string, error) {
	var v string
	err := r.(*tx).tx.QueryRowContext(ctx, "PRAGMA "+name).Scan(&v)
	return v, translate(err)
}

func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) (store.Store, storetest.Exec) { return newTestStore(t), rawExec })
}

func TestSecondOpenRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "chatd.db")
	s, err := Open(ctx, path, Options{})
	require.NoError(t, err)

	_, err = Open(ctx, path, Options{})
	require.ErrorIs(t, err, store.ErrLocked)
	require.Contains(t, err.Error(), "another chatd")

	require.NoError(t, s.Close())
	s2, err := Open(ctx, path, Options{})
	require.NoError(t, err, "the lock is released on close")
	require.NoError(t, s2.Close())
}

// TestOtherPathsRefused: the lock belongs to the database file, not to the
// name it was opened by, so a symlink or a hard link to a held database is
// refused with the same message as the same path.
func TestOtherPathsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "chatd.db")
	s, err := Open(ctx, path, Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })

	symlink := filepath.Join(dir, "symlink.db")
	require.NoError(t, os.Symlink(path, symlink))
	linkedDir := filepath.Join(t.TempDir(), "dir")
	require.NoError(t, os.Symlink(dir, linkedDir))
	hardlink := filepath.Join(t.TempDir(), "hardlink.db")
	require.NoError(t, os.Link(path, hardlink))

	for name, other := range map[string]string{
		"symlink":             symlink,
		"symlinked directory": filepath.Join(linkedDir, "chatd.db"),
		"hard link":           hardlink,
	} {
		_, err := Open(ctx, other, Options{})
		require.ErrorIs(t, err, store.ErrLocked, name)
		require.Contains(t, err.Error(), "another chatd", name)
	}
}

func TestPragmas(t *testing.T) {
	t.Parallel()
	s := newTestStore(t)
	ctx := context.Background()
	want := map[string]string{
		"journal_mode": "wal", "synchronous": "2", "foreign_keys": "1", "busy_timeout": "10000",
	}
	// The pragmas are per connection: the writer's and a reader's.
	require.NoError(t, s.InTx(ctx, func(w store.Tx) error {
		for name, value := range want {
			got, err := pragma(ctx, w, name)
			require.NoError(t, err)
			require.Equal(t, value, got, name)
		}
		got, err := pragma(ctx, w, "query_only")
		require.NoError(t, err)
		require.Equal(t, "0", got)
		return nil
	}))
	require.NoError(t, s.ReadTx(ctx, func(r store.Reader) error {
		for name, value := range want {
			got, err := pragma(ctx, r, name)
			require.NoError(t, err)
			require.Equal(t, value, got, name)
		}
		got, err := pragma(ctx, r, "query_only")
		require.NoError(t, err)
		require.Equal(t, "1", got, "readers refuse writes")
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
