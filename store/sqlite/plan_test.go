package sqlite

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

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
	yes, no := true, false
	for name, tc := range map[string]struct {
		p     store.ChatListParams
		index string
		// sorted: the plan may sort (a label match set is not in list order).
		sorted bool
		// common: the label pair is on more than labelScanAt chats.
		common bool
		// avoid: an index the plan must not walk.
		avoid string
	}{
		"owner":             {p: store.ChatListParams{OwnerID: owner}, index: "chats_owner_updated_idx"},
		"owner archived":    {p: store.ChatListParams{OwnerID: owner, Archived: &yes}, index: "chats_owner_archived_updated_idx"},
		"admin archived":    {p: store.ChatListParams{Archived: &yes}, index: "chats_archived_updated_idx"},
		"admin all":         {p: store.ChatListParams{}, index: "chats_updated_idx"},
		"owner label":       {p: store.ChatListParams{OwnerID: owner, Labels: map[string]string{"k": "v"}}, index: "chat_labels", sorted: true},
		"admin label":       {p: store.ChatListParams{Labels: map[string]string{"k": "v"}}, index: "chat_labels_pair_idx", sorted: true},
		"owner archived pg": {p: store.ChatListParams{OwnerID: owner, Archived: &yes, AfterID: uuid.NullUUID{UUID: uuid.New(), Valid: true}}, index: "chats_owner_archived_updated_idx"},
		// A label most chats carry: read in list order, checked per chat.
		"admin common label": {p: store.ChatListParams{Labels: map[string]string{"k": "v"}}, common: true, index: "chats_updated_idx"},
		"owner common label": {p: store.ChatListParams{OwnerID: owner, Labels: map[string]string{"k": "v"}}, common: true, index: "chats_owner_updated_idx"},
		// A rare label drives the list even with other filters.
		"unarchived label":       {p: store.ChatListParams{Archived: &no, Labels: map[string]string{"k": "v"}}, index: "chat_labels_pair_idx", sorted: true, avoid: "chats_archived_updated_idx"},
		"owner unarchived label": {p: store.ChatListParams{OwnerID: owner, Archived: &no, Labels: map[string]string{"k": "v"}}, index: "chat_labels_pair_idx", sorted: true, avoid: "chats_owner_archived_updated_idx"},
	} {
		t.Run(name, func(t *testing.T) {
			q, a, err := chatListQuery(tc.p, listPlan{common: map[string]bool{"k": tc.common}})
			require.NoError(t, err)
			plan := queryPlan(t, s, q, a)
			requireNoChatScan(t, plan)
			joined := strings.Join(plan, "\n")
			require.Contains(t, joined, tc.index)
			if !tc.sorted {
				require.NotContains(t, joined, "TEMP B-TREE", "the index gives the list order")
			}
			if tc.avoid != "" {
				require.NotContains(t, joined, tc.avoid)
			}
		})
	}
}

// Both plans of a label filter list the same chats in the same order.
func TestLabelPlansAgree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTestStore(t)
	owners := []uuid.UUID{uuid.New(), uuid.New()}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, s.InTx(ctx, func(tx store.Tx) error {
		for i, o := range owners {
			if _, err := tx.UserInsert(ctx, store.UserInsertParams{ID: o, Name: fmt.Sprintf("u%d", i), Now: base}); err != nil {
				return err
			}
		}
		for i := range 40 {
			p := store.ChatInsertParams{
				ID: uuid.New(), OwnerID: owners[i%2], Title: "c", Status: store.ChatStatusWaiting,
				Now: base.Add(time.Duration(i%7) * time.Minute), // ties: the id breaks them
			}
			if i%3 != 0 {
				p.Labels = map[string]string{"team": []string{"red", "blue"}[i%2], "all": "yes"}
			}
			if _, err := tx.ChatInsert(ctx, p); err != nil {
				return err
			}
		}
		return nil
	}))
	list := func(p store.ChatListParams, common bool) []uuid.UUID {
		t.Helper()
		c := map[string]bool{}
		for k := range p.Labels {
			c[k] = common
		}
		q, a, err := chatListQuery(p, listPlan{common: c})
		require.NoError(t, err)
		var ids []uuid.UUID
		require.NoError(t, s.ReadTx(ctx, func(r store.Reader) error {
			rows, err := r.(*tx).tx.QueryContext(ctx, q, a...)
			if err != nil {
				return err
			}
			chats, err := collect(rows, scanChat)
			for _, c := range chats {
				ids = append(ids, c.ID)
			}
			return err
		}))
		return ids
	}
	no := false
	for name, p := range map[string]store.ChatListParams{
		"one label":         {Labels: map[string]string{"all": "yes"}},
		"two labels":        {Labels: map[string]string{"all": "yes", "team": "red"}},
		"no match":          {Labels: map[string]string{"team": "green"}},
		"owner":             {OwnerID: uuid.NullUUID{UUID: owners[1], Valid: true}, Labels: map[string]string{"all": "yes"}},
		"unarchived, paged": {Archived: &no, Labels: map[string]string{"all": "yes"}, Limit: 5},
	} {
		t.Run(name, func(t *testing.T) {
			in, exists := list(p, false), list(p, true)
			require.Equal(t, in, exists)
			if name != "no match" {
				require.NotEmpty(t, in)
			}
		})
	}
}

// TestSearchIndexPendingPlan: the search flush, which runs before every
// commit, reads the pending ids and looks each message up by its key; it
// never scans chat_messages (the planner would without the CROSS JOIN).
func TestSearchIndexPendingPlan(t *testing.T) {
	t.Parallel()
	s := newTestStore(t)
	plan := queryPlan(t, s, SearchIndexPending[0], nil)
	text := strings.Join(plan, "\n")
	require.Contains(t, text, "SEARCH m USING INTEGER PRIMARY KEY", text)
	require.NotContains(t, text, "SCAN m", text)
}

// TestSearchPlanFollowsTheCount: a search term few titles and messages
// hold drives the list from its chats (a key lookup each, then a sort);
// a common one reads the chats in list order and stops at the page's
// end. Without the "+column" form the planner walked every unarchived
// chat probing it for a rare term (20-35 ms at 100,000 chats for none).
func TestSearchPlanFollowsTheCount(t *testing.T) {
	t.Parallel()
	s := newTestStore(t)
	no := false
	p := store.ChatListParams{Query: "zebrafish", Archived: &no}
	for _, rare := range []bool{true, false} {
		q, a, err := chatListQuery(p, listPlan{rareSearch: rare})
		require.NoError(t, err)
		text := strings.Join(queryPlan(t, s, q, a), "\n")
		require.Equal(t, rare, strings.Contains(text, "SEARCH chats USING INDEX sqlite_autoindex_chats_1 (id=?)"), text)
		require.Equal(t, !rare, strings.Contains(text, "chats_archived_updated_idx"), text)
	}
	rare, err := func() (bool, error) {
		var rare bool
		err := s.ReadTx(context.Background(), func(r store.Reader) error {
			var err error
			rare, err = r.(*tx).rareSearch(context.Background(), "zebrafish")
			return err
		})
		return rare, err
	}()
	require.NoError(t, err)
	require.True(t, rare, "nothing holds the term")
}
