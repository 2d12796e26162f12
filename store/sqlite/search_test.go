package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

// The search condition of a term of 3+ characters is served by the FTS5
// trigram tables of migration 00017, not by a scan of titles or messages,
// with messages pending for the index (read by their key) or without.
func TestSearchUsesFTS(t *testing.T) {
	s := newTestStore(t)
	for _, pending := range []bool{false, true} {
		var a args
		text := strings.Join(queryPlan(t, s, "SELECT id FROM chats WHERE "+searchWhere("zebrafish", &a, pending), a), "\n")
		require.Contains(t, text, "VIRTUAL TABLE INDEX", text)
		require.Contains(t, text, "chat_title_fts", text)
		require.Contains(t, text, "chat_message_fts", text)
		require.NotContains(t, text, "SCAN chat_messages", text)
		require.NotContains(t, text, "SCAN m", text)
		require.Equal(t, pending, strings.Contains(text, "SEARCH m USING INTEGER PRIMARY KEY"), text)
	}
}

// Message text is indexed for search at the commit of an idle writer
// (migration 00019): once a batch commits with nobody waiting, its
// members' messages are indexed and the pending list is empty; a member rolled
// back leaves nothing indexed; a message inserted and edited in one
// transaction is indexed once, with its final text; one that left the
// active branch since it was indexed is still found (search covers every
// branch of a chat's versions, migration 00020).
func TestSearchIndexedAtCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTestStore(t)
	owner := uuid.New()
	chats := make([]uuid.UUID, 4)
	require.NoError(t, s.InTx(ctx, func(tx store.Tx) error {
		if err := insertUser(ctx, tx, owner, "owner"); err != nil {
			return err
		}
		for i := range chats {
			chats[i] = uuid.New()
			if _, err := tx.ChatInsert(ctx, store.ChatInsertParams{ID: chats[i], OwnerID: owner, Title: "t", Status: store.ChatStatusWaiting, Now: time.Now()}); err != nil {
				return err
			}
		}
		return nil
	}))
	text := func(s string) json.RawMessage { return json.RawMessage(`[{"type":"text","text":"` + s + `"}]`) }
	insert := func(tx store.Tx, chat uuid.UUID, s string) (store.Message, error) {
		return tx.MessageInsert(ctx, store.MessageInsertParams{ChatID: chat, Role: store.RoleUser, Content: text(s), Now: time.Now()})
	}
	errFail := errors.New("fail")
	var deleted int64
	require.NoError(t, s.InTx(ctx, func(tx store.Tx) error {
		m, err := insert(tx, chats[3], "delta zebrafish")
		deleted = m.ID
		return err
	}))
	errs, _ := batchBehind(t, s, []func(store.Tx) error{
		func(tx store.Tx) error { _, err := insert(tx, chats[0], "alpha zebrafish"); return err },
		func(tx store.Tx) error {
			if _, err := insert(tx, chats[1], "beta zebrafish"); err != nil {
				return err
			}
			return errFail
		},
		func(tx store.Tx) error {
			m, err := insert(tx, chats[2], "gamma")
			if err != nil {
				return err
			}
			_, err = tx.MessageUpdate(ctx, chats[2], m.ID, store.MessagePatch{Content: store.Some(text("gamma zebrafish"))})
			return err
		},
		func(tx store.Tx) error { _, err := tx.MessageSoftDeleteFrom(ctx, chats[3], deleted); return err },
	}, nil)
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], errFail)
	require.NoError(t, errs[2])
	require.NoError(t, errs[3])

	var pending int
	require.NoError(t, s.reader.QueryRowContext(ctx, `SELECT count(*) FROM chat_message_fts_pending`).Scan(&pending))
	require.Zero(t, pending, "nothing is left pending after a commit")
	var hits []store.SearchHit
	require.NoError(t, s.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		hits, err = tx.ChatSearchHits(ctx, chats, "zebrafish")
		return err
	}))
	got := map[uuid.UUID]string{}
	for _, h := range hits {
		got[h.ChatID] = h.Text
	}
	require.Equal(t, map[uuid.UUID]string{chats[0]: "alpha zebrafish", chats[2]: "gamma zebrafish", chats[3]: "delta zebrafish"}, got)

	// A row that is not JSON (the store never writes one) is left out of
	// the index instead of failing the commit that flushes it.
	require.NoError(t, s.InTx(ctx, func(st store.Tx) error {
		_, err := st.(*tx).tx.ExecContext(ctx, `INSERT INTO chat_messages (chat_id, role, content, created_at) VALUES (?, 'user', 'not json', ?)`,
			chats[0].String(), ts(time.Now()))
		return err
	}))
	require.NoError(t, s.reader.QueryRowContext(ctx, `SELECT count(*) FROM chat_message_fts_pending`).Scan(&pending))
	require.Zero(t, pending)
}

