package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

func TestWriteCounts(t *testing.T) {
	for q, want := range map[string]store.WriteCounts{
		"SELECT count(*) FROM chat_queued_messages":             {},
		"\n\t\tselect id FROM chats":                            {},
		"SELECT\n\t(SELECT 1), (SELECT 2)":                      {},
		"SELECT(1)":                                             {},
		"SELECTED":                                              {All: 1, Queue: 1},
		"UPDATE chats SET status = ? WHERE id = ?":              {All: 1},
		"UPDATE chat_messages SET deleted = 1":                  {All: 1, Queue: 1},
		"INSERT INTO chat_queued_messages (chat_id) VALUES (?)": {All: 1, Queue: 1},
		"WITH x AS (SELECT 1) DELETE FROM chats":                {All: 1, Queue: 1},
		"DELETE FROM chats WHERE id = ?":                        {All: 1, Queue: 1},
		"SAVEPOINT batch_member":                                {All: 1, Queue: 1},
	} {
		var w store.WriteCounts
		w.Note(q)
		require.Equal(t, want, w, q)
	}
}
