package chatstate_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// upload stores an unlinked file of owner's, uploaded at the fake clock's now.
func (f *fixture) upload(t *testing.T, owner uuid.UUID) uuid.UUID {
	t.Helper()
	id := uuid.New()
	require.NoError(t, f.s.InTx(f.ctx, func(tx store.Tx) error {
		_, err := tx.FileInsert(f.ctx, store.FileInsertParams{
			ID: id, OwnerID: owner, Name: "n.txt", MediaType: "text/plain", Content: []byte("x"), Now: f.clock(),
		})
		return err
	}))
	f.advance(time.Second) // upload order is created_at order
	return id
}

func (f *fixture) withFiles(s string, cap int, ids ...uuid.UUID) chatstate.UserInput {
	in := f.input(s)
	in.FileCap = cap
	for _, id := range ids {
		in.Content = append(in.Content, sdk.ChatMessagePart{Type: sdk.PartFile, FileID: &id})
	}
	return in
}

func (f *fixture) chatFiles(t *testing.T, chatID uuid.UUID) []uuid.UUID {
	t.Helper()
	var ids []uuid.UUID
	require.NoError(t, f.s.ReadTx(f.ctx, func(tx store.Reader) error {
		fs, err := tx.FileListByChat(f.ctx, chatID)
		for _, x := range fs {
			ids = append(ids, x.ID)
		}
		return err
	}))
	return ids
}

func (f *fixture) fileExists(t *testing.T, id uuid.UUID) bool {
	t.Helper()
	var ok bool
	require.NoError(t, f.s.ReadTx(f.ctx, func(tx store.Reader) error {
		_, err := tx.FileGet(f.ctx, id)
		ok = err == nil
		return nil
	}))
	return ok
}

// TestFileLinks: the spec's file-link rules, written in the transition's
// transaction: create, send, queued send and edit link the files they use;
// a file held by another chat, another user's or a missing one is refused
// (and nothing is written); over the cap, the earliest uploads go, never
// the message's own; a message larger than the cap and a cap below 1 fail.
func TestFileLinks(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		a, b, c := f.upload(t, f.user.ID), f.upload(t, f.user.ID), f.upload(t, f.user.ID)

		var chat uuid.UUID
		f.do(t, func(tx *chatstate.Tx) error {
			res, err := tx.Create(chatstate.CreateParams{OwnerID: f.user.ID, Title: "t", Input: f.withFiles("look", 2, a, b)})
			chat = res.Chat.ID
			return err
		})
		require.Equal(t, []uuid.UUID{a, b}, f.chatFiles(t, chat), "create links its files")

		// Another chat cannot take a held file; nothing of the send is kept.
		other := f.create(t, "")
		before := f.snap(t, other)
		err := f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
			_, err := tx.SendMessage(other, f.withFiles("steal", 2, a), chatstate.BusyQueue)
			return err
		})
		require.ErrorIs(t, err, chatstate.ErrValidation)
		require.Equal(t, before.Messages, f.snap(t, other).Messages)

		// Another user's file is refused the same way, and so is a missing one.
		var bob store.User
		require.NoError(t, f.s.InTx(f.ctx, func(tx store.Tx) error {
			var err error
			bob, err = tx.UserInsert(f.ctx, store.UserInsertParams{ID: uuid.New(), Name: "bob", Now: f.clock()})
			return err
		}))
		for _, id := range []uuid.UUID{f.upload(t, bob.ID), uuid.New()} {
			err = f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
				_, err := tx.SendMessage(other, f.withFiles("x", 2, id), chatstate.BusyQueue)
				return err
			})
			require.ErrorIs(t, err, chatstate.ErrValidation)
		}

		// The chat is running, so this send queues: the link is written
		// with the queue row. Over the cap (2) the earliest upload (a) goes;
		// b is re-used by the message, so it stays.
		f.do(t, func(tx *chatstate.Tx) error {
			_, err := tx.SendMessage(chat, f.withFiles("more", 2, c, b), chatstate.BusyQueue)
			return err
		})
		require.Equal(t, []uuid.UUID{b, c}, f.chatFiles(t, chat))
		require.False(t, f.fileExists(t, a), "the evicted file is deleted")

		// A message on its own larger than the cap is refused; so is a cap of 0.
		d, e := f.upload(t, f.user.ID), f.upload(t, f.user.ID)
		for _, cap := range []int{1, 0} {
			err = f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
				_, err := tx.SendMessage(other, f.withFiles("two", cap, d, e), chatstate.BusyQueue)
				return err
			})
			require.Error(t, err, "cap %d", cap)
		}
		require.Empty(t, f.chatFiles(t, other))

		// Editing to reference the evicted file is refused until it is removed.
		first := f.snap(t, chat).active()[0].ID
		err = f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
			_, err := tx.EditMessage(chat, first, f.withFiles("again", 2, a))
			return err
		})
		require.ErrorIs(t, err, chatstate.ErrValidation)
		f.do(t, func(tx *chatstate.Tx) error {
			_, err := tx.EditMessage(chat, first, f.withFiles("again", 2, d))
			return err
		})
		require.Equal(t, []uuid.UUID{c, d}, f.chatFiles(t, chat), "the edit links d and evicts the earliest (b)")

		// A deleted chat takes its files with it.
		f.do(t, func(tx *chatstate.Tx) error { _, err := tx.Delete(chat); return err })
		require.False(t, f.fileExists(t, d))
	})
}
