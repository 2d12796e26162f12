package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
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

// Message text is indexed for search at the commit of the transaction
// that wrote it (migration 00019): once a batch commits, its members'
// messages are searchable and the pending list is empty; a member rolled
// back leaves nothing indexed; a message inserted and edited in one
// transaction is indexed once, with its final text; one deleted since it
// was indexed is gone.
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
	require.Equal(t, map[uuid.UUID]string{chats[0]: "alpha zebrafish", chats[2]: "gamma zebrafish"}, got)
}
