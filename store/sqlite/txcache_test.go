package sqlite

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

func TestKindOf(t *testing.T) {
	for q, want := range map[string]writeKind{
		"SELECT count(*) FROM chat_queued_messages":             writesNothing,
		"\n\t\tselect id FROM chats":                            writesNothing,
		"UPDATE chats SET status = ? WHERE id = ?":              writesChat,
		"UPDATE chat_messages SET deleted = 1":                  writesAny,
		"INSERT INTO chat_queued_messages (chat_id) VALUES (?)": writesAny,
		"WITH x AS (SELECT 1) DELETE FROM chats":                writesAny,
		"DELETE FROM chats WHERE id = ?":                        writesAny,
		"SAVEPOINT batch_member":                                writesAny,
	} {
		require.Equal(t, want, kindOf(q), q)
	}
}

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
