package sqlite

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

// queryPlan returns the EXPLAIN QUERY PLAN lines of query.
func queryPlan(t *testing.T, s *Store, query string, a args) []string {
	t.Helper()
	rows, err := s.writer.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+query, a...)
	require.NoError(t, err)
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &notused, &detail))
		lines = append(lines, detail)
	}
	require.NoError(t, rows.Err())
	return lines
}

// requireNoChatScan fails when the plan reads chats (or chat_labels) in
// full: "SCAN c" rather than "SEARCH c USING INDEX" or "SCAN c USING INDEX".
func requireNoChatScan(t *testing.T, plan []string) {
	t.Helper()
	for _, line := range plan {
		if strings.HasPrefix(line, "SCAN ") && !strings.Contains(line, "USING") {
			t.Fatalf("full scan %q in plan:\n%s", line, strings.Join(plan, "\n"))
		}
	}
}

// TestPlansUseIndexes: the acquisition count, which runs inside BEGIN
// IMMEDIATE on every acquisition, and every chat list filter but the
// title search are index ranges, not table scans (migration 00018).
func TestPlansUseIndexes(t *testing.T) {
	t.Parallel()
	s := newTestStore(t)

	q, a := countOwnedQuery(store.AcquirableParams{Self: uuid.New()})
	plan := queryPlan(t, s, q, a)
	requireNoChatScan(t, plan)
	require.Contains(t, strings.Join(plan, "\n"), "chats_owned_idx")

	owner := uuid.NullUUID{UUID: uuid.New(), Valid: true}
	yes := true
	for name, tc := range map[string]struct {
		p     store.ChatListParams
		index string
		// sorted: the plan may sort (a label match set is not in list order).
		sorted bool
	}{
		"owner":             {p: store.ChatListParams{OwnerID: owner}, index: "chats_owner_updated_idx"},
		"owner archived":    {p: store.ChatListParams{OwnerID: owner, Archived: &yes}, index: "chats_owner_archived_updated_idx"},
		"admin archived":    {p: store.ChatListParams{Archived: &yes}, index: "chats_archived_updated_idx"},
		"admin all":         {p: store.ChatListParams{}, index: "chats_updated_idx"},
		"owner label":       {p: store.ChatListParams{OwnerID: owner, Labels: map[string]string{"k": "v"}}, index: "chat_labels", sorted: true},
		"admin label":       {p: store.ChatListParams{Labels: map[string]string{"k": "v"}}, index: "chat_labels_pair_idx", sorted: true},
		"owner archived pg": {p: store.ChatListParams{OwnerID: owner, Archived: &yes, AfterID: uuid.NullUUID{UUID: uuid.New(), Valid: true}}, index: "chats_owner_archived_updated_idx"},
	} {
		t.Run(name, func(t *testing.T) {
			q, a, err := chatListQuery(tc.p)
			require.NoError(t, err)
			plan := queryPlan(t, s, q, a)
			requireNoChatScan(t, plan)
			joined := strings.Join(plan, "\n")
			require.Contains(t, joined, tc.index)
			if !tc.sorted {
				require.NotContains(t, joined, "TEMP B-TREE", "the index gives the list order")
			}
		})
	}
}