// A busy writer leaves the messages it commits pending for search (it
// indexes them once the writer is idle, or once enough wait), and every
// search finds them meanwhile: a long term through the chat list and the
// hits, a short one through the window of newest messages.
func TestSearchFindsPendingMessages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTestStore(t)
	owner, chat := uuid.New(), uuid.New()
	require.NoError(t, s.InTx(ctx, func(tx store.Tx) error {
		if err := insertUser(ctx, tx, owner, "owner"); err != nil {
			return err
		}
		_, err := tx.ChatInsert(ctx, store.ChatInsertParams{ID: chat, OwnerID: owner, Title: "t", Status: store.ChatStatusWaiting, Now: time.Now()})
		return err
	}))
	pending := func(r store.Reader) int {
		var n int
		require.NoError(t, r.(*tx).tx.QueryRowContext(ctx, `SELECT count(*) FROM chat_message_fts_pending`).Scan(&n))
		return n
	}
	find := func(tx store.Reader) (list []uuid.UUID, short []uuid.UUID, hits []store.SearchHit) {
		for q, into := range map[string]*[]uuid.UUID{"zebrafish": &list, "qx": &short} {
			cs, err := tx.ChatList(ctx, store.ChatListParams{Query: q, Limit: 10})
			require.NoError(t, err)
			for _, c := range cs {
				*into = append(*into, c.ID)
			}
		}
		hits, err := tx.ChatSearchHits(ctx, []uuid.UUID{chat}, "zebrafish")
		require.NoError(t, err)
		return list, short, hits
	}
	// The first transaction commits while the second waits for the
	// writer: its message stays pending, and the second finds it.
	wrote := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		require.NoError(t, s.InTx(ctx, func(tx store.Tx) error {
			if _, err := tx.MessageInsert(ctx, store.MessageInsertParams{ChatID: chat, Role: store.RoleUser,
				Content: json.RawMessage(`[{"type":"text","text":"a zebrafish, qx"}]`), Now: time.Now()}); err != nil {
				return err
			}
			close(wrote)
			require.Eventually(t, func() bool { q, _ := s.batch.state(); return q == 1 }, 10*time.Second, time.Millisecond,
				"the second transaction waits for the writer")
			return nil
		}))
	})
	<-wrote
	require.NoError(t, s.InTx(ctx, func(tx store.Tx) error {
		require.Equal(t, 1, pending(tx), "committed while another writer waited: not indexed yet")
		list, short, hits := find(tx)
		require.Equal(t, []uuid.UUID{chat}, list)
		require.Equal(t, []uuid.UUID{chat}, short)
		require.Len(t, hits, 1)
		require.Equal(t, "a zebrafish, qx", hits[0].Text)
		return nil
	}))
	wg.Wait()
	// The second committed with nobody waiting: the index caught up.
	require.NoError(t, s.ReadTx(ctx, func(tx store.Reader) error {
		require.Zero(t, pending(tx))
		list, short, hits := find(tx)
		require.Equal(t, []uuid.UUID{chat}, list)
		require.Equal(t, []uuid.UUID{chat}, short)
		require.Len(t, hits, 1)
		return nil
	}))
}
