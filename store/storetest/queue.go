package storetest

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/chatd/chatd/store"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func testQueueVersion(t *testing.T, b *bundle) {
	var q1, q2 store.QueuedMessage
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		var err error
		q1, err = tx.QueueInsert(b.ctx, store.QueueInsertParams{ChatID: b.chat.ID, Content: b.text("one"), Now: b.now})
		require.NoError(t, err)
		q2, err = tx.QueueInsert(b.ctx, store.QueueInsertParams{ChatID: b.chat.ID, Content: b.text("two"), Now: b.now})
		return err
	})
	c := b.get(t, b.chat.ID)
	require.Equal(t, c.SnapshotVersion, c.QueueVersion, "insert")
	require.Equal(t, int64(0), c.HistoryVersion, "queue changes are not history changes")

	// A non-queue transition leaves queue_version alone.
	b.transition(t, b.chat.ID, func(tx store.Tx) error { return nil })
	c2 := b.get(t, b.chat.ID)
	require.Equal(t, c.QueueVersion, c2.QueueVersion)

	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		_, err := b.exec(b.ctx, tx, q(b.s, `UPDATE chat_queued_messages SET content = '[]' WHERE id = ?`,
			`UPDATE chat_queued_messages SET content = '[]' WHERE id = $1`), q1.ID)
		return err
	})
	c = b.get(t, b.chat.ID)
	require.Equal(t, c.SnapshotVersion, c.QueueVersion, "update")

	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		return tx.QueueSetPosition(b.ctx, b.chat.ID, q2.ID, 0)
	})
	c = b.get(t, b.chat.ID)
	require.Equal(t, c.SnapshotVersion, c.QueueVersion, "reorder")
	var list []store.QueuedMessage
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		var err error
		list, err = tx.QueueList(b.ctx, b.chat.ID)
		return err
	}))
	require.Equal(t, []int64{q2.ID, q1.ID}, []int64{list[0].ID, list[1].ID})

	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		n, err := tx.QueueDelete(b.ctx, b.chat.ID, q1.ID)
		require.Equal(t, int64(1), n)
		return err
	})
	c = b.get(t, b.chat.ID)
	require.Equal(t, c.SnapshotVersion, c.QueueVersion, "delete")
}

func testQueueOperations(t *testing.T, b *bundle) {
	var qs []store.QueuedMessage
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		for i := range 3 {
			q, err := tx.QueueInsert(b.ctx, store.QueueInsertParams{
				ChatID: b.chat.ID, Content: b.text(fmt.Sprint(i)), CreatedBy: uuid.NullUUID{UUID: b.user.ID, Valid: true},
				ReasoningEffort: "medium", Now: b.now,
			})
			require.NoError(t, err)
			qs = append(qs, q)
		}
		return nil
	})
	require.Less(t, qs[0].Position, qs[1].Position)
	require.Less(t, qs[1].Position, qs[2].Position)
	require.Equal(t, "medium", qs[0].ReasoningEffort)

	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		n, err := tx.QueueDeleteAll(b.ctx, b.chat.ID)
		require.Equal(t, int64(3), n)
		return err
	})
	require.Zero(t, b.count(t, "chat_queued_messages", b.chat.ID))
	c := b.get(t, b.chat.ID)
	require.Equal(t, c.SnapshotVersion, c.QueueVersion)
}

// A queued prompt keeps the hook context it was admitted with (NULL stays
// nil), and a hook context that is not a JSON array is refused.
func testQueueHookContext(t *testing.T, b *bundle) {
	ctxJSON := json.RawMessage(`[{"text":"policy","visibility":"model"}]`)
	var with, without store.QueuedMessage
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		var err error
		with, err = tx.QueueInsert(b.ctx, store.QueueInsertParams{ChatID: b.chat.ID, Content: b.text("a"), HookContext: ctxJSON, Now: b.now})
		require.NoError(t, err)
		without, err = tx.QueueInsert(b.ctx, store.QueueInsertParams{ChatID: b.chat.ID, Content: b.text("b"), Now: b.now})
		return err
	})
	require.JSONEq(t, string(ctxJSON), string(with.HookContext))
	require.Nil(t, without.HookContext)
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		q, err := tx.QueueGet(b.ctx, b.chat.ID, with.ID)
		require.NoError(t, err)
		require.JSONEq(t, string(ctxJSON), string(q.HookContext))
		list, err := tx.QueueList(b.ctx, b.chat.ID)
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.Nil(t, list[1].HookContext)
		return nil
	}))
	err := b.tryTransition(b.chat.ID, func(tx store.Tx) error {
		_, err := tx.QueueInsert(b.ctx, store.QueueInsertParams{ChatID: b.chat.ID, Content: b.text("c"), HookContext: json.RawMessage(`{"text":"x"}`), Now: b.now})
		return err
	})
	require.Error(t, err, "hook_context must be an array")
}
