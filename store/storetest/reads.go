package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

// The bump writes snapshot_version and nothing else: app/chatstate takes
// the row it locked, with the new version, as the row after the bump.
func testBumpSnapshotChangesOnlyItsVersion(t *testing.T, b *bundle) {
	c := b.setRetry(t, retryPayload(1))
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		_, err := tx.ChatUpdate(b.ctx, b.chat.ID, store.ChatPatch{
			Labels: store.Some(map[string]string{"team": "red"}), Title: store.Some("renamed"),
		})
		return err
	})
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		locked, err := tx.ChatLock(b.ctx, b.chat.ID)
		require.NoError(t, err)
		require.Equal(t, c.RetryState, locked.RetryState)
		v, err := tx.ChatBumpSnapshot(b.ctx, b.chat.ID)
		require.NoError(t, err)
		require.Equal(t, locked.SnapshotVersion+1, v)
		after, err := tx.ChatGet(b.ctx, b.chat.ID)
		require.NoError(t, err)
		locked.SnapshotVersion = v
		require.Equal(t, locked, after)
		return nil
	}))
}

// Inside one transaction every read sees the transaction's own writes,
// whichever table they went to and whatever triggers they set off, and a
// caller changing a row it was handed changes nobody else's (the SQLite
// store keeps reads for the rest of a transaction).
func testReadsSeeTheirTransactionsWrites(t *testing.T, b *bundle) {
	id := b.chat.ID
	b.transition(t, id, func(tx store.Tx) error {
		_, err := tx.ChatUpdate(b.ctx, id, store.ChatPatch{Labels: store.Some(map[string]string{"team": "red"})})
		return err
	})
	both := func(tx store.Tx) (store.Chat, int64) {
		t.Helper()
		c, err := tx.ChatGet(b.ctx, id)
		require.NoError(t, err)
		n, err := tx.QueueCount(b.ctx, id)
		require.NoError(t, err)
		return c, n
	}
	b.transition(t, id, func(tx store.Tx) error {
		c, n := both(tx)
		require.Zero(t, n)
		c.Labels["team"] = "blue" // the caller's copy
		c.MCPServerIDs = append(c.MCPServerIDs, id)
		for range 2 {
			again, _ := both(tx)
			require.Equal(t, "red", again.Labels["team"], "a caller's change to its copy reaches no other read")
			require.Nil(t, again.MCPServerIDs)
			again.Labels["team"] = "green"
		}

		// A message insert moves the chat's versions through a trigger.
		b.insertMessage(t, tx, id, store.RoleUser, "hello")
		c, n = both(tx)
		require.Equal(t, c.SnapshotVersion, c.HistoryVersion, "the trigger's write is seen")
		require.Zero(t, n)

		q, err := tx.QueueInsert(b.ctx, store.QueueInsertParams{ChatID: id, Content: b.text("queued"), Now: b.now})
		require.NoError(t, err)
		c, n = both(tx)
		require.Equal(t, int64(1), n)
		require.Equal(t, c.SnapshotVersion, c.QueueVersion)

		// An update of the chat row is seen; the queue is as it was.
		_, err = tx.ChatUpdate(b.ctx, id, store.ChatPatch{Status: store.Some(store.ChatStatusWaiting)})
		require.NoError(t, err)
		c, n = both(tx)
		require.Equal(t, store.ChatStatusWaiting, c.Status)
		require.Equal(t, int64(1), n)

		gone, err := tx.QueueDelete(b.ctx, id, q.ID)
		require.NoError(t, err)
		require.Equal(t, int64(1), gone)
		_, n = both(tx)
		require.Zero(t, n)

		_, err = tx.ChatIncrementGenerationAttempt(b.ctx, id)
		require.NoError(t, err)
		c, _ = both(tx)
		require.Equal(t, int64(1), c.GenerationAttempt)
		return nil
	})
	// A read transaction sees the same row twice, and the committed writes.
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		first, err := tx.ChatGet(b.ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.ChatStatusWaiting, first.Status)
		second, err := tx.ChatGet(b.ctx, id)
		require.NoError(t, err)
		require.Equal(t, first, second)
		return nil
	}))
}
