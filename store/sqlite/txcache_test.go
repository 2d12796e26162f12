package sqlite

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

// The queue counts a transaction keeps survive updates of chats rows
// (txcache.go): that holds only while no trigger on chats writes a queue.
func TestNoChatsTriggerWritesTheQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTestStore(t)
	n := 0
	require.NoError(t, s.ReadTx(ctx, func(r store.Reader) error {
		rows, err := r.(*tx).tx.QueryContext(ctx, `SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'chats'`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var name, sql string
			if err := rows.Scan(&name, &sql); err != nil {
				return err
			}
			n++
			require.NotContains(t, strings.ToLower(sql), "chat_queued_messages", "trigger %s", name)
		}
		return rows.Err()
	}))
	require.Positive(t, n, "the chats table has triggers to check")
}
