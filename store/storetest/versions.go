package storetest

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

// The tree of message versions (store/versions.go, issue 32).

func testMessageTree(t *testing.T, b *bundle) {
	var u1, a1, u2, a2, u2b store.Message
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		u1 = b.insertMessage(t, tx, b.chat.ID, store.RoleUser, "one")
		a1 = b.insertMessage(t, tx, b.chat.ID, store.RoleAssistant, "reply one")
		u2 = b.insertMessage(t, tx, b.chat.ID, store.RoleUser, "two")
		a2 = b.insertMessage(t, tx, b.chat.ID, store.RoleAssistant, "reply two")
		return nil
	})
	require.Nil(t, u1.ParentID, "the first message has no parent")
	require.Equal(t, []int64{u1.ID}, u1.SiblingIDs)
	require.Equal(t, &u1.ID, a1.ParentID)
	require.Equal(t, &a1.ID, u2.ParentID)
	require.Equal(t, &u2.ID, a2.ParentID)
	require.Equal(t, []int64{a2.ID}, a2.SiblingIDs)

	// An edit of u2: the branch from u2 on leaves (deleted), the new
	// version appends to what is left, so it is u2's sibling.
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		gone, err := tx.MessageSoftDeleteFrom(b.ctx, b.chat.ID, u2.ID)
		require.Equal(t, []int64{u2.ID, a2.ID}, gone)
		u2b = b.insertMessage(t, tx, b.chat.ID, store.RoleUser, "two, again")
		return err
	})
	require.Equal(t, &a1.ID, u2b.ParentID, "a new version shares the parent of the one it replaces")
	require.Equal(t, []int64{u2.ID, u2b.ID}, u2b.SiblingIDs, "oldest first, itself included")

	byID := map[int64]store.Message{}
	for _, m := range b.messages(t, b.chat.ID) {
		byID[m.ID] = m
	}
	require.Equal(t, []int64{u2.ID, u2b.ID}, byID[u2.ID].SiblingIDs, "every read fills the versions")
	require.True(t, byID[u2.ID].Deleted)
	require.False(t, byID[u2.ID].Pruned)
	require.Equal(t, []int64{a2.ID}, byID[a2.ID].SiblingIDs)

	var got store.Message
	var tree []store.MessageNode
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		var err error
		if got, err = tx.MessageGet(b.ctx, b.chat.ID, u2b.ID); err != nil {
			return err
		}
		tree, err = tx.MessageTree(b.ctx, b.chat.ID)
		return err
	}))
	require.Equal(t, u2b.SiblingIDs, got.SiblingIDs)
	require.Equal(t, []store.MessageNode{
		{ID: u1.ID, Role: store.RoleUser},
		{ID: a1.ID, ParentID: &u1.ID, Role: store.RoleAssistant},
		{ID: u2.ID, ParentID: &a1.ID, Role: store.RoleUser, Deleted: true},
		{ID: a2.ID, ParentID: &u2.ID, Role: store.RoleAssistant, Deleted: true},
		{ID: u2b.ID, ParentID: &a1.ID, Role: store.RoleUser},
	}, tree)

	// Bringing the old branch back is a message update like any other: it
	// moves the row's revision and the chat's history_version.
	before := b.get(t, b.chat.ID)
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		m, err := tx.MessageUpdate(b.ctx, b.chat.ID, u2.ID, store.MessagePatch{Deleted: store.Some(false)})
		require.Equal(t, []int64{u2.ID, u2b.ID}, m.SiblingIDs, "an update returns the versions too")
		return err
	})
	after := b.get(t, b.chat.ID)
	require.Equal(t, before.SnapshotVersion+1, after.HistoryVersion)
}

// A root message's versions are the chat's other roots; pruned rows (an
// edit's deletion from before versions) are in no branch, no version list
// and no search, and parent_id and pruned are meaningful columns.
func testMessageTreePruned(t *testing.T, b *bundle) {
	var r1, r2 store.Message
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		r1 = b.insertMessage(t, tx, b.chat.ID, store.RoleUser, "first pineapple")
		_, err := tx.MessageSoftDeleteFrom(b.ctx, b.chat.ID, r1.ID)
		require.NoError(t, err)
		r2 = b.insertMessage(t, tx, b.chat.ID, store.RoleUser, "second quince")
		return nil
	})
	require.Nil(t, r2.ParentID)
	require.Equal(t, []int64{r1.ID, r2.ID}, r2.SiblingIDs)

	hits := func(q string) []store.SearchHit {
		var hs []store.SearchHit
		require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			var err error
			hs, err = tx.ChatSearchHits(b.ctx, []uuid.UUID{b.chat.ID}, q)
			return err
		}))
		return hs
	}
	require.Len(t, hits("pineapple"), 1, "a hidden version is searchable")

	for _, set := range []string{q(b.s, "pruned = 1", "pruned = true"), "parent_id = 42"} {
		before := b.get(t, b.chat.ID)
		b.transition(t, b.chat.ID, func(tx store.Tx) error {
			_, err := b.exec(b.ctx, tx, q(b.s, `UPDATE chat_messages SET `+set+` WHERE id = ?`,
				`UPDATE chat_messages SET `+set+` WHERE id = $1`), r1.ID)
			return err
		})
		require.Equal(t, before.SnapshotVersion+1, b.get(t, b.chat.ID).HistoryVersion, "%s is a history change", set)
	}
	ms := b.messages(t, b.chat.ID)
	require.True(t, ms[0].Pruned)
	require.Empty(t, ms[0].SiblingIDs, "a pruned row is no version")
	require.Equal(t, []int64{r2.ID}, ms[1].SiblingIDs)
	require.Empty(t, hits("pineapple"), "a pruned row is not searchable")
	require.Len(t, hits("quince"), 1)
	var tree []store.MessageNode
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		var err error
		tree, err = tx.MessageTree(b.ctx, b.chat.ID)
		return err
	}))
	require.Equal(t, []store.MessageNode{{ID: r2.ID, Role: store.RoleUser}}, tree)
}
