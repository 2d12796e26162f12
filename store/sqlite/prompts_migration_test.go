package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store/storetest"
)

func TestSystemPromptsMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "chatd.db"), Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	p, err := s.Migrations()
	require.NoError(t, err)
	_, err = p.UpTo(ctx, storetest.SystemPromptsMigrationVersion-1)
	require.NoError(t, err)
	raw := func(query string, args ...any) error {
		_, err := s.writer.ExecContext(ctx, query, args...)
		return err
	}
	storetest.SystemPromptsMigration(t, s, raw, p)
}
