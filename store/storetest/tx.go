package storetest

import (
	"errors"
	"sync"
	"testing"

	"github.com/chatd/chatd/store"
	"github.com/stretchr/testify/require"
)

// Two writers that read-modify-write one chat under its lock never lose an
// update: the lock serialises them.
func testConcurrentWriters(t *testing.T, b *bundle) {
	const writers, rounds = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				errs <- b.s.InTx(b.ctx, func(tx store.Tx) error {
					c, err := tx.ChatLock(b.ctx, b.chat.ID)
					if err != nil {
						return err
					}
					if _, err := tx.ChatBumpSnapshot(b.ctx, b.chat.ID); err != nil {
						return err
					}
					_, err = tx.ChatUpdate(b.ctx, b.chat.ID, store.ChatPatch{PinOrder: store.Some(c.PinOrder + 1)})
					return err
				})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	c := b.get(t, b.chat.ID)
	require.Equal(t, int64(writers*rounds), c.PinOrder, "no lost update")
	require.Equal(t, int64(1+writers*rounds), c.SnapshotVersion)
}

func testRollback(t *testing.T, b *bundle) {
	boom := errors.New("boom")
	err := b.tryTransition(b.chat.ID, func(tx store.Tx) error {
		b.insertMessage(t, tx, b.chat.ID, store.RoleUser, "lost")
		_, err := tx.QueueInsert(b.ctx, store.QueueInsertParams{ChatID: b.chat.ID, Content: b.text("q"), Now: b.now})
		require.NoError(t, err)
		return boom
	})
	require.ErrorIs(t, err, boom)
	c := b.get(t, b.chat.ID)
	require.Equal(t, b.chat, c, "a rolled-back transaction changes nothing")
	require.Empty(t, b.messages(t, b.chat.ID))
}

func testReadTxRefusesWrites(t *testing.T, b *bundle) {
	// ReadTx hands out a store.Reader, so a write does not compile; the
	// database refuses one all the same when the Reader is the full Tx.
	err := b.s.ReadTx(b.ctx, func(r store.Reader) error {
		tx, ok := r.(store.Tx)
		if !ok {
			return store.ErrReadOnly
		}
		_, err := tx.ChatBumpSnapshot(b.ctx, b.chat.ID)
		return err
	})
	require.ErrorIs(t, err, store.ErrReadOnly)
	require.Equal(t, int64(1), b.get(t, b.chat.ID).SnapshotVersion)
}
