package storetest

import (
	"fmt"
	"testing"

	"github.com/chatd/chatd/store"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func testRevisionAssignedByDatabase(t *testing.T, b *bundle) {
	var m1, m2 store.Message
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		m1 = b.insertMessage(t, tx, b.chat.ID, store.RoleUser, "hello")
		m2 = b.insertMessage(t, tx, b.chat.ID, store.RoleAssistant, "hi")
		return nil
	})
	c := b.get(t, b.chat.ID)
	require.Equal(t, int64(2), c.SnapshotVersion)
	require.Equal(t, c.SnapshotVersion, m1.Revision, "revision is the transaction's snapshot_version")
	require.Equal(t, c.SnapshotVersion, m2.Revision, "rows changed in one transaction share a revision")
	require.Greater(t, m2.ID, m1.ID)

	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		_, err := tx.MessageUpdate(b.ctx, b.chat.ID, m1.ID, store.MessagePatch{Deleted: store.Some(true)})
		return err
	})
	ms := b.messages(t, b.chat.ID)
	require.Equal(t, int64(3), ms[0].Revision, "an update moves the revision to the new snapshot")
	require.Equal(t, int64(2), ms[1].Revision, "untouched rows keep theirs")
}

func testClientRevisionRejected(t *testing.T, b *bundle) {
	err := b.tryTransition(b.chat.ID, func(tx store.Tx) error {
		_, err := b.exec(b.ctx, tx, q(b.s,
			`INSERT INTO chat_messages (chat_id, role, content, revision, created_at) VALUES (?, 'user', '[]', 7, '2026-01-01T00:00:00.000000Z')`,
			`INSERT INTO chat_messages (chat_id, role, content, revision, created_at) VALUES ($1, 'user', '[]', 7, now())`),
			b.chat.ID.String())
		return err
	})
	require.ErrorIs(t, err, store.ErrInvariant)
	require.Contains(t, err.Error(), "revision must be assigned by trigger")

	var m store.Message
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		m = b.insertMessage(t, tx, b.chat.ID, store.RoleUser, "hello")
		return nil
	})
	err = b.tryTransition(b.chat.ID, func(tx store.Tx) error {
		_, err := b.exec(b.ctx, tx, q(b.s,
			`UPDATE chat_messages SET revision = 99 WHERE id = ?`,
			`UPDATE chat_messages SET revision = 99 WHERE id = $1`), m.ID)
		return err
	})
	require.ErrorIs(t, err, store.ErrInvariant)
	require.Equal(t, m.Revision, b.messages(t, b.chat.ID)[0].Revision)
}

func testNoOpMessageUpdate(t *testing.T, b *bundle) {
	var m store.Message
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		m = b.insertMessage(t, tx, b.chat.ID, store.RoleUser, "hello")
		return nil
	})
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		_, err := tx.ChatIncrementGenerationAttempt(b.ctx, b.chat.ID)
		return err
	})
	before := b.get(t, b.chat.ID)
	require.Equal(t, int64(1), before.GenerationAttempt)

	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		got, err := tx.MessageUpdate(b.ctx, b.chat.ID, m.ID, store.MessagePatch{
			Content: store.Some(m.Content), Deleted: store.Some(false), Visibility: store.Some(m.Visibility),
		})
		require.Equal(t, m.Revision, got.Revision)
		return err
	})
	after := b.get(t, b.chat.ID)
	require.Equal(t, before.SnapshotVersion+1, after.SnapshotVersion)
	require.Equal(t, before.HistoryVersion, after.HistoryVersion, "no-op update must not advance history_version")
	require.Equal(t, int64(1), after.GenerationAttempt, "no-op update must not reset generation_attempt")
	require.Equal(t, m.Revision, b.messages(t, b.chat.ID)[0].Revision)
}

