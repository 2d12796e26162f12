package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store/storetest"
)

func TestVersionsMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "chatd.db")
	s, err := Open(ctx, path, Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	p, err := s.Migrations()
	require.NoError(t, err)
	_, err = p.UpTo(ctx, storetest.VersionsMigrationVersion-1)
	require.NoError(t, err)
	raw := func(query string, args ...any) error {
		_, err := s.writer.ExecContext(ctx, query, args...)
		return err
	}
	storetest.VersionsMigration(t, s, raw, p)
}
