package sqlite

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

// A write that finds the database full (here: a page cap on the writer
// connection, the same SQLITE_FULL a full disk gives) is ErrStorageFull.
func TestStorageFull(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTestStore(t)
	var pages int64
	require.NoError(t, s.InTx(ctx, func(stx store.Tx) error {
		return stx.(*tx).tx.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages)
	}))
	require.NoError(t, s.InTx(ctx, func(stx store.Tx) error {
		_, err := rawExec(ctx, stx, "PRAGMA max_page_count = "+strconv.FormatInt(pages+2, 10))
		return err
	}))
	err := s.InTx(ctx, func(stx store.Tx) error {
		_, err := stx.UserInsert(ctx, store.UserInsertParams{ID: uuid.New(), Name: strings.Repeat("u", 200_000), Now: time.Now()})
		return err
	})
	require.ErrorIs(t, err, store.ErrStorageFull)
}
