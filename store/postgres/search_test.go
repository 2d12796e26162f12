package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The search condition of a term of 3+ characters is served by the
// trigram indexes of migration 00017 (the partial index's predicate must
// match the query's for the planner to use it).
func TestSearchUsesTrigramIndexes(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	conn, err := s.pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	// An empty table would be scanned whatever the indexes.
	_, err = tx.Exec(ctx, "SET LOCAL enable_seqscan = off")
	require.NoError(t, err)
	var a args
	rows, err := tx.Query(ctx, "EXPLAIN SELECT id FROM chats WHERE "+searchWhere("zebrafish", &a), a...)
	require.NoError(t, err)
	var plan []string
	for rows.Next() {
		var line string
		require.NoError(t, rows.Scan(&line))
		plan = append(plan, line)
	}
	require.NoError(t, rows.Err())
	text := strings.Join(plan, "\n")
	require.Contains(t, text, "chats_title_trgm_idx", text)
	require.Contains(t, text, "chat_messages_text_trgm_idx", text)
}
