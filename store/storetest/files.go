package storetest

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

// testFiles: uploaded files round-trip with their bytes, sum per owner, link
// to one chat (list order is upload order), go with their chat, and only
// unlinked old ones are removed by FileDeleteUnlinked.
func testFiles(t *testing.T, b *bundle) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x01binary\x00")
	ids := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		for i, id := range ids {
			f, err := tx.FileInsert(b.ctx, store.FileInsertParams{
				ID: id, OwnerID: b.user.ID, Name: "a.png", MediaType: "image/png", Content: png,
				Now: b.now.Add(time.Duration(i) * time.Minute),
			})
			require.NoError(t, err)
			require.Equal(t, int64(len(png)), f.Size)
			require.False(t, f.ChatID.Valid)
			require.Nil(t, f.LinkedAt)
		}
		return nil
	}))
	// Each refused write in its own transaction: Postgres aborts the rest.
	err := b.s.InTx(b.ctx, func(tx store.Tx) error {
		_, err := tx.FileInsert(b.ctx, store.FileInsertParams{ID: ids[0], OwnerID: b.user.ID, MediaType: "text/plain", Now: b.now})
		return err
	})
	require.ErrorIs(t, err, store.ErrConflict)
	err = b.s.InTx(b.ctx, func(tx store.Tx) error {
		_, err := tx.FileInsert(b.ctx, store.FileInsertParams{ID: uuid.New(), OwnerID: uuid.New(), MediaType: "text/plain", Now: b.now})
		return err
	})
	require.ErrorIs(t, err, store.ErrForeignKey)

	other := b.newChat(t, nil)
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		require.NoError(t, tx.FileLink(b.ctx, ids[1], b.chat.ID, b.now.Add(time.Hour)))
		require.NoError(t, tx.FileLink(b.ctx, ids[0], b.chat.ID, b.now.Add(2*time.Hour)))
		require.NoError(t, tx.FileLink(b.ctx, ids[0], b.chat.ID, b.now.Add(3*time.Hour)))
		require.NoError(t, tx.FileLink(b.ctx, ids[2], other.ID, b.now.Add(time.Hour)))
		return nil
	}))
	err = b.s.InTx(b.ctx, func(tx store.Tx) error { return tx.FileLink(b.ctx, uuid.New(), b.chat.ID, b.now) })
	require.ErrorIs(t, err, store.ErrNotFound)
	err = b.s.InTx(b.ctx, func(tx store.Tx) error { return tx.FileLink(b.ctx, ids[1], uuid.New(), b.now) })
	require.ErrorIs(t, err, store.ErrForeignKey)

	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		f, err := tx.FileGet(b.ctx, ids[0])
		require.NoError(t, err)
		require.Equal(t, png, f.Content)
		require.Equal(t, "a.png", f.Name)
		require.Equal(t, "image/png", f.MediaType)
		require.Equal(t, b.user.ID, f.OwnerID)
		require.Equal(t, uuid.NullUUID{UUID: b.chat.ID, Valid: true}, f.ChatID)
		require.Equal(t, b.now, f.CreatedAt)
		require.NotNil(t, f.LinkedAt)
		require.Equal(t, b.now.Add(2*time.Hour), *f.LinkedAt, "a repeated link keeps the first time")

		list, err := tx.FileListByChat(b.ctx, b.chat.ID)
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.Equal(t, []uuid.UUID{ids[0], ids[1]}, []uuid.UUID{list[0].ID, list[1].ID}, "earliest uploaded first")
		require.Nil(t, list[0].Content, "lists carry no content")

		n, err := tx.FileBytesByOwner(b.ctx, b.user.ID)
		require.NoError(t, err)
		require.Equal(t, int64(3*len(png)), n)
		n, err = tx.FileBytesByOwner(b.ctx, uuid.New())
		require.NoError(t, err)
		require.Zero(t, n)

		_, err = tx.FileGet(b.ctx, uuid.New())
		require.ErrorIs(t, err, store.ErrNotFound)
		empty, err := tx.FileListByChat(b.ctx, uuid.New())
		require.NoError(t, err)
		require.NotNil(t, empty)
		require.Empty(t, empty)
		return nil
	}))

	// A deleted chat takes its files with it.
	b.transition(t, other.ID, func(tx store.Tx) error { return tx.ChatDelete(b.ctx, other.ID) })

	unlinked := uuid.New()
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		_, err := tx.FileGet(b.ctx, ids[2])
		require.ErrorIs(t, err, store.ErrNotFound, "the deleted chat's file went with it")
		_, err = tx.FileInsert(b.ctx, store.FileInsertParams{ID: unlinked, OwnerID: b.user.ID, MediaType: "text/plain", Now: b.now})
		require.NoError(t, err)
		// Cutoff equal to the upload time keeps it (strictly before).
		n, err := tx.FileDeleteUnlinked(b.ctx, b.now)
		require.NoError(t, err)
		require.Zero(t, n)
		n, err = tx.FileDeleteUnlinked(b.ctx, b.now.Add(24*time.Hour))
		require.NoError(t, err)
		require.Equal(t, int64(1), n, "only the unlinked file goes")
		_, err = tx.FileGet(b.ctx, ids[0])
		require.NoError(t, err, "a linked file stays")

		n, err = tx.FileDelete(b.ctx, ids[0])
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		n, err = tx.FileDelete(b.ctx, ids[0])
		require.NoError(t, err)
		require.Zero(t, n)
		return nil
	}))
}
