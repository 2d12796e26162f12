package postgres

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

// SQLSTATE 53100 disk_full is ErrStorageFull, with the server's message.
func TestTranslateDiskFull(t *testing.T) {
	t.Parallel()
	err := translate(fmt.Errorf("commit: %w", &pgconn.PgError{Code: "53100", Message: "could not extend file"}))
	require.ErrorIs(t, err, store.ErrStorageFull)
	require.NotErrorIs(t, err, store.ErrUnavailable)
	require.Contains(t, err.Error(), "could not extend file")
}
