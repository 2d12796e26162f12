package storetest

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

// testSystemPrompts: a chat without a prompt reads "", a prompt is set and
// replaced, "" removes it, it is the chat's own (another chat reads
// nothing), a missing chat is a foreign-key error, and it goes with its
// chat.
func testSystemPrompts(t *testing.T, b *bundle) {
	other := b.newChat(t, nil)
	get := func(id uuid.UUID) string {
		var text string
		require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			var err error
			text, err = tx.ChatSystemPromptGet(b.ctx, id)
			return err
		}))
		return text
	}
	set := func(id uuid.UUID, text string) error {
		return b.s.InTx(b.ctx, func(tx store.Tx) error { return tx.ChatSystemPromptSet(b.ctx, id, text, b.now) })
	}
	require.Empty(t, get(b.chat.ID))
	require.NoError(t, set(b.chat.ID, "Be brief."))
	require.NoError(t, set(b.chat.ID, "Be kind. ✓"))
	require.Equal(t, "Be kind. ✓", get(b.chat.ID))
	require.Empty(t, get(other.ID))
	require.NoError(t, set(b.chat.ID, ""))
	require.Empty(t, get(b.chat.ID))
	require.NoError(t, set(b.chat.ID, ""), "removing a missing prompt is no error")
	require.ErrorIs(t, set(uuid.New(), "x"), store.ErrForeignKey)

	require.NoError(t, set(other.ID, "gone with its chat"))
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error { return tx.ChatDelete(b.ctx, other.ID) }))
	require.Empty(t, get(other.ID))
}

// testChatImports: a recorded import reads back per (owner, export), a
// second record of the same pair conflicts, another user's record of the
// same export is their own, and a deleted chat takes its record along.
func testChatImports(t *testing.T, b *bundle) {
	getImport := func(owner uuid.UUID, export string) (uuid.UUID, error) {
		var id uuid.UUID
		err := b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			var err error
			id, err = tx.ChatImportGet(b.ctx, owner, export)
			return err
		})
		return id, err
	}
	record := func(owner uuid.UUID, export string, chat uuid.UUID) error {
		return b.s.InTx(b.ctx, func(tx store.Tx) error { return tx.ChatImportInsert(b.ctx, owner, export, chat, b.now) })
	}
	export := uuid.NewString()
	_, err := getImport(b.user.ID, export)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.NoError(t, record(b.user.ID, export, b.chat.ID))
	got, err := getImport(b.user.ID, export)
	require.NoError(t, err)
	require.Equal(t, b.chat.ID, got)
	other := b.newChat(t, nil)
	require.ErrorIs(t, record(b.user.ID, export, other.ID), store.ErrConflict)

	var bob store.User
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		var err error
		bob, err = tx.UserInsert(b.ctx, store.UserInsertParams{ID: uuid.New(), Name: "bob", Now: b.now})
		return err
	}))
	bobs := b.newChat(t, func(p *store.ChatInsertParams) { p.OwnerID = bob.ID })
	require.NoError(t, record(bob.ID, export, bobs.ID))
	got, err = getImport(bob.ID, export)
	require.NoError(t, err)
	require.Equal(t, bobs.ID, got)

	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error { return tx.ChatDelete(b.ctx, bobs.ID) }))
	_, err = getImport(bob.ID, export)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.NoError(t, record(bob.ID, export, other.ID), "after the delete the export imports anew")
}