// Every column other than revision is part of the message: changing any of
// them is a history change. This guards the SQLite trigger's column list.
func testEveryMessageColumnIsMeaningful(t *testing.T, b *bundle) {
	var m store.Message
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		m = b.insertMessage(t, tx, b.chat.ID, store.RoleUser, "hello")
		return nil
	})
	updates := map[string]string{
		"role": `role = 'assistant'`, "content": `content = '[{"type":"text","text":"x"}]'`,
		"visibility": `visibility = 'model'`, "compressed": `compressed = ` + q(b.s, "1", "true"),
		"deleted": `deleted = ` + q(b.s, "1", "true"), "queued_message_id": `queued_message_id = 5`,
		"created_by": `created_by = NULL`, "model_config_id": `model_config_id = '` + uuid.NewString() + `'`,
		"reasoning_effort": `reasoning_effort = 'high'`, "input_tokens": `input_tokens = 1`,
		"output_tokens": `output_tokens = 1`, "total_tokens": `total_tokens = 1`,
		"reasoning_tokens": `reasoning_tokens = 1`, "cache_creation_tokens": `cache_creation_tokens = 1`,
		"cache_read_tokens": `cache_read_tokens = 1`, "context_limit": `context_limit = 1`,
		"created_at": `created_at = ` + q(b.s, `'2030-01-01T00:00:00.000000Z'`, `'2030-01-01T00:00:00Z'`),
		"request_id": `request_id = '` + uuid.NewString() + `'`,
	}
	for col, set := range updates {
		before := b.get(t, b.chat.ID)
		b.transition(t, b.chat.ID, func(tx store.Tx) error {
			n, err := b.exec(b.ctx, tx, q(b.s, `UPDATE chat_messages SET `+set+` WHERE id = ?`,
				`UPDATE chat_messages SET `+set+` WHERE id = $1`), m.ID)
			require.Equal(t, int64(1), n)
			return err
		})
		after := b.get(t, b.chat.ID)
		require.Equal(t, before.SnapshotVersion+1, after.HistoryVersion, "changing %s is a history change", col)
		require.Equal(t, after.SnapshotVersion, b.messages(t, b.chat.ID)[0].Revision, "changing %s moves revision", col)
	}
}

func testMessageList(t *testing.T, b *bundle) {
	var ids []int64
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		for i := range 6 {
			ids = append(ids, b.insertMessage(t, tx, b.chat.ID, store.RoleUser, fmt.Sprint(i)).ID)
		}
		return nil
	})
	var deleted []int64
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		var err error
		deleted, err = tx.MessageSoftDeleteFrom(b.ctx, b.chat.ID, ids[4])
		return err
	})
	require.Equal(t, ids[4:], deleted)

	list := func(p store.MessageListParams) []int64 {
		var out []int64
		require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			ms, err := tx.MessageList(b.ctx, b.chat.ID, p)
			for _, m := range ms {
				out = append(out, m.ID)
			}
			return err
		}))
		return out
	}
	require.Equal(t, ids[:4], list(store.MessageListParams{}))
	require.Equal(t, ids, list(store.MessageListParams{IncludeDeleted: true}))
	require.Equal(t, ids[2:4], list(store.MessageListParams{AfterID: ids[1]}))
	require.Equal(t, []int64{ids[2], ids[1]}, list(store.MessageListParams{BeforeID: ids[3], Descending: true, Limit: 2}))

	ms := b.messages(t, b.chat.ID)
	require.True(t, ms[5].Deleted)
	require.Equal(t, store.VisibilityBoth, ms[0].Visibility)
	require.Nil(t, ms[0].Usage)
	require.Equal(t, b.user.ID, ms[0].CreatedBy.UUID)

	usage := &store.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15, ContextLimit: 1000}
	qid := int64(77)
	var m store.Message
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		var err error
		m, err = tx.MessageInsert(b.ctx, store.MessageInsertParams{
			ChatID: b.chat.ID, Role: store.RoleAssistant, Content: b.text("a"), Visibility: store.VisibilityModel,
			Compressed: true, QueuedMessageID: &qid, ReasoningEffort: "low", Usage: usage, Now: b.now,
		})
		return err
	})
	require.Equal(t, usage, m.Usage)
	require.Equal(t, ids[:4], list(store.MessageListParams{PeopleOnly: true}), "the model-only row is skipped")
	require.Equal(t, append(append([]int64{}, ids[:4]...), m.ID), list(store.MessageListParams{}))
	require.Equal(t, qid, *m.QueuedMessageID)
	require.True(t, m.Compressed)
	require.Equal(t, store.VisibilityModel, m.Visibility)
	require.True(t, b.now.Equal(m.CreatedAt))
}

func testMessagesByRevision(t *testing.T, b *bundle) {
	var m1, m2 store.Message
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		m1 = b.insertMessage(t, tx, b.chat.ID, store.RoleUser, "one")
		return nil
	})
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		m2 = b.insertMessage(t, tx, b.chat.ID, store.RoleAssistant, "two")
		return nil
	})
	byRev := func(after int64) []int64 {
		var ids []int64
		require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			ms, err := tx.MessageList(b.ctx, b.chat.ID, store.MessageListParams{RevisionAfter: after, IncludeDeleted: true})
			for _, m := range ms {
				ids = append(ids, m.ID)
			}
			return err
		}))
		return ids
	}
	require.Equal(t, []int64{m1.ID, m2.ID}, byRev(0))
	require.Equal(t, []int64{m2.ID}, byRev(m1.Revision))
	require.Empty(t, byRev(m2.Revision))
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		_, err := tx.MessageSoftDeleteFrom(b.ctx, b.chat.ID, m1.ID)
		return err
	})
	require.Equal(t, []int64{m1.ID, m2.ID}, byRev(m2.Revision), "soft deletes are revisions too")
}
