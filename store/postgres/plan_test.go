package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

// queryPlan returns EXPLAIN's lines for query with sequential scans
// disabled: on a small test table the planner would prefer one, so a
// "Seq Scan" left in the plan means no index can answer the query.
func queryPlan(t *testing.T, s *Store, query string, a args) string {
	t.Helper()
	ctx := context.Background()
	var lines []string
	err := pgx.BeginFunc(ctx, s.Pool(), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "EXPLAIN "+query, a...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				return err
			}
			lines = append(lines, line)
		}
		return rows.Err()
	})
	require.NoError(t, err)
	return strings.Join(lines, "\n")
}

// TestPlansUseIndexes: the acquisition counts (with and without leases)
// and every chat list filter but the title search have an index path, no
// sequential scan of chats (migration 00018).
func TestPlansUseIndexes(t *testing.T) {
	t.Parallel()
	s := newTestStore(t)

	for name, p := range map[string]store.AcquirableParams{
		"self":   {Self: uuid.New()},
		"leases": {Self: uuid.New(), Leases: &store.LeaseWindow{Timeout: time.Minute}},
	} {
		q, a := countOwnedQuery(p)
		plan := queryPlan(t, s, q, a)
		require.NotContains(t, plan, "Seq Scan on chats", "%s:\n%s", name, plan)
		require.Contains(t, plan, "chats_owned_idx", "%s:\n%s", name, plan)
	}

	// Enough chats, one in a hundred archived, for the planner to tell the indexes
	// apart by their statistics.
	ctx := context.Background()
	user := uuid.New()
	require.NoError(t, s.InTx(ctx, func(tx store.Tx) error {
		_, err := tx.UserInsert(ctx, store.UserInsertParams{ID: user, Name: "plans", Now: time.Now()})
		return err
	}))
	_, err := s.Pool().Exec(ctx, `INSERT INTO chats (id, owner_id, title, title_source, title_updated_at, status, archived, created_at, updated_at)
		SELECT gen_random_uuid(), $1, 'c', 'user', now(), 'waiting', i % 100 = 0, now(), now() - i * interval '1 second'
		FROM generate_series(1, 5000) i`, user)
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, "ANALYZE chats")
	require.NoError(t, err)

	owner := uuid.NullUUID{UUID: user, Valid: true}
	yes := true
	for name, tc := range map[string]struct {
		p     store.ChatListParams
		index string
	}{
		// Any index will do for the owner's list (its chats are all
		// of them here): only no sequential scan.
		"owner":          {p: store.ChatListParams{OwnerID: owner}},
		"owner archived": {p: store.ChatListParams{OwnerID: owner, Archived: &yes}, index: "chats_owner_archived_updated_idx"},
		"admin archived": {p: store.ChatListParams{Archived: &yes}, index: "chats_archived_updated_idx"},
		"admin all":      {p: store.ChatListParams{}, index: "chats_updated_idx"},
		"admin label":    {p: store.ChatListParams{Labels: map[string]string{"k": "v"}}, index: "chats_labels_idx"},
	} {
		q, a, err := chatListQuery(tc.p)
		require.NoError(t, err)
		plan := queryPlan(t, s, q, a)
		require.NotContains(t, plan, "Seq Scan on chats", "%s:\n%s", name, plan)
		if tc.index != "" {
			require.Contains(t, plan, tc.index, "%s:\n%s", name, plan)
		}
	}
}
