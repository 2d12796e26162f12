package sqlite

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The search condition of a term of 3+ characters is served by the FTS5
// trigram tables of migration 00017, not by a scan of titles or messages.
func TestSearchUsesFTS(t *testing.T) {
	s := newTestStore(t)
	var a args
	rows, err := s.reader.QueryContext(context.Background(), "EXPLAIN QUERY PLAN SELECT id FROM chats WHERE "+searchWhere("zebrafish", &a), a...)
	require.NoError(t, err)
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
		plan = append(plan, detail)
	}
	require.NoError(t, rows.Err())
	text := strings.Join(plan, "\n")
	require.Contains(t, text, "VIRTUAL TABLE INDEX", text)
	require.Contains(t, text, "chat_title_fts", text)
	require.Contains(t, text, "chat_message_fts", text)
	require.NotContains(t, text, "SCAN chat_messages", text)
}
