// Package storetest is the conformance suite every chatd store runs. Each
// behaviour is tested once here and must hold on SQLite and on Postgres:
// a difference between the two is a bug.
package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

// Exec runs one raw SQL statement inside tx, in the dialect of the store
// (placeholders are ? on SQLite and $n on Postgres), and reports the
// affected row count. Each store's own test builds it over the store's
// transaction, so nothing test-only is in the production interface.
type Exec func(ctx context.Context, tx store.Tx, query string, args ...any) (int64, error)

// Run runs the whole suite. newStore must return a migrated, empty store
// that is closed when the test ends, and an Exec for its transactions: the
// suite uses raw statements only to prove that the database itself refuses
// writes that bypass the typed operations.
func Run(t *testing.T, newStore func(t *testing.T) (store.Store, Exec)) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b *bundle)
	}{
		{"RevisionAssignedByDatabase", testRevisionAssignedByDatabase},
		{"ClientRevisionRejected", testClientRevisionRejected},
		{"ChatIDImmutable", testChatIDImmutable},
		{"NoOpMessageUpdateAdvancesNothing", testNoOpMessageUpdate},
		{"EveryMessageColumnIsMeaningful", testEveryMessageColumnIsMeaningful},
		{"HistoryVersionFollowsMessageWrites", testHistoryVersion},
		{"GenerationAttemptResetsOnHistoryChange", testGenerationAttemptReset},
		{"QueueVersion", testQueueVersion},
		{"RetryStateClearedOnNewAttempt", testRetryClearedOnAttempt},
		{"RetryStateVersionFollowsRetryState", testRetryStateVersion},
		{"RetryStateClearedWhenLeavingRunning", testRetryClearedLeavingRunning},
		{"RetryStateVersionRejectsClientWrite", testRetryStateVersionGuard},
		{"UpdatesReturnTheRowTheirTriggersLeft", testUpdatesReturnFinalRow},
		{"ForeignKeyCascades", testForeignKeyCascades},
		{"ForeignKeyRejects", testForeignKeyRejects},
		{"ConcurrentWritersSerialised", testConcurrentWriters},
		{"RollbackLeavesNothing", testRollback},
		{"BumpSnapshotChangesOnlyItsVersion", testBumpSnapshotChangesOnlyItsVersion},
		{"ReadsSeeTheirTransactionsWrites", testReadsSeeTheirTransactionsWrites},
		{"ReadTxRefusesWrites", testReadTxRefusesWrites},
		{"Errors", testErrors},
		{"ChatList", testChatList},
		{"ChatListLabelsFollowUpdates", testChatListLabelsFollowUpdates},
		{"ChatPatchAndFamily", testChatPatchAndFamily},
		{"MessageListPaging", testMessageList},
		{"QueueOperations", testQueueOperations},
		{"QueueHookContext", testQueueHookContext},
		{"UsersAndTokens", testUsersAndTokens},
		{"TokenKindsExpiryAndUse", testTokenKindsExpiryAndUse},
		{"UserListAndDisable", testUserListAndDisable},
		{"LastAdminSerialised", testLastAdminSerialised},
		{"LoginCodes", testLoginCodes},
		{"HeartbeatLeases", testHeartbeatLeases},
		{"AcquirableAndOwned", testAcquirableAndOwned},
		{"RequiresActionHoldsNoSlot", testRequiresActionHoldsNoSlot},
		{"AcquirableFairOrder", testAcquirableFairOrder},
		{"ChatListByWorker", testChatListByWorker},
		{"MessagesByRevision", testMessagesByRevision},
		{"Replicas", testReplicas},
		{"ReplicaTouchAndDeleteStale", testReplicaTouchAndDeleteStale},
		{"RequestIDRoundTrips", testRequestIDRoundTrips},
		{"Invocations", testInvocations},
		{"Journal", testJournal},
		{"EmptyListsAreNotNil", testEmptyListsAreNotNil},
		{"ListLimits", testListLimits},
		{"ErrorsNameTheOperation", testErrorsNameTheOperation},
		{"ChatInsertDefaults", testChatInsertDefaults},
		{"TimesComeBackUTCInMicroseconds", testTimesComeBackUTC},
		{"EmptyPatchesReadTheRow", testEmptyPatchesReadTheRow},
		{"ChatListQuery", testChatListQuery},
		{"ChatSearch", testChatSearch},
		{"MalformedJSONRefused", testMalformedJSONRefused},
		{"ChatMCPServerIDs", testChatMCPServerIDs},
		{"ChatToolApproval", testChatToolApproval},
		{"ChatListArchivable", testChatListArchivable},
		// projects and project memory
		{"Projects", testProjects},
		{"Schedules", testSchedules}, {"Webhooks", testWebhooks},
		{"Memories", testMemories},
		{"MemoryLockSerialises", testMemoryLockSerialises},
		{"MCPServers", testMCPServers},
		{"ProvidersAndModelConfigs", testProvidersAndModelConfigs},
		{"Files", testFiles},
		{"Elicitations", testElicitations}, {"ElicitationReleasesSlot", testElicitationReleasesSlot}, {"MCPOAuthTokens", testMCPOAuthTokens},
		{"OwnerCounts", testOwnerCounts},
		{"MessageTree", testMessageTree}, {"MessageTreePruned", testMessageTreePruned},
		{"UsageLedger", testUsageLedger}, {"UserBudgets", testUserBudgets},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, exec := newStore(t)
			tc.fn(t, setup(t, s, exec))
		})
	}
}

// bundle is what each test starts with: a store, a user and one chat.
type bundle struct {
	ctx  context.Context
	s    store.Store
	exec Exec
	user store.User
	chat store.Chat
	now  time.Time
}

func setup(t *testing.T, s store.Store, exec Exec) *bundle {
	t.Helper()
	b := &bundle{ctx: context.Background(), s: s, exec: exec, now: time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)}
	require.NoError(t, s.InTx(b.ctx, func(tx store.Tx) error {
		var err error
		b.user, err = tx.UserInsert(b.ctx, store.UserInsertParams{ID: uuid.New(), Name: "alice", Now: b.now})
		return err
	}))
	b.chat = b.newChat(t, nil)
	return b
}

// newChat creates a running chat, like Create does (without history).
func (b *bundle) newChat(t *testing.T, mod func(*store.ChatInsertParams)) store.Chat {
	t.Helper()
	p := store.ChatInsertParams{
		ID: uuid.New(), OwnerID: b.user.ID, Title: "a chat", TitleSource: store.TitleSourceFallback,
		Status: store.ChatStatusRunning, Now: b.now,
	}
	if mod != nil {
		mod(&p)
	}
	var c store.Chat
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		var err error
		c, err = tx.ChatInsert(b.ctx, p)
		return err
	}))
	return c
}

// transition runs fn the way app/chatstate runs a transition bundle: lock
// the chat, bump snapshot_version once, then mutate.
func (b *bundle) transition(t *testing.T, chatID uuid.UUID, fn func(tx store.Tx) error) {
	t.Helper()
	require.NoError(t, b.tryTransition(chatID, fn))
}

func (b *bundle) tryTransition(chatID uuid.UUID, fn func(tx store.Tx) error) error {
	return b.s.InTx(b.ctx, func(tx store.Tx) error {
		if _, err := tx.ChatLock(b.ctx, chatID); err != nil {
			return err
		}
		if _, err := tx.ChatBumpSnapshot(b.ctx, chatID); err != nil {
			return err
		}
		return fn(tx)
	})
}

func (b *bundle) get(t *testing.T, id uuid.UUID) store.Chat {
	t.Helper()
	var c store.Chat
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		var err error
		c, err = tx.ChatGet(b.ctx, id)
		return err
	}))
	return c
}

func (b *bundle) text(s string) json.RawMessage {
	raw, _ := json.Marshal([]map[string]string{{"type": "text", "text": s}})
	return raw
}

func (b *bundle) insertMessage(t *testing.T, tx store.Tx, chatID uuid.UUID, role, text string) store.Message {
	t.Helper()
	m, err := tx.MessageInsert(b.ctx, store.MessageInsertParams{
		ChatID: chatID, Role: role, Content: b.text(text), CreatedBy: uuid.NullUUID{UUID: b.user.ID, Valid: true}, Now: b.now,
	})
	require.NoError(t, err)
	return m
}

func (b *bundle) messages(t *testing.T, chatID uuid.UUID) []store.Message {
	t.Helper()
	var ms []store.Message
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		var err error
		ms, err = tx.MessageList(b.ctx, chatID, store.MessageListParams{IncludeDeleted: true})
		return err
	}))
	return ms
}

// q picks the statement text of the store's dialect.
func q(s store.Store, sqlite, postgres string) string {
	if s.Dialect() == "postgres" {
		return postgres
	}
	return sqlite
}

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

func testChatIDImmutable(t *testing.T, b *bundle) {
	other := b.newChat(t, nil)
	var m store.Message
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		m = b.insertMessage(t, tx, b.chat.ID, store.RoleUser, "hello")
		return nil
	})
	err := b.tryTransition(b.chat.ID, func(tx store.Tx) error {
		_, err := b.exec(b.ctx, tx, q(b.s,
			`UPDATE chat_messages SET chat_id = ? WHERE id = ?`,
			`UPDATE chat_messages SET chat_id = $1 WHERE id = $2`), other.ID.String(), m.ID)
		return err
	})
	require.ErrorIs(t, err, store.ErrInvariant)
	require.Contains(t, err.Error(), "chat_id is immutable")
	require.Len(t, b.messages(t, b.chat.ID), 1)
	require.Empty(t, b.messages(t, other.ID))
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

func testHistoryVersion(t *testing.T, b *bundle) {
	c := b.get(t, b.chat.ID)
	require.Equal(t, int64(1), c.SnapshotVersion)
	require.Equal(t, int64(0), c.HistoryVersion)

	// A transition that touches no message leaves history_version alone.
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		_, err := tx.ChatUpdate(b.ctx, b.chat.ID, store.ChatPatch{PinOrder: store.Some(int64(3))})
		return err
	})
	c = b.get(t, b.chat.ID)
	require.Equal(t, int64(2), c.SnapshotVersion)
	require.Equal(t, int64(0), c.HistoryVersion)

	for i := range 3 {
		b.transition(t, b.chat.ID, func(tx store.Tx) error {
			b.insertMessage(t, tx, b.chat.ID, store.RoleUser, fmt.Sprint("m", i))
			return nil
		})
		c = b.get(t, b.chat.ID)
		require.Equal(t, c.SnapshotVersion, c.HistoryVersion)
	}
	require.Equal(t, int64(5), c.HistoryVersion)
}

func testGenerationAttemptReset(t *testing.T, b *bundle) {
	for range 3 {
		b.transition(t, b.chat.ID, func(tx store.Tx) error {
			_, err := tx.ChatIncrementGenerationAttempt(b.ctx, b.chat.ID)
			return err
		})
	}
	c := b.get(t, b.chat.ID)
	require.Equal(t, int64(3), c.GenerationAttempt)
	require.Equal(t, int64(0), c.HistoryVersion, "attempts do not change history")

	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		b.insertMessage(t, tx, b.chat.ID, store.RoleAssistant, "step")
		return nil
	})
	c = b.get(t, b.chat.ID)
	require.Equal(t, int64(0), c.GenerationAttempt)
	require.Equal(t, c.SnapshotVersion, c.HistoryVersion)

	// ChatTouchHistory is a history change without a message.
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		_, err := tx.ChatIncrementGenerationAttempt(b.ctx, b.chat.ID)
		return err
	})
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		got, err := tx.ChatTouchHistory(b.ctx, b.chat.ID)
		require.Equal(t, got.SnapshotVersion, got.HistoryVersion)
		require.Zero(t, got.GenerationAttempt)
		return err
	})
	require.Len(t, b.messages(t, b.chat.ID), 1)
}

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

func retryPayload(attempt int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"attempt":%d,"delay_ms":1000}`, attempt))
}

func (b *bundle) setRetry(t *testing.T, raw json.RawMessage) store.Chat {
	var c store.Chat
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		var err error
		c, err = tx.ChatUpdate(b.ctx, b.chat.ID, store.ChatPatch{RetryState: store.Some(raw)})
		return err
	})
	return c
}

func testRetryClearedOnAttempt(t *testing.T, b *bundle) {
	c := b.setRetry(t, retryPayload(1))
	require.JSONEq(t, string(retryPayload(1)), string(c.RetryState))

	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		_, err := tx.ChatIncrementGenerationAttempt(b.ctx, b.chat.ID)
		return err
	})
	c = b.get(t, b.chat.ID)
	require.Nil(t, c.RetryState, "a new attempt clears retry_state")
	require.Equal(t, c.SnapshotVersion, c.RetryStateVersion, "clearing is a retry-state change")

	// A history change resets generation_attempt and with it the retry state.
	b.setRetry(t, retryPayload(2))
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		b.insertMessage(t, tx, b.chat.ID, store.RoleAssistant, "step")
		return nil
	})
	c = b.get(t, b.chat.ID)
	require.Nil(t, c.RetryState)
	require.Equal(t, c.SnapshotVersion, c.RetryStateVersion)
}

func testRetryStateVersion(t *testing.T, b *bundle) {
	c := b.get(t, b.chat.ID)
	require.Equal(t, int64(0), c.RetryStateVersion)
	require.Nil(t, c.RetryState)

	c = b.setRetry(t, retryPayload(1))
	require.Equal(t, c.SnapshotVersion, c.RetryStateVersion)
	v := c.RetryStateVersion

	// Writing the same value is no change.
	c = b.setRetry(t, retryPayload(1))
	require.Equal(t, v, c.RetryStateVersion)

	// A transition that does not touch retry_state leaves the version alone.
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		_, err := tx.ChatUpdate(b.ctx, b.chat.ID, store.ChatPatch{PinOrder: store.Some(int64(1))})
		return err
	})
	require.Equal(t, v, b.get(t, b.chat.ID).RetryStateVersion)

	c = b.setRetry(t, retryPayload(2))
	require.Equal(t, c.SnapshotVersion, c.RetryStateVersion)
	c = b.setRetry(t, nil)
	require.Nil(t, c.RetryState)
	require.Equal(t, c.SnapshotVersion, c.RetryStateVersion)
}

// testUpdatesReturnFinalRow holds each chat update to returning the row as
// the statement's triggers left it (the retry trigger clears retry_state
// and stamps its version after the row changed), and the bump to leaving a
// row read before it current: every returned row, and every read in the
// same transaction, equals the committed row read afresh.
func testUpdatesReturnFinalRow(t *testing.T, b *bundle) {
	id := b.chat.ID
	b.transition(t, id, func(tx store.Tx) error {
		_, err := tx.ChatUpdate(b.ctx, id, store.ChatPatch{Status: store.Some(store.ChatStatusRunning)})
		return err
	})
	steps := []struct {
		name string
		fn   func(tx store.Tx) (store.Chat, error)
	}{
		{"set retry_state", func(tx store.Tx) (store.Chat, error) {
			return tx.ChatUpdate(b.ctx, id, store.ChatPatch{RetryState: store.Some(retryPayload(1))})
		}},
		{"an update of another column keeps it", func(tx store.Tx) (store.Chat, error) {
			return tx.ChatUpdate(b.ctx, id, store.ChatPatch{PinOrder: store.Some(int64(2))})
		}},
		{"a new attempt clears it", func(tx store.Tx) (store.Chat, error) {
			return tx.ChatIncrementGenerationAttempt(b.ctx, id)
		}},
		{"set it again", func(tx store.Tx) (store.Chat, error) {
			return tx.ChatUpdate(b.ctx, id, store.ChatPatch{RetryState: store.Some(retryPayload(2))})
		}},
		{"leaving running clears it", func(tx store.Tx) (store.Chat, error) {
			return tx.ChatUpdate(b.ctx, id, store.ChatPatch{Status: store.Some(store.ChatStatusWaiting)})
		}},
		{"an update with nothing to clear", func(tx store.Tx) (store.Chat, error) {
			return tx.ChatUpdate(b.ctx, id, store.ChatPatch{WorkerID: store.Some(uuid.NullUUID{UUID: uuid.New(), Valid: true})})
		}},
		{"a history touch", func(tx store.Tx) (store.Chat, error) {
			return tx.ChatTouchHistory(b.ctx, id)
		}},
	}
	for _, st := range steps {
		var returned, reread store.Chat
		require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
			locked, err := tx.ChatLock(b.ctx, id)
			if err != nil {
				return err
			}
			v, err := tx.ChatBumpSnapshot(b.ctx, id)
			if err != nil {
				return err
			}
			bumped, err := tx.ChatGet(b.ctx, id)
			if err != nil {
				return err
			}
			locked.SnapshotVersion = v
			require.Equal(t, locked, bumped, "%s: the row read after the bump", st.name)
			if returned, err = st.fn(tx); err != nil {
				return err
			}
			reread, err = tx.ChatGet(b.ctx, id)
			return err
		}), st.name)
		fresh := b.get(t, id)
		require.Equal(t, fresh, returned, "%s: the row the update returned", st.name)
		require.Equal(t, fresh, reread, "%s: the row read after it in its transaction", st.name)
	}
	c := b.get(t, id)
	require.Nil(t, c.RetryState)
	require.Equal(t, c.SnapshotVersion-2, c.RetryStateVersion, "the last clear stamped the version")
}

func testRetryClearedLeavingRunning(t *testing.T, b *bundle) {
	for _, status := range []store.ChatStatus{
		store.ChatStatusWaiting, store.ChatStatusInterrupting, store.ChatStatusRequiresAction, store.ChatStatusError,
	} {
		b.transition(t, b.chat.ID, func(tx store.Tx) error {
			_, err := tx.ChatUpdate(b.ctx, b.chat.ID, store.ChatPatch{Status: store.Some(store.ChatStatusRunning)})
			return err
		})
		c := b.setRetry(t, retryPayload(3))
		require.NotNil(t, c.RetryState)
		b.transition(t, b.chat.ID, func(tx store.Tx) error {
			_, err := tx.ChatUpdate(b.ctx, b.chat.ID, store.ChatPatch{Status: store.Some(status)})
			return err
		})
		c = b.get(t, b.chat.ID)
		require.Nil(t, c.RetryState, "leaving running for %s clears retry_state", status)
		require.Equal(t, c.SnapshotVersion, c.RetryStateVersion, status)
	}
}

func testRetryStateVersionGuard(t *testing.T, b *bundle) {
	err := b.tryTransition(b.chat.ID, func(tx store.Tx) error {
		_, err := b.exec(b.ctx, tx, q(b.s, `UPDATE chats SET retry_state_version = 42 WHERE id = ?`,
			`UPDATE chats SET retry_state_version = 42 WHERE id = $1`), b.chat.ID.String())
		return err
	})
	require.ErrorIs(t, err, store.ErrInvariant)
	require.Equal(t, int64(0), b.get(t, b.chat.ID).RetryStateVersion)
}

func (b *bundle) count(t *testing.T, table string, chatID uuid.UUID) int64 {
	t.Helper()
	var n int64
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		switch table {
		case "chat_messages":
			ms, err := tx.MessageList(b.ctx, chatID, store.MessageListParams{IncludeDeleted: true})
			n = int64(len(ms))
			return err
		case "chat_queued_messages":
			var err error
			n, err = tx.QueueCount(b.ctx, chatID)
			return err
		}
		return fmt.Errorf("unknown table %s", table)
	}))
	return n
}

func testForeignKeyCascades(t *testing.T, b *bundle) {
	child := b.newChat(t, func(p *store.ChatInsertParams) {
		p.ParentChatID = uuid.NullUUID{UUID: b.chat.ID, Valid: true}
		p.RootChatID = uuid.NullUUID{UUID: b.chat.ID, Valid: true}
	})
	for _, id := range []uuid.UUID{b.chat.ID, child.ID} {
		b.transition(t, id, func(tx store.Tx) error {
			b.insertMessage(t, tx, id, store.RoleUser, "hello")
			_, err := tx.QueueInsert(b.ctx, store.QueueInsertParams{ChatID: id, Content: b.text("q"), Now: b.now})
			require.NoError(t, err)
			runner := uuid.New()
			require.NoError(t, tx.HeartbeatInsert(b.ctx, id, runner, b.now))
			return tx.HeartbeatInsert(b.ctx, id, runner, b.now.Add(time.Second)) // an upsert
		})
	}
	heartbeats := func() int64 {
		var n int64
		require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
			var err error
			// A no-op update counts matching rows portably.
			n, err = b.exec(b.ctx, tx, q(b.s, `UPDATE chat_heartbeats SET runner_id = runner_id WHERE chat_id IN (?, ?)`,
				`UPDATE chat_heartbeats SET runner_id = runner_id WHERE chat_id IN ($1, $2)`), b.chat.ID.String(), child.ID.String())
			return err
		}))
		return n
	}
	require.Equal(t, int64(2), heartbeats())

	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error { return tx.ChatDelete(b.ctx, b.chat.ID) }))
	for _, id := range []uuid.UUID{b.chat.ID, child.ID} {
		require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			_, err := tx.ChatGet(b.ctx, id)
			require.ErrorIs(t, err, store.ErrNotFound, "deleting a root deletes its family")
			return nil
		}))
		require.Zero(t, b.count(t, "chat_messages", id))
		require.Zero(t, b.count(t, "chat_queued_messages", id))
	}
	require.Zero(t, heartbeats())

	// Deleting a user deletes their chats and tokens.
	other := b.newChat(t, nil)
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		_, err := tx.TokenInsert(b.ctx, store.TokenInsertParams{ID: uuid.New(), UserID: b.user.ID, Hash: []byte("h"), Now: b.now})
		require.NoError(t, err)
		_, err = b.exec(b.ctx, tx, q(b.s, `DELETE FROM users WHERE id = ?`, `DELETE FROM users WHERE id = $1`), b.user.ID.String())
		return err
	}))
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		_, err := tx.ChatGet(b.ctx, other.ID)
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = tx.TokenGetByHash(b.ctx, []byte("h"))
		require.ErrorIs(t, err, store.ErrNotFound)
		return nil
	}))
}

func testForeignKeyRejects(t *testing.T, b *bundle) {
	require.ErrorIs(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		return tx.HeartbeatInsert(b.ctx, uuid.New(), uuid.New(), b.now)
	}), store.ErrForeignKey, "a lease needs its chat")
	require.ErrorIs(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		_, err := tx.TokenInsert(b.ctx, store.TokenInsertParams{ID: uuid.New(), UserID: uuid.New(), Hash: []byte("x"), Now: b.now})
		return err
	}), store.ErrForeignKey, "a token needs its user")
	err := b.s.InTx(b.ctx, func(tx store.Tx) error {
		_, err := tx.QueueInsert(b.ctx, store.QueueInsertParams{ChatID: uuid.New(), Content: b.text("q"), Now: b.now})
		return err
	})
	require.ErrorIs(t, err, store.ErrForeignKey)

	err = b.s.InTx(b.ctx, func(tx store.Tx) error {
		_, err := tx.ChatInsert(b.ctx, store.ChatInsertParams{ID: uuid.New(), OwnerID: uuid.New(), Status: store.ChatStatusWaiting, Now: b.now})
		return err
	})
	require.ErrorIs(t, err, store.ErrForeignKey)

	// A message for a missing chat is refused (by the trigger or the key).
	err = b.s.InTx(b.ctx, func(tx store.Tx) error {
		_, err := tx.MessageInsert(b.ctx, store.MessageInsertParams{ChatID: uuid.New(), Role: store.RoleUser, Content: b.text("x"), Now: b.now})
		return err
	})
	require.True(t, errors.Is(err, store.ErrForeignKey) || errors.Is(err, store.ErrInvariant), "got %v", err)
}

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

func testErrors(t *testing.T, b *bundle) {
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		_, err := tx.ChatGet(b.ctx, uuid.New())
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = tx.MessageGet(b.ctx, b.chat.ID, 12345)
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = tx.QueueGet(b.ctx, b.chat.ID, 12345)
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = tx.UserGetByName(b.ctx, "nobody")
		require.ErrorIs(t, err, store.ErrNotFound)
		return nil
	}))
	err := b.s.InTx(b.ctx, func(tx store.Tx) error {
		_, err := tx.UserInsert(b.ctx, store.UserInsertParams{ID: uuid.New(), Name: "alice", Now: b.now})
		return err
	})
	require.ErrorIs(t, err, store.ErrConflict)

	err = b.s.InTx(b.ctx, func(tx store.Tx) error {
		_, err := tx.ChatUpdate(b.ctx, b.chat.ID, store.ChatPatch{Status: store.Some(store.ChatStatus("bogus"))})
		return err
	})
	require.ErrorIs(t, err, store.ErrInvariant, "the status check constraint holds")

	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		_, err := tx.ChatBumpSnapshot(b.ctx, uuid.New())
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = tx.ChatLock(b.ctx, uuid.New())
		require.ErrorIs(t, err, store.ErrNotFound)
		require.ErrorIs(t, tx.ChatDelete(b.ctx, uuid.New()), store.ErrNotFound)
		_, err = tx.MessageUpdate(b.ctx, b.chat.ID, 999, store.MessagePatch{Deleted: store.Some(true)})
		require.ErrorIs(t, err, store.ErrNotFound)
		require.ErrorIs(t, tx.QueueSetPosition(b.ctx, b.chat.ID, 999, 1), store.ErrNotFound)
		n, err := tx.QueueDelete(b.ctx, b.chat.ID, 999)
		require.Zero(t, n)
		return err
	}))
}

func testChatList(t *testing.T, b *bundle) {
	var bob store.User
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		var err error
		bob, err = tx.UserInsert(b.ctx, store.UserInsertParams{ID: uuid.New(), Name: "bob", Now: b.now})
		return err
	}))
	var ids []uuid.UUID
	for i := range 5 {
		c := b.newChat(t, func(p *store.ChatInsertParams) {
			p.Title = fmt.Sprintf("Report 100%% #%d", i)
			p.Labels = map[string]string{"team": []string{"red", "blue"}[i%2]}
			p.Now = b.now.Add(time.Duration(i+1) * time.Minute)
		})
		ids = append(ids, c.ID)
	}
	b.newChat(t, func(p *store.ChatInsertParams) { p.OwnerID = bob.ID; p.Title = "bob's" })

	list := func(p store.ChatListParams) []uuid.UUID {
		var out []uuid.UUID
		require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			cs, err := tx.ChatList(b.ctx, p)
			for _, c := range cs {
				out = append(out, c.ID)
			}
			return err
		}))
		return out
	}
	owner := uuid.NullUUID{UUID: b.user.ID, Valid: true}
	all := list(store.ChatListParams{OwnerID: owner})
	require.Equal(t, []uuid.UUID{ids[4], ids[3], ids[2], ids[1], ids[0], b.chat.ID}, all, "newest first")
	require.Len(t, list(store.ChatListParams{}), 7, "no owner filter lists everyone's")

	page1 := list(store.ChatListParams{OwnerID: owner, Limit: 2})
	page2 := list(store.ChatListParams{OwnerID: owner, Limit: 2, AfterID: uuid.NullUUID{UUID: page1[1], Valid: true}})
	require.Equal(t, all[:2], page1)
	require.Equal(t, all[2:4], page2)

	require.Equal(t, []uuid.UUID{ids[4], ids[2], ids[0]}, list(store.ChatListParams{OwnerID: owner, Labels: map[string]string{"team": "red"}}))
	require.Equal(t, []uuid.UUID{ids[3]}, list(store.ChatListParams{OwnerID: owner, Query: "report 100% #3"}), "case-insensitive, % is literal")
	require.Empty(t, list(store.ChatListParams{OwnerID: owner, Query: "_"}), "_ is literal")

	b.transition(t, ids[0], func(tx store.Tx) error {
		_, err := tx.ChatUpdate(b.ctx, ids[0], store.ChatPatch{Archived: store.Some(true)})
		return err
	})
	yes, no := true, false
	require.Equal(t, []uuid.UUID{ids[0]}, list(store.ChatListParams{OwnerID: owner, Archived: &yes}))
	require.Len(t, list(store.ChatListParams{OwnerID: owner, Archived: &no}), 5)
}

// testChatListLabelsFollowUpdates: the label filter sees a chat's labels
// as they are now (SQLite answers it from an index table kept by
// triggers), for keys with JSON-path characters too, and forgets a
// deleted chat.
func testChatListLabelsFollowUpdates(t *testing.T, b *bundle) {
	odd := `a.b "c"[0]`
	c := b.newChat(t, func(p *store.ChatInsertParams) { p.Labels = map[string]string{"team": "red", odd: "x"} })
	list := func(labels map[string]string) []uuid.UUID {
		var out []uuid.UUID
		require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			cs, err := tx.ChatList(b.ctx, store.ChatListParams{Labels: labels})
			for _, c := range cs {
				out = append(out, c.ID)
			}
			return err
		}))
		return out
	}
	require.Equal(t, []uuid.UUID{c.ID}, list(map[string]string{"team": "red"}))
	require.Equal(t, []uuid.UUID{c.ID}, list(map[string]string{odd: "x"}))
	require.Equal(t, []uuid.UUID{c.ID}, list(map[string]string{"team": "red", odd: "x"}))
	require.Empty(t, list(map[string]string{"team": "red", odd: "y"}))

	b.transition(t, c.ID, func(tx store.Tx) error {
		_, err := tx.ChatUpdate(b.ctx, c.ID, store.ChatPatch{Labels: store.Some(map[string]string{"team": "blue"})})
		return err
	})
	require.Empty(t, list(map[string]string{"team": "red"}), "the old value is gone")
	require.Empty(t, list(map[string]string{odd: "x"}), "the removed key is gone")
	require.Equal(t, []uuid.UUID{c.ID}, list(map[string]string{"team": "blue"}))

	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error { return tx.ChatDelete(b.ctx, c.ID) }))
	require.Empty(t, list(map[string]string{"team": "blue"}))
}

func testChatPatchAndFamily(t *testing.T, b *bundle) {
	deadline := b.now.Add(5 * time.Minute)
	worker, runner := uuid.New(), uuid.New()
	model := uuid.New()
	var c store.Chat
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		var err error
		c, err = tx.ChatUpdate(b.ctx, b.chat.ID, store.ChatPatch{
			Status:                   store.Some(store.ChatStatusRequiresAction),
			WorkerID:                 store.Some(uuid.NullUUID{UUID: worker, Valid: true}),
			RunnerID:                 store.Some(uuid.NullUUID{UUID: runner, Valid: true}),
			LastError:                store.Some(json.RawMessage(`{"message":"x"}`)),
			RequiresActionDeadlineAt: store.Some(&deadline),
			CompactionRequestedAt:    store.Some(&b.now),
			Title:                    store.Some("renamed"),
			TitleSource:              store.Some(store.TitleSourceUser),
			TitleUpdatedAt:           store.Some(deadline),
			Labels:                   store.Some(map[string]string{"k": "v"}),
			PinOrder:                 store.Some(int64(2)),
			LastModelConfigID:        store.Some(uuid.NullUUID{UUID: model, Valid: true}),
			LastReasoningEffort:      store.Some("high"),
			UpdatedAt:                store.Some(deadline),
		})
		return err
	})
	require.Equal(t, store.ChatStatusRequiresAction, c.Status)
	require.Equal(t, worker, c.WorkerID.UUID)
	require.Equal(t, runner, c.RunnerID.UUID)
	require.JSONEq(t, `{"message":"x"}`, string(c.LastError))
	require.True(t, deadline.Equal(*c.RequiresActionDeadlineAt))
	require.True(t, b.now.Equal(*c.CompactionRequestedAt), "microsecond precision survives")
	require.Equal(t, "renamed", c.Title)
	require.Equal(t, store.TitleSourceUser, c.TitleSource)
	require.Equal(t, map[string]string{"k": "v"}, c.Labels)
	require.Equal(t, model, c.LastModelConfigID.UUID)
	require.Equal(t, "high", c.LastReasoningEffort)
	require.True(t, deadline.Equal(c.UpdatedAt))
	require.Equal(t, c, b.get(t, b.chat.ID))

	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		var err error
		c, err = tx.ChatUpdate(b.ctx, b.chat.ID, store.ChatPatch{
			WorkerID: store.Some(uuid.NullUUID{}), RunnerID: store.Some(uuid.NullUUID{}),
			LastError: store.Some(json.RawMessage(nil)), RequiresActionDeadlineAt: store.Some[*time.Time](nil),
		})
		return err
	})
	require.False(t, c.WorkerID.Valid)
	require.False(t, c.RunnerID.Valid)
	require.Nil(t, c.LastError)
	require.Nil(t, c.RequiresActionDeadlineAt)

	child := b.newChat(t, func(p *store.ChatInsertParams) {
		p.ParentChatID = uuid.NullUUID{UUID: b.chat.ID, Valid: true}
		p.RootChatID = uuid.NullUUID{UUID: b.chat.ID, Valid: true}
	})
	require.Equal(t, b.chat.ID, child.Root())
	require.Equal(t, b.chat.ID, b.chat.Root())
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		_, err := tx.ChatLockShared(b.ctx, b.chat.ID)
		require.NoError(t, err)
		fam, err := tx.ChatDescendants(b.ctx, b.chat.ID)
		require.Len(t, fam, 1)
		require.Equal(t, child.ID, fam[0].ID)
		many, err2 := tx.ChatGetMany(b.ctx, []uuid.UUID{b.chat.ID, child.ID, uuid.New()})
		require.NoError(t, err2)
		require.Len(t, many, 2)
		// More ids than SQLite binds parameters (32766).
		ids := []uuid.UUID{child.ID}
		for range 40000 {
			ids = append(ids, uuid.New())
		}
		many, err2 = tx.ChatGetMany(b.ctx, ids)
		require.NoError(t, err2)
		require.Len(t, many, 1)
		require.Equal(t, child.ID, many[0].ID)
		return err
	}))
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

func testUsersAndTokens(t *testing.T, b *bundle) {
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		admin, err := tx.UserInsert(b.ctx, store.UserInsertParams{ID: uuid.New(), Name: "root", Admin: true, Now: b.now})
		require.NoError(t, err)
		got, err := tx.UserGetByName(b.ctx, "root")
		require.NoError(t, err)
		require.Equal(t, admin, got)
		got, err = tx.UserGet(b.ctx, admin.ID)
		require.NoError(t, err)
		require.True(t, got.Admin)

		tok, err := tx.TokenInsert(b.ctx, store.TokenInsertParams{ID: uuid.New(), UserID: admin.ID, Hash: []byte{1, 2, 3}, Name: "cli", Now: b.now})
		require.NoError(t, err)
		found, err := tx.TokenGetByHash(b.ctx, []byte{1, 2, 3})
		require.NoError(t, err)
		require.Equal(t, tok, found)
		return nil
	}))
	err := b.s.InTx(b.ctx, func(tx store.Tx) error {
		u, err := tx.UserGetByName(b.ctx, "root")
		require.NoError(t, err)
		_, err = tx.TokenInsert(b.ctx, store.TokenInsertParams{ID: uuid.New(), UserID: u.ID, Hash: []byte{1, 2, 3}, Now: b.now})
		return err
	})
	require.ErrorIs(t, err, store.ErrConflict, "token hashes are unique")

	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		n, err := tx.UserCount(b.ctx)
		require.NoError(t, err)
		require.Equal(t, int64(2), n)
		require.NoError(t, tx.UserSetAdmin(b.ctx, b.user.ID, true))
		u, err := tx.UserGet(b.ctx, b.user.ID)
		require.NoError(t, err)
		require.True(t, u.Admin)
		require.ErrorIs(t, tx.UserSetAdmin(b.ctx, uuid.New(), true), store.ErrNotFound)
		n, err = tx.TokenDeleteByHash(b.ctx, []byte{1, 2, 3})
		require.Equal(t, int64(1), n)
		return err
	}))
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		u, err := tx.UserGetByName(b.ctx, "root")
		require.NoError(t, err)
		_, err = tx.TokenInsert(b.ctx, store.TokenInsertParams{ID: uuid.New(), UserID: u.ID, Hash: []byte{4}, Now: b.now})
		require.NoError(t, err)
		n, err := tx.TokenDeleteForUser(b.ctx, u.ID)
		require.Equal(t, int64(1), n)
		return err
	}))
}

// Tokens carry a kind, an optional expiry and their last use; lists and
// reads by id never return the hash; expired tokens and idle sessions are
// deleted together.
func testTokenKindsExpiryAndUse(t *testing.T, b *bundle) {
	expires := b.now.Add(time.Hour)
	var api, session, other store.Token
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		bob, err := tx.UserInsert(b.ctx, store.UserInsertParams{ID: uuid.New(), Name: "bob", Now: b.now})
		require.NoError(t, err)
		api, err = tx.TokenInsert(b.ctx, store.TokenInsertParams{ID: uuid.New(), UserID: b.user.ID, Hash: []byte{1}, Name: "cli", ExpiresAt: &expires, Now: b.now})
		require.NoError(t, err)
		require.Equal(t, store.TokenKindAPI, api.Kind, "an empty kind is api")
		require.Equal(t, expires, *api.ExpiresAt)
		require.Nil(t, api.LastUsedAt)
		session, err = tx.TokenInsert(b.ctx, store.TokenInsertParams{ID: uuid.New(), UserID: b.user.ID, Hash: []byte{2}, Name: "web session", Kind: store.TokenKindSession, Now: b.now.Add(time.Second)})
		require.NoError(t, err)
		require.Nil(t, session.ExpiresAt)
		other, err = tx.TokenInsert(b.ctx, store.TokenInsertParams{ID: uuid.New(), UserID: bob.ID, Hash: []byte{3}, Kind: store.TokenKindBootstrap, Now: b.now.Add(2 * time.Second)})
		require.NoError(t, err)
		return nil
	}))
	err := b.s.InTx(b.ctx, func(tx store.Tx) error {
		_, err := tx.TokenInsert(b.ctx, store.TokenInsertParams{ID: uuid.New(), UserID: b.user.ID, Hash: []byte{4}, Kind: "forever", Now: b.now})
		return err
	})
	require.Error(t, err, "an unknown kind is refused")

	noHash := func(tok store.Token) store.Token { tok.Hash = nil; return tok }
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		all, err := tx.TokenList(b.ctx, store.TokenListParams{})
		require.NoError(t, err)
		require.Equal(t, []store.Token{noHash(api), noHash(session), noHash(other)}, all, "oldest first, no hashes")
		mine, err := tx.TokenList(b.ctx, store.TokenListParams{UserID: uuid.NullUUID{UUID: b.user.ID, Valid: true}})
		require.NoError(t, err)
		require.Equal(t, []store.Token{noHash(api), noHash(session)}, mine)
		none, err := tx.TokenList(b.ctx, store.TokenListParams{UserID: uuid.NullUUID{UUID: uuid.New(), Valid: true}})
		require.NoError(t, err)
		require.NotNil(t, none)
		require.Empty(t, none)
		got, err := tx.TokenGet(b.ctx, session.ID)
		require.NoError(t, err)
		require.Equal(t, noHash(session), got)
		_, err = tx.TokenGet(b.ctx, uuid.New())
		require.ErrorIs(t, err, store.ErrNotFound)
		return nil
	}))

	used := b.now.Add(10 * time.Minute)
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		ok, err := tx.TokenTouch(b.ctx, session.ID, used)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = tx.TokenTouch(b.ctx, session.ID, used.Add(-time.Minute))
		require.NoError(t, err)
		require.False(t, ok, "an earlier use does not move last_used_at back")
		got, err := tx.TokenGetByHash(b.ctx, []byte{2})
		require.NoError(t, err)
		require.Equal(t, used, *got.LastUsedAt)
		ok, err = tx.TokenTouch(b.ctx, uuid.New(), used)
		require.NoError(t, err)
		require.False(t, ok)

		// Nothing has expired yet; the session was used at +10m.
		n, err := tx.TokenDeleteExpired(b.ctx, b.now.Add(time.Minute), b.now.Add(5*time.Minute))
		require.NoError(t, err)
		require.Zero(t, n)
		// The api token's expiry is reached; the session is still fresh.
		n, err = tx.TokenDeleteExpired(b.ctx, expires, b.now.Add(5*time.Minute))
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		_, err = tx.TokenGet(b.ctx, api.ID)
		require.ErrorIs(t, err, store.ErrNotFound)
		// A zero idle cutoff never expires sessions; a later one does.
		n, err = tx.TokenDeleteExpired(b.ctx, expires.Add(time.Hour), time.Time{})
		require.NoError(t, err)
		require.Zero(t, n)
		n, err = tx.TokenDeleteExpired(b.ctx, expires.Add(time.Hour), used)
		require.NoError(t, err)
		require.Equal(t, int64(1), n, "the idle session goes, the bootstrap token stays")

		n, err = tx.TokenDelete(b.ctx, other.ID)
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		n, err = tx.TokenDelete(b.ctx, other.ID)
		require.NoError(t, err)
		require.Zero(t, n)
		return nil
	}))
}

func (b *bundle) own(t *testing.T, id, worker, runner uuid.UUID, at time.Time) {
	t.Helper()
	b.transition(t, id, func(tx store.Tx) error {
		if _, err := tx.ChatUpdate(b.ctx, id, store.ChatPatch{
			WorkerID: store.Some(uuid.NullUUID{UUID: worker, Valid: true}),
			RunnerID: store.Some(uuid.NullUUID{UUID: runner, Valid: true}),
		}); err != nil {
			return err
		}
		return tx.HeartbeatInsert(b.ctx, id, runner, at)
	})
}

// leaseTimeout is the lease timeout of the lease cases.
const leaseTimeout = 30 * time.Second

// leaseClock is the caller's clock of the lease cases, and the way they
// make time pass for leases. The lease clock (store.LeaseWindow) is the
// caller's on SQLite and the database's on Postgres. The caller's clock
// starts at b.now, months away from the real time, so a store that stamped
// with one clock and judged with the other would fail these cases.
type leaseClock struct {
	b   *bundle
	now time.Time
}

func (b *bundle) leaseClock() *leaseClock { return &leaseClock{b: b, now: b.now} }

// databaseClock reports whether the store stamps and judges leases by the
// database's clock (Postgres) rather than the caller's (SQLite).
func (c *leaseClock) databaseClock() bool { return c.b.s.Dialect() == "postgres" }

// window is the lease window at the caller's time.
func (c *leaseClock) window() store.LeaseWindow {
	return store.LeaseWindow{Now: c.now, Timeout: leaseTimeout}
}

// elapse lets d pass for every lease and replica record: the caller's
// clock moves on, and where the database's clock judges (it cannot be
// moved) every stamp moves d into the past instead.
func (c *leaseClock) elapse(t *testing.T, d time.Duration) {
	t.Helper()
	c.now = c.now.Add(d)
	if !c.databaseClock() {
		return
	}
	require.NoError(t, c.b.s.InTx(c.b.ctx, func(tx store.Tx) error {
		for _, stmt := range []string{
			`UPDATE chat_heartbeats SET heartbeat_at = heartbeat_at - $1::bigint * interval '1 microsecond'`,
			`UPDATE chat_replicas SET updated_at = updated_at - $1::bigint * interval '1 microsecond'`,
		} {
			if _, err := c.b.exec(c.b.ctx, tx, stmt, d.Microseconds()); err != nil {
				return err
			}
		}
		return nil
	}))
}

// requireStamped checks that a stamp written at the caller's time c.now
// came from the lease clock: c.now itself on SQLite; on Postgres the
// database's clock, never the caller's (table.column holds at, and the
// database must find it within the last minute of its own time).
func (c *leaseClock) requireStamped(t *testing.T, table, column string, at time.Time, msg string) {
	t.Helper()
	if !c.databaseClock() {
		require.True(t, c.now.Equal(at), "%s: stamped with the caller's time %v, got %v", msg, c.now, at)
		return
	}
	require.False(t, c.now.Equal(at), "%s: the database's clock stamps, not the caller's", msg)
	var n int64
	require.NoError(t, c.b.s.InTx(c.b.ctx, func(tx store.Tx) error {
		var err error
		// A no-op update counts matching rows portably.
		n, err = c.b.exec(c.b.ctx, tx, `UPDATE `+table+` SET `+column+` = `+column+` WHERE `+column+` = $1
			AND `+column+` <= statement_timestamp() AND `+column+` > statement_timestamp() - interval '1 minute'`, at)
		return err
	}))
	require.Equal(t, int64(1), n, "%s: stamped by the database's clock, got %v", msg, at)
}

// requireUntil checks a duration the store measured by its lease clock
// from the state the test set up: exactly want on the caller's clock; on
// the database's, which runs on while the test runs, at most want and
// not far below it.
func (c *leaseClock) requireUntil(t *testing.T, want, got time.Duration, msg string) {
	t.Helper()
	if !c.databaseClock() {
		require.Equal(t, want, got, msg)
		return
	}
	require.LessOrEqual(t, got, want, msg)
	require.Greater(t, got, want-10*time.Second, msg)
}

// fresh asks the store whether a lease is fresh at the caller's time.
func (c *leaseClock) fresh(t *testing.T, chatID, runnerID uuid.UUID) bool {
	t.Helper()
	var fresh bool
	require.NoError(t, c.b.s.ReadTx(c.b.ctx, func(tx store.Reader) error {
		var err error
		fresh, err = tx.HeartbeatFresh(c.b.ctx, chatID, runnerID, c.window())
		return err
	}))
	return fresh
}

func testHeartbeatLeases(t *testing.T, b *bundle) {
	worker, r1, r2, r3 := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	c := b.leaseClock()
	b.own(t, b.chat.ID, worker, r1, c.now)
	other := b.newChat(t, nil)
	b.own(t, other.ID, worker, r2, c.now)
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		at, err := tx.HeartbeatAt(b.ctx, b.chat.ID, r1)
		require.NoError(t, err)
		c.requireStamped(t, "chat_heartbeats", "heartbeat_at", at, "the initial heartbeat")
		_, err = tx.HeartbeatAt(b.ctx, b.chat.ID, uuid.New())
		require.ErrorIs(t, err, store.ErrNotFound)
		return nil
	}))
	renew := func(leases ...store.Lease) []store.Lease {
		var out []store.Lease
		require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
			var err error
			out, err = tx.HeartbeatRenew(b.ctx, leases, c.window())
			return err
		}))
		return out
	}
	l1, l2 := store.Lease{ChatID: b.chat.ID, RunnerID: r1}, store.Lease{ChatID: other.ID, RunnerID: r2}
	c.elapse(t, 9*time.Second)
	require.ElementsMatch(t, []store.Lease{l1, l2}, renew(l1, l2))
	require.Equal(t, []store.Lease{l1}, renew(l1, l1), "a lease named twice is renewed once")
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		at, err := tx.HeartbeatAt(b.ctx, b.chat.ID, r1)
		require.NoError(t, err)
		c.requireStamped(t, "chat_heartbeats", "heartbeat_at", at, "the renewal")
		return nil
	}))

	// A lease whose chat moved to another runner is not renewed.
	b.own(t, other.ID, worker, r3, c.now)
	c.elapse(t, 9*time.Second)
	require.Equal(t, []store.Lease{l1}, renew(l1, l2))

	// l1 was renewed 29 s ago: fresh; r3's lease is 38 s old: stale.
	c.elapse(t, 29*time.Second)
	require.True(t, c.fresh(t, b.chat.ID, r1), "renewed: fresh for the lease timeout")
	require.False(t, c.fresh(t, other.ID, r3), "older than the lease timeout")
	require.False(t, c.fresh(t, b.chat.ID, uuid.New()), "no heartbeat row")
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		n, err := tx.HeartbeatDeleteStale(b.ctx, c.window())
		require.Equal(t, int64(2), n, "l2 and r3's lease are stale, l1 is not")
		return err
	}))
	require.True(t, c.fresh(t, b.chat.ID, r1))

	// A stale lease is never revived.
	c.elapse(t, 2*time.Second)
	require.False(t, c.fresh(t, b.chat.ID, r1))
	require.Empty(t, renew(l1))
	require.Empty(t, renew(store.Lease{ChatID: uuid.New(), RunnerID: uuid.New()}))
}

func testAcquirableAndOwned(t *testing.T, b *bundle) {
	self, other := uuid.New(), uuid.New()
	c := b.leaseClock()
	setStatus := func(id uuid.UUID, p store.ChatPatch) {
		b.transition(t, id, func(tx store.Tx) error {
			_, err := tx.ChatUpdate(b.ctx, id, p)
			return err
		})
	}
	unowned := b.chat.ID
	ownedStale := b.newChat(t, nil).ID
	b.own(t, ownedStale, other, uuid.New(), c.now)
	ownedBySelf := b.newChat(t, nil).ID
	b.own(t, ownedBySelf, self, uuid.New(), c.now)
	c.elapse(t, time.Minute) // both leases go stale
	ownedFresh := b.newChat(t, nil).ID
	b.own(t, ownedFresh, other, uuid.New(), c.now)
	waiting := b.newChat(t, nil).ID
	setStatus(waiting, store.ChatPatch{Status: store.Some(store.ChatStatusWaiting)})
	archived := b.newChat(t, nil).ID
	setStatus(archived, store.ChatPatch{Archived: store.Some(true)})
	action := b.newChat(t, nil).ID
	setStatus(action, store.ChatPatch{Status: store.Some(store.ChatStatusRequiresAction)})
	child := b.newChat(t, func(p *store.ChatInsertParams) {
		p.ParentChatID = uuid.NullUUID{UUID: unowned, Valid: true}
		p.RootChatID = uuid.NullUUID{UUID: unowned, Valid: true}
	}).ID
	b.own(t, child, self, uuid.New(), c.now)
	leases := func(self uuid.UUID) store.AcquirableParams {
		w := c.window()
		return store.AcquirableParams{Self: self, Leases: &w}
	}

	list := func(p store.AcquirableParams) []uuid.UUID {
		var ids []uuid.UUID
		require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
			require.NoError(t, tx.AdmissionLock(b.ctx))
			took, err := tx.AdmissionTryLock(b.ctx)
			require.NoError(t, err)
			require.True(t, took, "a transaction's try of the admission lock it holds")
			cs, err := tx.ChatListAcquirable(b.ctx, p)
			for _, c := range cs {
				ids = append(ids, c.ID)
			}
			return err
		}))
		return ids
	}
	require.ElementsMatch(t, []uuid.UUID{unowned, ownedStale, ownedBySelf, action},
		list(leases(self)), "leases decide liveness")
	require.ElementsMatch(t, []uuid.UUID{unowned, ownedFresh, ownedStale, action},
		list(store.AcquirableParams{Self: self}), "without leases only Self is alive")

	count := func(p store.AcquirableParams) (int64, int64) {
		var r, s int64
		require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			var err error
			r, s, err = tx.ChatCountOwned(b.ctx, p)
			return err
		}))
		return r, s
	}
	r, s := count(leases(self))
	require.Equal(t, [2]int64{1, 1}, [2]int64{r, s}, "ownedFresh is a root, child a subagent")
	r, s = count(store.AcquirableParams{Self: self})
	require.Equal(t, [2]int64{1, 1}, [2]int64{r, s}, "ownedBySelf and child")

	until := func(p store.AcquirableParams) (time.Duration, bool) {
		var (
			d     time.Duration
			found bool
		)
		require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			var err error
			d, found, err = tx.HeartbeatOldestForeign(b.ctx, p)
			return err
		}))
		return d, found
	}
	b.own(t, waiting, other, uuid.New(), c.now) // not runnable: never taken over
	c.elapse(t, 5*time.Second)
	d, found := until(leases(self))
	require.True(t, found)
	c.requireUntil(t, 25*time.Second, d, "ownedFresh: the only fresh lease of another worker on a runnable chat")
	b.own(t, ownedFresh, other, uuid.New(), c.now)
	d, found = until(leases(self))
	require.True(t, found)
	c.requireUntil(t, leaseTimeout, d, "the lease of the chat's current runner counts")
	d, found = until(leases(other))
	require.True(t, found)
	c.requireUntil(t, 25*time.Second, d, "for other, self's fresh child lease (ownedBySelf's is stale)")
	_, found = until(store.AcquirableParams{Self: self})
	require.False(t, found, "no leases without a window")
	c.elapse(t, 25*time.Second)
	_, found = until(leases(other))
	require.False(t, found, "a lease exactly the lease timeout old is stale")
}

// testChatListByWorker: a worker's chats are the ones whose worker_id
// it is, whatever their state or lease (shutdown releases them all), and
// not another worker's nor an unowned one.
func testChatListByWorker(t *testing.T, b *bundle) {
	self, other := uuid.New(), uuid.New()
	c := b.leaseClock()
	list := func(worker uuid.UUID) []uuid.UUID {
		var ids []uuid.UUID
		require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			var err error
			ids, err = tx.ChatListByWorker(b.ctx, worker)
			return err
		}))
		return ids
	}
	none := list(self)
	require.NotNil(t, none)
	require.Empty(t, none, "b.chat is unowned")

	first := b.newChat(t, nil).ID
	b.own(t, first, self, uuid.New(), c.now)
	c.elapse(t, time.Minute) // a stale lease is still the worker's chat
	second := b.newChat(t, nil).ID
	b.own(t, second, self, uuid.New(), c.now)
	b.transition(t, second, func(tx store.Tx) error {
		_, err := tx.ChatUpdate(b.ctx, second, store.ChatPatch{Status: store.Some(store.ChatStatusWaiting), Archived: store.Some(true)})
		return err
	})
	foreign := b.newChat(t, nil).ID
	b.own(t, foreign, other, uuid.New(), c.now)

	require.ElementsMatch(t, []uuid.UUID{first, second}, list(self), "any state, any lease")
	require.Equal(t, []uuid.UUID{foreign}, list(other))
	b.transition(t, first, func(tx store.Tx) error {
		_, err := tx.ChatUpdate(b.ctx, first, store.ChatPatch{
			WorkerID: store.Some(uuid.NullUUID{}), RunnerID: store.Some(uuid.NullUUID{}),
		})
		return err
	})
	require.Equal(t, []uuid.UUID{second}, list(self), "an abandoned chat is no longer the worker's")
}

// testRequiresActionHoldsNoSlot: a chat in requires_action keeps its live
// owner (it is not acquirable) but holds no slot of the concurrent agent
// limiter; it counts again once it runs.
func testRequiresActionHoldsNoSlot(t *testing.T, b *bundle) {
	self := uuid.New()
	w := b.leaseClock().window()
	for _, p := range []store.AcquirableParams{{Self: self, Leases: &w}, {Self: self}} {
		leases := p.Leases != nil
		b.own(t, b.chat.ID, self, uuid.New(), b.now)
		b.transition(t, b.chat.ID, func(tx store.Tx) error {
			_, err := tx.ChatUpdate(b.ctx, b.chat.ID, store.ChatPatch{Status: store.Some(store.ChatStatusRequiresAction)})
			return err
		})
		var (
			list             []store.Chat
			roots, subagents int64
			byOwner          map[uuid.UUID]int64
		)
		read := func() {
			t.Helper()
			require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
				var err error
				if list, err = tx.ChatListAcquirable(b.ctx, p); err != nil {
					return err
				}
				if roots, subagents, err = tx.ChatCountOwned(b.ctx, p); err != nil {
					return err
				}
				byOwner, err = tx.ChatCountOwnedByOwner(b.ctx, p)
				return err
			}))
		}
		read()
		require.Empty(t, list, "leases %v: a live owner keeps a requires_action chat", leases)
		require.Equal(t, [2]int64{0, 0}, [2]int64{roots, subagents}, "leases %v: requires_action holds no slot", leases)
		require.Empty(t, byOwner, "leases %v", leases)

		b.transition(t, b.chat.ID, func(tx store.Tx) error {
			_, err := tx.ChatUpdate(b.ctx, b.chat.ID, store.ChatPatch{Status: store.Some(store.ChatStatusRunning)})
			return err
		})
		read()
		require.Equal(t, [2]int64{1, 0}, [2]int64{roots, subagents}, "leases %v: it counts again when it runs", leases)
		require.Equal(t, map[uuid.UUID]int64{b.user.ID: 1}, byOwner, "leases %v", leases)
	}
}

// testAcquirableFairOrder: acquirable chats come requires_action first
// (they take no slot), then by how many slots their owner holds, then
// oldest first; ChatCountOwnedByOwner gives the slots per owner.
func testAcquirableFairOrder(t *testing.T, b *bundle) {
	self := uuid.New()
	var bob store.User
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		var err error
		bob, err = tx.UserInsert(b.ctx, store.UserInsertParams{ID: uuid.New(), Name: "bob", Now: b.now})
		return err
	}))
	at := func(d time.Duration, owner uuid.UUID, status store.ChatStatus) uuid.UUID {
		return b.newChat(t, func(p *store.ChatInsertParams) {
			p.Now, p.OwnerID, p.Status = b.now.Add(d), owner, status
		}).ID
	}
	// b.chat (alice's, at b.now) is owned and running: alice holds a slot.
	b.own(t, b.chat.ID, self, uuid.New(), b.now)
	aliceOld := at(time.Second, b.user.ID, store.ChatStatusRunning)
	aliceOlder := at(0, b.user.ID, store.ChatStatusRunning)
	bobNew := at(3*time.Second, bob.ID, store.ChatStatusRunning)
	bobAction := at(4*time.Second, bob.ID, store.ChatStatusRequiresAction)
	bobNewer := at(5*time.Second, bob.ID, store.ChatStatusInterrupting)

	w := b.leaseClock().window()
	for _, p := range []store.AcquirableParams{{Self: self, Leases: &w}, {Self: self}} {
		var (
			ids     []uuid.UUID
			byOwner map[uuid.UUID]int64
		)
		require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			cs, err := tx.ChatListAcquirable(b.ctx, p)
			for _, c := range cs {
				ids = append(ids, c.ID)
			}
			if err != nil {
				return err
			}
			byOwner, err = tx.ChatCountOwnedByOwner(b.ctx, p)
			return err
		}))
		require.Equal(t, []uuid.UUID{bobAction, bobNew, bobNewer, aliceOlder, aliceOld}, ids,
			"leases %v: requires_action, then the owner with fewer slots, then oldest", p.Leases != nil)
		require.Equal(t, map[uuid.UUID]int64{b.user.ID: 1}, byOwner)
	}
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

func testReplicas(t *testing.T, b *bundle) {
	w := uuid.New()
	c := b.leaseClock()
	r := store.Replica{WorkerID: w, Address: "http://10.0.0.1:8080", TokenHash: "9b1a", UpdatedAt: c.now}
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error { return tx.ReplicaUpsert(b.ctx, r) }))
	c.elapse(t, time.Second)
	r.Address, r.TokenHash, r.UpdatedAt = "http://10.0.0.2:8080", "77c0", c.now
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error { return tx.ReplicaUpsert(b.ctx, r) }))
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		got, err := tx.ReplicaGet(b.ctx, w)
		require.NoError(t, err)
		c.requireStamped(t, "chat_replicas", "updated_at", got.UpdatedAt, "an upsert")
		got.UpdatedAt = r.UpdatedAt
		require.Equal(t, r, got)
		_, err = tx.ReplicaGet(b.ctx, uuid.New())
		require.ErrorIs(t, err, store.ErrNotFound)
		return nil
	}))
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error { return tx.ReplicaDelete(b.ctx, w) }))
}

// testReplicaTouchAndDeleteStale: a replica refreshes its record; the
// records not refreshed within the lease window are removed, the others
// stay.
func testReplicaTouchAndDeleteStale(t *testing.T, b *bundle) {
	alive, dead, unknown := uuid.New(), uuid.New(), uuid.New()
	c := b.leaseClock()
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		for _, id := range []uuid.UUID{alive, dead} {
			if err := tx.ReplicaUpsert(b.ctx, store.Replica{WorkerID: id, Address: "http://x", TokenHash: "t", UpdatedAt: c.now}); err != nil {
				return err
			}
		}
		return nil
	}))
	c.elapse(t, 40*time.Second)
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		found, err := tx.ReplicaTouch(b.ctx, alive, c.now)
		require.True(t, found)
		if err != nil {
			return err
		}
		found, err = tx.ReplicaTouch(b.ctx, unknown, c.now)
		require.False(t, found, "no record to refresh")
		return err
	}))
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		r, err := tx.ReplicaGet(b.ctx, alive)
		require.NoError(t, err)
		c.requireStamped(t, "chat_replicas", "updated_at", r.UpdatedAt, "a touch")
		return nil
	}))
	c.elapse(t, leaseTimeout-time.Second)
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		n, err := tx.ReplicaDeleteStale(b.ctx, c.window())
		require.Equal(t, int64(1), n, "only the record older than the lease timeout goes")
		return err
	}))
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		_, err := tx.ReplicaGet(b.ctx, alive)
		require.NoError(t, err, "the refreshed record stays")
		_, err = tx.ReplicaGet(b.ctx, dead)
		require.ErrorIs(t, err, store.ErrNotFound, "the dead replica's record is gone")
		return nil
	}))
}

func testRequestIDRoundTrips(t *testing.T, b *bundle) {
	req := uuid.NullUUID{UUID: uuid.New(), Valid: true}
	var with, without store.Message
	var qWith, qWithout store.QueuedMessage
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		var err error
		with, err = tx.MessageInsert(b.ctx, store.MessageInsertParams{
			ChatID: b.chat.ID, Role: store.RoleUser, Content: b.text("durable"), RequestID: req, Now: b.now,
		})
		require.NoError(t, err)
		without = b.insertMessage(t, tx, b.chat.ID, store.RoleUser, "plain")
		qWith, err = tx.QueueInsert(b.ctx, store.QueueInsertParams{
			ChatID: b.chat.ID, Content: b.text("queued"), RequestID: req, Now: b.now,
		})
		require.NoError(t, err)
		qWithout, err = tx.QueueInsert(b.ctx, store.QueueInsertParams{ChatID: b.chat.ID, Content: b.text("q"), Now: b.now})
		return err
	})
	require.Equal(t, req, with.RequestID)
	require.False(t, without.RequestID.Valid)
	require.Equal(t, req, qWith.RequestID)
	require.False(t, qWithout.RequestID.Valid)

	ms := b.messages(t, b.chat.ID)
	require.Equal(t, []uuid.NullUUID{req, {}}, []uuid.NullUUID{ms[0].RequestID, ms[1].RequestID})
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		m, err := tx.MessageGet(b.ctx, b.chat.ID, with.ID)
		require.NoError(t, err)
		require.Equal(t, with, m)
		queue, err := tx.QueueList(b.ctx, b.chat.ID)
		require.NoError(t, err)
		require.Equal(t, []store.QueuedMessage{qWith, qWithout}, queue)
		got, err := tx.QueueGet(b.ctx, b.chat.ID, qWith.ID)
		require.Equal(t, qWith, got)
		return err
	}))
}

// requireJSONFields compares JSON the way a reader sees it: Postgres
// normalises jsonb text, so values are compared as JSON and NULL must stay nil.
func requireJSONFields(t *testing.T, want, got []json.RawMessage) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		if want[i] == nil {
			require.Nil(t, got[i], "field %d is NULL", i)
			continue
		}
		require.JSONEq(t, string(want[i]), string(got[i]), "field %d", i)
	}
}

func requireInvocation(t *testing.T, want, got store.Invocation) {
	t.Helper()
	requireJSONFields(t, []json.RawMessage{want.Response, want.Outcome, want.Review},
		[]json.RawMessage{got.Response, got.Outcome, got.Review})
	want.Response, want.Outcome, want.Review = nil, nil, nil
	got.Response, got.Outcome, got.Review = nil, nil, nil
	require.Equal(t, want, got)
}

func testInvocations(t *testing.T, b *bundle) {
	get := func(id uuid.UUID) (store.Invocation, error) {
		var inv store.Invocation
		err := b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			var err error
			inv, err = tx.InvocationGet(b.ctx, id)
			return err
		})
		return inv, err
	}
	insert := func(inv store.Invocation) error {
		return b.s.InTx(b.ctx, func(tx store.Tx) error { return tx.InvocationInsert(b.ctx, inv) })
	}
	update := func(id uuid.UUID, p store.InvocationPatch) (store.Invocation, error) {
		var inv store.Invocation
		err := b.s.InTx(b.ctx, func(tx store.Tx) error {
			var err error
			inv, err = tx.InvocationUpdate(b.ctx, id, p)
			return err
		})
		return inv, err
	}

	// Every field round-trips.
	msgID, queuedID := int64(11), int64(12)
	done := b.now.Add(time.Minute)
	full := store.Invocation{
		RequestID: uuid.New(), CallerID: b.user.ID, ContentSHA256: fmt.Sprintf("%x", sha256.Sum256([]byte("hi"))),
		RequestSHA256: fmt.Sprintf("%x", sha256.Sum256([]byte(`{"endpoint":"send_message"}`))),
		Kind:          "send_message", ChatID: b.chat.ID, AuditID: uuid.New(), State: store.InvocationCompleted,
		MessageID: &msgID, QueuedMessageID: &queuedID,
		Response:  json.RawMessage(`{"type":"AuditOpened","audit":"a1"}`),
		Outcome:   json.RawMessage(`{"text":"done","usage":[1,2]}`),
		Review:    json.RawMessage(`{"by":"op"}`),
		CreatedAt: b.now, UpdatedAt: b.now.Add(time.Second), CompletedAt: &done,
	}
	require.NoError(t, insert(full))
	got, err := get(full.RequestID)
	require.NoError(t, err)
	requireInvocation(t, full, got)

	// NULL columns read back as nil.
	bare := store.Invocation{
		RequestID: uuid.New(), CallerID: b.user.ID, ContentSHA256: "00", Kind: "create_chat",
		ChatID: uuid.New(), AuditID: uuid.New(), State: store.InvocationAdmitted,
		CreatedAt: b.now, UpdatedAt: b.now,
	}
	require.NoError(t, insert(bare), "chat_id has no foreign key")
	got, err = get(bare.RequestID)
	require.NoError(t, err)
	require.Equal(t, bare, got)

	// A patch writes only its set fields, plus updated_at.
	later := b.now.Add(time.Hour)
	got, err = update(bare.RequestID, store.InvocationPatch{
		MessageID: store.Some(&msgID), Response: store.Some(json.RawMessage(`{"ok":true}`)), UpdatedAt: later,
	})
	require.NoError(t, err)
	want := bare
	want.MessageID, want.Response, want.UpdatedAt = &msgID, json.RawMessage(`{"ok":true}`), later
	requireInvocation(t, want, got)
	got, err = get(bare.RequestID)
	require.NoError(t, err)
	requireInvocation(t, want, got)

	got, err = update(full.RequestID, store.InvocationPatch{
		State: store.Some(store.InvocationReconciled), MessageID: store.Some[*int64](nil),
		QueuedMessageID: store.Some[*int64](nil), Response: store.Some(json.RawMessage(nil)),
		Outcome: store.Some(json.RawMessage(`{"text":"other"}`)), Review: store.Some(json.RawMessage(nil)),
		CompletedAt: store.Some[*time.Time](nil), UpdatedAt: later,
	})
	require.NoError(t, err)
	want = full
	want.State, want.MessageID, want.QueuedMessageID = store.InvocationReconciled, nil, nil
	want.Response, want.Outcome, want.Review = nil, json.RawMessage(`{"text":"other"}`), nil
	want.CompletedAt, want.UpdatedAt = nil, later
	requireInvocation(t, want, got)

	// Conflicts, missing rows and checks.
	dup := bare
	dup.AuditID = uuid.New()
	require.ErrorIs(t, insert(dup), store.ErrConflict, "a request id is claimed once")
	dup = bare
	dup.RequestID = uuid.New()
	require.ErrorIs(t, insert(dup), store.ErrConflict, "audit ids are unique")
	_, err = get(uuid.New())
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = update(uuid.New(), store.InvocationPatch{State: store.Some(store.InvocationCompleted), UpdatedAt: later})
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = update(bare.RequestID, store.InvocationPatch{State: store.Some[store.InvocationState]("lost"), UpdatedAt: later})
	require.ErrorIs(t, err, store.ErrInvariant)
	bad := bare
	bad.RequestID, bad.AuditID, bad.Kind = uuid.New(), uuid.New(), "other"
	require.ErrorIs(t, insert(bad), store.ErrInvariant)
	bad = bare
	bad.RequestID, bad.AuditID, bad.CallerID = uuid.New(), uuid.New(), uuid.New()
	require.ErrorIs(t, insert(bad), store.ErrForeignKey)

	// A claim outlives its chat but not its caller.
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error { return tx.ChatDelete(b.ctx, b.chat.ID) }))
	_, err = get(full.RequestID)
	require.NoError(t, err, "deleting the chat keeps the claim")
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		_, err := b.exec(b.ctx, tx, q(b.s, `DELETE FROM users WHERE id = ?`, `DELETE FROM users WHERE id = $1`), b.user.ID.String())
		return err
	}))
	for _, id := range []uuid.UUID{full.RequestID, bare.RequestID} {
		_, err = get(id)
		require.ErrorIs(t, err, store.ErrNotFound, "deleting the caller deletes the claim")
	}
}

func requireJournal(t *testing.T, want, got store.JournalEntry) {
	t.Helper()
	requireJSONFields(t, []json.RawMessage{want.Args, want.Result}, []json.RawMessage{got.Args, got.Result})
	want.Args, want.Result, got.Args, got.Result = nil, nil, nil, nil
	require.Equal(t, want, got)
}

func testJournal(t *testing.T, b *bundle) {
	other := b.newChat(t, nil)
	req := uuid.NullUUID{UUID: uuid.New(), Valid: true}
	start := func(e store.JournalEntry) error {
		return b.s.InTx(b.ctx, func(tx store.Tx) error { return tx.JournalStart(b.ctx, e) })
	}
	get := func(chatID uuid.UUID, callID string) (store.JournalEntry, error) {
		var e store.JournalEntry
		err := b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			var err error
			e, err = tx.JournalGet(b.ctx, chatID, callID)
			return err
		})
		return e, err
	}
	list := func(chatID uuid.UUID, requestID uuid.NullUUID) []string {
		var ids []string
		require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			es, err := tx.JournalList(b.ctx, chatID, requestID)
			for _, e := range es {
				ids = append(ids, e.ToolCallID)
			}
			return err
		}))
		return ids
	}
	update := func(callID string, p store.JournalPatch) (store.JournalEntry, error) {
		var e store.JournalEntry
		err := b.s.InTx(b.ctx, func(tx store.Tx) error {
			var err error
			e, err = tx.JournalUpdate(b.ctx, b.chat.ID, callID, p)
			return err
		})
		return e, err
	}

	// Start order is not name order.
	entries := []store.JournalEntry{
		{ChatID: b.chat.ID, ToolCallID: "call_b", RequestID: req, ToolName: "write_file",
			Effect: store.EffectEffectful, Args: json.RawMessage(`{"path":"/tmp/x","n":1}`), StartedAt: b.now},
		{ChatID: b.chat.ID, ToolCallID: "call_a", RequestID: req, ToolName: "read_file",
			Effect: store.EffectPure, State: store.JournalStarted, Attempts: 3, StartedAt: b.now},
		{ChatID: b.chat.ID, ToolCallID: "call_c", ToolName: "fetch", Effect: store.EffectIdempotent, StartedAt: b.now},
		{ChatID: other.ID, ToolCallID: "call_b", ToolName: "fetch", Effect: store.EffectIdempotent, StartedAt: b.now},
	}
	for _, e := range entries {
		require.NoError(t, start(e), "tool call ids are unique per chat")
	}
	got, err := get(b.chat.ID, "call_b")
	require.NoError(t, err)
	want := entries[0]
	want.State, want.Attempts = store.JournalStarted, 1
	requireJournal(t, want, got)
	got, err = get(b.chat.ID, "call_a")
	require.NoError(t, err)
	require.Equal(t, entries[1], got, "NULL args and result read back as nil")

	require.Equal(t, []string{"call_b", "call_a", "call_c"}, list(b.chat.ID, uuid.NullUUID{}))
	require.Equal(t, []string{"call_b", "call_a"}, list(b.chat.ID, req))
	require.Empty(t, list(b.chat.ID, uuid.NullUUID{UUID: uuid.New(), Valid: true}))
	require.Equal(t, []string{"call_b"}, list(other.ID, uuid.NullUUID{}))

	// A patch writes only its set fields.
	done := b.now.Add(time.Minute)
	got, err = update("call_b", store.JournalPatch{
		State: store.Some(store.JournalCompleted), Result: store.Some(json.RawMessage(`{"ok":false}`)),
		IsError: store.Some(true), Attempts: store.Some(int64(2)), StartedAt: store.Some(b.now.Add(time.Second)),
		CompletedAt: store.Some(&done),
	})
	require.NoError(t, err)
	want.State, want.Result, want.IsError, want.Attempts = store.JournalCompleted, json.RawMessage(`{"ok":false}`), true, 2
	want.StartedAt, want.CompletedAt = b.now.Add(time.Second), &done
	requireJournal(t, want, got)
	got, err = update("call_b", store.JournalPatch{State: store.Some(store.JournalReconciled)})
	require.NoError(t, err)
	want.State = store.JournalReconciled
	requireJournal(t, want, got)
	got, err = update("call_b", store.JournalPatch{})
	require.NoError(t, err)
	requireJournal(t, want, got)
	got, err = get(b.chat.ID, "call_b")
	require.NoError(t, err)
	requireJournal(t, want, got)
	got, err = update("call_b", store.JournalPatch{Result: store.Some(json.RawMessage(nil)), CompletedAt: store.Some[*time.Time](nil)})
	require.NoError(t, err)
	require.Nil(t, got.Result)
	require.Nil(t, got.CompletedAt)

	// Conflicts, missing rows and checks.
	require.ErrorIs(t, start(entries[0]), store.ErrConflict)
	_, err = get(b.chat.ID, "call_z")
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = update("call_z", store.JournalPatch{State: store.Some(store.JournalCompleted)})
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = update("call_c", store.JournalPatch{State: store.Some[store.JournalState]("lost")})
	require.ErrorIs(t, err, store.ErrInvariant)
	require.ErrorIs(t, start(store.JournalEntry{ChatID: b.chat.ID, ToolCallID: "call_x", ToolName: "t",
		Effect: "risky", StartedAt: b.now}), store.ErrInvariant)
	require.ErrorIs(t, start(store.JournalEntry{ChatID: uuid.New(), ToolCallID: "call_x", ToolName: "t",
		Effect: store.EffectPure, StartedAt: b.now}), store.ErrForeignKey)

	// A later start sorts last, whatever its time.
	require.NoError(t, start(store.JournalEntry{ChatID: b.chat.ID, ToolCallID: "call_0", ToolName: "t",
		Effect: store.EffectPure, StartedAt: b.now.Add(-time.Hour)}))
	require.Equal(t, []string{"call_b", "call_a", "call_c", "call_0"}, list(b.chat.ID, uuid.NullUUID{}))

	// Deleting the chat deletes its journal, and only its.
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error { return tx.ChatDelete(b.ctx, b.chat.ID) }))
	require.Empty(t, list(b.chat.ID, uuid.NullUUID{}))
	_, err = get(b.chat.ID, "call_a")
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Equal(t, []string{"call_b"}, list(other.ID, uuid.NullUUID{}))
}

// Every operation that returns a slice returns a non-nil, empty one when
// nothing matches: callers encode them to JSON, where nil is null and not [].
func testEmptyListsAreNotNil(t *testing.T, b *bundle) {
	empty := func(what string, v any, err error) {
		t.Helper()
		require.NoError(t, err, what)
		require.NotNil(t, v, what)
		require.Zero(t, reflect.ValueOf(v).Len(), what)
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		require.Equal(t, "[]", string(raw), what)
	}
	unknown := uuid.NullUUID{UUID: uuid.New(), Valid: true}
	read := func(tx store.Reader) {
		chats, err := tx.ChatGetMany(b.ctx, nil)
		empty("ChatGetMany of no ids", chats, err)
		chats, err = tx.ChatGetMany(b.ctx, []uuid.UUID{uuid.New()})
		empty("ChatGetMany of unknown ids", chats, err)
		chats, err = tx.ChatDescendants(b.ctx, b.chat.ID)
		empty("ChatDescendants", chats, err)
		chats, err = tx.ChatList(b.ctx, store.ChatListParams{OwnerID: unknown})
		empty("ChatList", chats, err)
		chats, err = tx.ChatListAcquirable(b.ctx, store.AcquirableParams{Self: uuid.New(), Limit: 0})
		require.NoError(t, err)
		require.Len(t, chats, 1, "the bundle's running chat")
		msgs, err := tx.MessageList(b.ctx, b.chat.ID, store.MessageListParams{IncludeDeleted: true})
		empty("MessageList", msgs, err)
		queue, err := tx.QueueList(b.ctx, b.chat.ID)
		empty("QueueList", queue, err)
		journal, err := tx.JournalList(b.ctx, b.chat.ID, uuid.NullUUID{})
		empty("JournalList", journal, err)
		journal, err = tx.JournalList(b.ctx, b.chat.ID, unknown)
		empty("JournalList of a request", journal, err)
	}
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error { read(tx); return nil }))

	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		read(tx)
		_, err := tx.ChatUpdate(b.ctx, b.chat.ID, store.ChatPatch{Status: store.Some(store.ChatStatusWaiting)})
		require.NoError(t, err)
		chats, err := tx.ChatListAcquirable(b.ctx, store.AcquirableParams{Self: uuid.New()})
		empty("ChatListAcquirable", chats, err)
		ids, err := tx.MessageSoftDeleteFrom(b.ctx, b.chat.ID, 1)
		empty("MessageSoftDeleteFrom", ids, err)
		w := b.leaseClock().window()
		leases, err := tx.HeartbeatRenew(b.ctx, nil, w)
		empty("HeartbeatRenew of no leases", leases, err)
		leases, err = tx.HeartbeatRenew(b.ctx, []store.Lease{{ChatID: b.chat.ID, RunnerID: uuid.New()}}, w)
		empty("HeartbeatRenew of unknown leases", leases, err)
		return nil
	})
}

// A list's limit means the same on every store: none is the default page,
// anything larger than the maximum is the maximum.
func testListLimits(t *testing.T, b *bundle) {
	// The bundle's chat plus these make MaxListLimit+1 running, unowned chats.
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		for i := range store.MaxListLimit {
			if _, err := tx.ChatInsert(b.ctx, store.ChatInsertParams{
				ID: uuid.New(), OwnerID: b.user.ID, Title: fmt.Sprint("chat ", i),
				Status: store.ChatStatusRunning, Now: b.now.Add(time.Duration(i) * time.Microsecond),
			}); err != nil {
				return err
			}
		}
		return nil
	}))
	for _, tc := range []struct {
		limit, want int
	}{
		{0, store.DefaultListLimit},
		{-1, store.DefaultListLimit},
		{7, 7},
		{store.MaxListLimit, store.MaxListLimit},
		{store.MaxListLimit + 1, store.MaxListLimit},
		{1 << 30, store.MaxListLimit},
	} {
		require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			chats, err := tx.ChatList(b.ctx, store.ChatListParams{Limit: tc.limit})
			require.NoError(t, err)
			require.Equal(t, tc.want, len(chats), "ChatList with limit %d", tc.limit)
			chats, err = tx.ChatListAcquirable(b.ctx, store.AcquirableParams{Self: uuid.New(), Limit: tc.limit})
			require.NoError(t, err)
			require.Equal(t, tc.want, len(chats), "ChatListAcquirable with limit %d", tc.limit)
			return nil
		}))
	}
}

// Errors carry the operation and the row they are about, with the store
// sentinel still in the chain.
func testErrorsNameTheOperation(t *testing.T, b *bundle) {
	missing := uuid.New()
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		_, err := tx.ChatGet(b.ctx, missing)
		require.ErrorIs(t, err, store.ErrNotFound)
		require.ErrorContains(t, err, "get chat "+missing.String())
		_, err = tx.MessageGet(b.ctx, b.chat.ID, 12345)
		require.ErrorIs(t, err, store.ErrNotFound)
		require.ErrorContains(t, err, "get message 12345 of chat "+b.chat.ID.String())
		_, err = tx.InvocationGet(b.ctx, missing)
		require.ErrorIs(t, err, store.ErrNotFound)
		require.ErrorContains(t, err, "get invocation "+missing.String())
		_, err = tx.HeartbeatAt(b.ctx, b.chat.ID, missing)
		require.ErrorIs(t, err, store.ErrNotFound)
		require.ErrorContains(t, err, "get heartbeat of chat "+b.chat.ID.String())
		return nil
	}))
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		_, err := tx.ChatLock(b.ctx, missing)
		require.ErrorContains(t, err, "lock chat "+missing.String())
		_, err = tx.ChatUpdate(b.ctx, missing, store.ChatPatch{PinOrder: store.Some(int64(1))})
		require.ErrorIs(t, err, store.ErrNotFound)
		require.ErrorContains(t, err, "update chat "+missing.String())
		_, err = tx.ChatIncrementGenerationAttempt(b.ctx, missing)
		require.ErrorIs(t, err, store.ErrNotFound)
		require.ErrorContains(t, err, "increment generation attempt of chat "+missing.String())
		err = tx.ChatDelete(b.ctx, missing)
		require.ErrorContains(t, err, "delete chat "+missing.String())
		err = tx.UserSetAdmin(b.ctx, missing, true)
		require.ErrorIs(t, err, store.ErrNotFound)
		require.ErrorContains(t, err, "set admin of user "+missing.String())
		return nil
	}))
	err := b.s.InTx(b.ctx, func(tx store.Tx) error {
		_, err := tx.UserInsert(b.ctx, store.UserInsertParams{ID: uuid.New(), Name: b.user.Name, Now: b.now})
		return err
	})
	require.ErrorIs(t, err, store.ErrConflict)
	require.ErrorContains(t, err, fmt.Sprintf("insert user %q", b.user.Name))
}

func testChatInsertDefaults(t *testing.T, b *bundle) {
	var c store.Chat
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		var err error
		c, err = tx.ChatInsert(b.ctx, store.ChatInsertParams{
			ID: uuid.New(), OwnerID: b.user.ID, Title: "chat", Status: store.ChatStatusWaiting, Now: b.now,
		})
		return err
	}))
	require.Equal(t, int64(1), c.SnapshotVersion)
	require.Zero(t, c.HistoryVersion+c.QueueVersion+c.RetryStateVersion+c.GenerationAttempt)
	require.Equal(t, store.TitleSourceFallback, c.TitleSource, "empty source takes the column default")
	require.Equal(t, map[string]string{}, c.Labels)
	require.Nil(t, c.LastError)
	require.Nil(t, c.RetryState)
	require.Nil(t, c.DynamicTools)
	require.False(t, c.ParentChatID.Valid)
	require.False(t, c.WorkerID.Valid)
	require.Nil(t, c.RequiresActionDeadlineAt)
	require.Equal(t, b.now, c.CreatedAt)
	require.Equal(t, b.now, c.UpdatedAt)
	require.Equal(t, b.now, c.TitleUpdatedAt)
	require.Equal(t, c, b.get(t, c.ID))
}

// Times are stored in microseconds (nanoseconds are truncated) and read
// back in UTC, whatever zone they were written in.
func testTimesComeBackUTC(t *testing.T, b *bundle) {
	zone := time.FixedZone("UTC+5", 5*3600)
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	want := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	local := at.In(zone)
	var c store.Chat
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		var err error
		c, err = tx.ChatUpdate(b.ctx, b.chat.ID, store.ChatPatch{UpdatedAt: store.Some(local), RequiresActionDeadlineAt: store.Some(&local)})
		return err
	})
	require.Equal(t, time.UTC, c.UpdatedAt.Location())
	require.Equal(t, want, c.UpdatedAt)
	require.Equal(t, want, *c.RequiresActionDeadlineAt)
	require.Equal(t, c, b.get(t, b.chat.ID))
}

func testEmptyPatchesReadTheRow(t *testing.T, b *bundle) {
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		c, err := tx.ChatUpdate(b.ctx, b.chat.ID, store.ChatPatch{})
		require.NoError(t, err)
		require.Equal(t, b.chat, c)
		_, err = tx.ChatUpdate(b.ctx, uuid.New(), store.ChatPatch{})
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = tx.MessageUpdate(b.ctx, b.chat.ID, 1, store.MessagePatch{})
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = tx.JournalUpdate(b.ctx, b.chat.ID, "call_none", store.JournalPatch{})
		require.ErrorIs(t, err, store.ErrNotFound)
		return nil
	}))
}

// The title query escapes LIKE metacharacters, backslash included.
func testChatListQuery(t *testing.T, b *bundle) {
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		_, err := tx.ChatUpdate(b.ctx, b.chat.ID, store.ChatPatch{Title: store.Some(`C:\Temp\x`)})
		return err
	})
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		cs, err := tx.ChatList(b.ctx, store.ChatListParams{Query: `c:\temp`})
		require.NoError(t, err)
		require.Len(t, cs, 1)
		cs, err = tx.ChatList(b.ctx, store.ChatListParams{Query: `c:\\temp`})
		require.NoError(t, err)
		require.Empty(t, cs)
		cs, err = tx.ChatList(b.ctx, store.ChatListParams{AfterID: uuid.NullUUID{UUID: uuid.New(), Valid: true}})
		require.NoError(t, err)
		require.Empty(t, cs, "an unknown cursor yields an empty page")
		return nil
	}))

	// Case folding is Unicode's, not ASCII's, on both stores.
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		_, err := tx.ChatUpdate(b.ctx, b.chat.ID, store.ChatPatch{Title: store.Some("Ärger im Büro")})
		return err
	})
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		cs, err := tx.ChatList(b.ctx, store.ChatListParams{Query: "ärger IM bÜro"})
		require.NoError(t, err)
		require.Len(t, cs, 1)
		return nil
	}))
}

// JSON columns hold JSON: Postgres's jsonb refuses anything else, and so
// does the SQLite store, whose columns are TEXT.
func testMalformedJSONRefused(t *testing.T, b *bundle) {
	bad := json.RawMessage(`{"unterminated":`)
	for name, write := range map[string]func(tx store.Tx) error{
		"message content": func(tx store.Tx) error {
			_, err := tx.MessageInsert(b.ctx, store.MessageInsertParams{ChatID: b.chat.ID, Role: store.RoleUser, Content: bad, Now: b.now})
			return err
		},
		"message patch": func(tx store.Tx) error {
			m := b.insertMessage(t, tx, b.chat.ID, store.RoleUser, "fine")
			_, err := tx.MessageUpdate(b.ctx, b.chat.ID, m.ID, store.MessagePatch{Content: store.Some(bad)})
			return err
		},
		"queued content": func(tx store.Tx) error {
			_, err := tx.QueueInsert(b.ctx, store.QueueInsertParams{ChatID: b.chat.ID, Content: bad, Now: b.now})
			return err
		},
		"chat dynamic tools": func(tx store.Tx) error {
			_, err := tx.ChatInsert(b.ctx, store.ChatInsertParams{ID: uuid.New(), OwnerID: b.user.ID,
				Status: store.ChatStatusWaiting, DynamicTools: bad, Now: b.now})
			return err
		},
		"chat patch": func(tx store.Tx) error {
			_, err := tx.ChatUpdate(b.ctx, b.chat.ID, store.ChatPatch{LastError: store.Some(bad)})
			return err
		},
		"invocation": func(tx store.Tx) error {
			return tx.InvocationInsert(b.ctx, store.Invocation{RequestID: uuid.New(), CallerID: b.user.ID,
				ContentSHA256: "00", Kind: "create_chat", ChatID: b.chat.ID, AuditID: uuid.New(),
				State: store.InvocationAdmitted, Response: bad, CreatedAt: b.now, UpdatedAt: b.now})
		},
		"journal": func(tx store.Tx) error {
			return tx.JournalStart(b.ctx, store.JournalEntry{ChatID: b.chat.ID, ToolCallID: "call_1",
				ToolName: "t", Effect: store.EffectPure, Args: bad, StartedAt: b.now})
		},
	} {
		err := b.tryTransition(b.chat.ID, write)
		require.ErrorIs(t, err, store.ErrInvariant, name)
	}
	require.Empty(t, b.messages(t, b.chat.ID))
}

// A chat's MCP server selection keeps three meanings apart: NULL (every
// configured server), an empty list (none) and a list, in its order.
func testChatMCPServerIDs(t *testing.T, b *bundle) {
	one, two := uuid.New(), uuid.New()
	require.Nil(t, b.chat.MCPServerIDs, "no selection is NULL")
	none := b.newChat(t, func(p *store.ChatInsertParams) { p.MCPServerIDs = []uuid.UUID{} })
	require.NotNil(t, none.MCPServerIDs, "an empty selection is not NULL")
	require.Empty(t, none.MCPServerIDs)
	require.Equal(t, none, b.get(t, none.ID))
	some := b.newChat(t, func(p *store.ChatInsertParams) { p.MCPServerIDs = []uuid.UUID{two, one} })
	require.Equal(t, []uuid.UUID{two, one}, some.MCPServerIDs)
	require.Equal(t, some, b.get(t, some.ID))

	patch := func(ids []uuid.UUID) store.Chat {
		t.Helper()
		var c store.Chat
		b.transition(t, b.chat.ID, func(tx store.Tx) error {
			var err error
			c, err = tx.ChatUpdate(b.ctx, b.chat.ID, store.ChatPatch{MCPServerIDs: store.Some(ids)})
			return err
		})
		require.Equal(t, c, b.get(t, b.chat.ID))
		return c
	}
	require.Equal(t, []uuid.UUID{one}, patch([]uuid.UUID{one}).MCPServerIDs)
	c := patch([]uuid.UUID{})
	require.NotNil(t, c.MCPServerIDs)
	require.Empty(t, c.MCPServerIDs)
	require.Nil(t, patch(nil).MCPServerIDs, "a nil selection writes NULL")
	patch([]uuid.UUID{one, two})
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		_, err := tx.ChatUpdate(b.ctx, b.chat.ID, store.ChatPatch{Title: store.Some("other")})
		return err
	})
	require.Equal(t, []uuid.UUID{one, two}, b.get(t, b.chat.ID).MCPServerIDs, "an unset field is left alone")

	// Lists carry it too.
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		cs, err := tx.ChatList(b.ctx, store.ChatListParams{})
		require.NoError(t, err)
		byID := map[uuid.UUID]store.Chat{}
		for _, c := range cs {
			byID[c.ID] = c
		}
		require.Equal(t, []uuid.UUID{one, two}, byID[b.chat.ID].MCPServerIDs)
		require.NotNil(t, byID[none.ID].MCPServerIDs)
		require.Empty(t, byID[none.ID].MCPServerIDs)
		many, err := tx.ChatGetMany(b.ctx, []uuid.UUID{some.ID})
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{two, one}, many[0].MCPServerIDs)
		return nil
	}))

	// The database refuses a selection that is not a list of ids.
	err := b.tryTransition(b.chat.ID, func(tx store.Tx) error {
		_, err := b.exec(b.ctx, tx, q(b.s,
			`UPDATE chats SET mcp_server_ids = '{"a":1}' WHERE id = ?`,
			`UPDATE chats SET mcp_server_ids = ARRAY[NULL]::uuid[] WHERE id = $1`), b.chat.ID.String())
		return err
	})
	require.ErrorIs(t, err, store.ErrInvariant)
	require.Equal(t, []uuid.UUID{one, two}, b.get(t, b.chat.ID).MCPServerIDs)
}

// A chat's approval policy defaults to never and takes the three policies;
// its approval round is NULL or a JSON object, and the database refuses
// anything else.
func testChatToolApproval(t *testing.T, b *bundle) {
	require.Equal(t, store.ApprovalNever, b.chat.ToolApproval, "an unset policy is never")
	require.Nil(t, b.chat.ToolApprovals, "no approval round is NULL")
	strict := b.newChat(t, func(p *store.ChatInsertParams) { p.ToolApproval = store.ApprovalAlways })
	require.Equal(t, store.ApprovalAlways, strict.ToolApproval)
	require.Equal(t, strict, b.get(t, strict.ID))

	round := json.RawMessage(`{"history_version":1,"calls":[{"tool_call_id":"c1","state":"pending"}]}`)
	var c store.Chat
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		var err error
		c, err = tx.ChatUpdate(b.ctx, b.chat.ID, store.ChatPatch{
			ToolApproval: store.Some(store.ApprovalEffectful), ToolApprovals: store.Some(round),
		})
		return err
	})
	require.Equal(t, store.ApprovalEffectful, c.ToolApproval)
	require.JSONEq(t, string(round), string(c.ToolApprovals))
	require.Equal(t, c, b.get(t, b.chat.ID))
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		var err error
		c, err = tx.ChatUpdate(b.ctx, b.chat.ID, store.ChatPatch{ToolApprovals: store.Some[json.RawMessage](nil)})
		return err
	})
	require.Nil(t, c.ToolApprovals, "a nil round writes NULL")
	require.Equal(t, store.ApprovalEffectful, c.ToolApproval, "an unset field is left alone")

	for _, bad := range []string{
		`UPDATE chats SET tool_approval = 'sometimes' WHERE id = ?`,
		`UPDATE chats SET tool_approvals = '[1]' WHERE id = ?`,
	} {
		err := b.tryTransition(b.chat.ID, func(tx store.Tx) error {
			_, err := b.exec(b.ctx, tx, q(b.s, bad, bad[:len(bad)-1]+"$1"), b.chat.ID.String())
			return err
		})
		require.ErrorIs(t, err, store.ErrInvariant, bad)
	}
	require.Equal(t, c, b.get(t, b.chat.ID))
}

func testChatListArchivable(t *testing.T, b *bundle) {
	cutoff := b.now.Add(-24 * time.Hour)
	old, recent := cutoff.Add(-time.Hour), cutoff
	chat := func(status store.ChatStatus, created time.Time, parent *store.Chat) store.Chat {
		return b.newChat(t, func(p *store.ChatInsertParams) {
			p.Status, p.Now = status, created
			if parent != nil {
				p.ParentChatID = uuid.NullUUID{UUID: parent.ID, Valid: true}
				p.RootChatID = uuid.NullUUID{UUID: parent.Root(), Valid: true}
			}
		})
	}
	message := func(c store.Chat, at time.Time) store.Message {
		var m store.Message
		b.transition(t, c.ID, func(tx store.Tx) error {
			var err error
			m, err = tx.MessageInsert(b.ctx, store.MessageInsertParams{ChatID: c.ID, Role: "user", Content: b.text("hi"), Now: at})
			return err
		})
		return m
	}
	patch := func(c store.Chat, p store.ChatPatch) {
		b.transition(t, c.ID, func(tx store.Tx) error {
			_, err := tx.ChatUpdate(b.ctx, c.ID, p)
			return err
		})
	}

	idle := chat(store.ChatStatusWaiting, old.Add(-3*time.Hour), nil)
	oldMessage := chat(store.ChatStatusWaiting, old.Add(-2*time.Hour), nil)
	message(oldMessage, old)
	failed := chat(store.ChatStatusError, old.Add(-time.Hour), nil)
	deletedRecent := chat(store.ChatStatusWaiting, old, nil)
	m := message(deletedRecent, recent)
	b.transition(t, deletedRecent.ID, func(tx store.Tx) error {
		_, err := tx.MessageUpdate(b.ctx, deletedRecent.ID, m.ID, store.MessagePatch{Deleted: store.Some(true)})
		return err
	})
	oldChild := chat(store.ChatStatusWaiting, old, &idle)
	message(oldChild, old)

	recentMessage := chat(store.ChatStatusWaiting, old, nil)
	message(recentMessage, recent)
	childMessaged := chat(store.ChatStatusWaiting, old, nil)
	grandchild := chat(store.ChatStatusWaiting, old, &childMessaged)
	message(chat(store.ChatStatusWaiting, old, &grandchild), recent)
	childRunning := chat(store.ChatStatusWaiting, old, nil)
	chat(store.ChatStatusRunning, old, &childRunning)
	pinned := chat(store.ChatStatusWaiting, old, nil)
	patch(pinned, store.ChatPatch{PinOrder: store.Some(int64(1))})
	archived := chat(store.ChatStatusWaiting, old, nil)
	patch(archived, store.ChatPatch{Archived: store.Some(true)})
	chat(store.ChatStatusRunning, old, nil)
	chat(store.ChatStatusInterrupting, old, nil)
	chat(store.ChatStatusRequiresAction, old, nil)
	chat(store.ChatStatusWaiting, cutoff, nil) // created at the cutoff is not before it

	list := func(p store.ArchivableParams) []uuid.UUID {
		ids := []uuid.UUID{}
		require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			cs, err := tx.ChatListArchivable(b.ctx, p)
			for _, c := range cs {
				ids = append(ids, c.ID)
			}
			return err
		}))
		return ids
	}
	require.Equal(t, []uuid.UUID{idle.ID, oldMessage.ID, failed.ID, deletedRecent.ID},
		list(store.ArchivableParams{Cutoff: cutoff}), "oldest first; only old, unused, idle root families")
	require.Equal(t, []uuid.UUID{idle.ID, oldMessage.ID}, list(store.ArchivableParams{Cutoff: cutoff, Limit: 2}))
	require.Contains(t, list(store.ArchivableParams{Cutoff: recent.Add(time.Microsecond)}), recentMessage.ID,
		"a later cutoff makes the message old")

	newest := func(id uuid.UUID) (time.Time, bool) {
		var (
			at time.Time
			ok bool
		)
		require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			var err error
			at, ok, err = tx.MessageNewestInFamily(b.ctx, id)
			return err
		}))
		return at, ok
	}
	at, ok := newest(childMessaged.ID)
	require.True(t, ok)
	require.True(t, recent.Equal(at), "a grandchild's message counts for its root: %s", at)
	at, ok = newest(idle.ID)
	require.True(t, ok)
	require.True(t, old.Equal(at))
	_, ok = newest(deletedRecent.ID)
	require.False(t, ok, "deleted messages do not count")
	_, ok = newest(uuid.New())
	require.False(t, ok)
}

// MCP servers: insert, read, list by name, replace, delete; ids and names
// are unique; spec must be a JSON object; secrets round-trip as bytes.
func testMCPServers(t *testing.T, b *bundle) {
	later := b.now.Add(time.Minute)
	fs := store.MCPServer{
		ID: uuid.New(), Name: "fs", Source: store.MCPSourceConfigFile, Enabled: true, Transport: store.MCPTransportStdio,
		Spec: json.RawMessage(`{"command":"npx","args":["-y","x"]}`), Secrets: []byte{0, 1, 2, 255},
		CreatedAt: b.now, UpdatedAt: b.now,
	}
	web := store.MCPServer{
		ID: uuid.New(), Name: "alpha", Source: store.MCPSourceDatabase, Transport: store.MCPTransportHTTP,
		Spec: json.RawMessage(`{"url":"https://example.com/mcp"}`), CreatedAt: b.now, UpdatedAt: b.now,
	}
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		list, err := tx.MCPServerList(b.ctx)
		require.NoError(t, err)
		require.NotNil(t, list)
		require.Empty(t, list)
		got, err := tx.MCPServerInsert(b.ctx, fs)
		require.NoError(t, err)
		require.JSONEq(t, string(fs.Spec), string(got.Spec))
		require.Equal(t, fs.Secrets, got.Secrets)
		require.True(t, got.Enabled)
		_, err = tx.MCPServerInsert(b.ctx, web)
		return err
	}))
	require.NoError(t, b.s.ReadTx(b.ctx, func(r store.Reader) error {
		list, err := r.MCPServerList(b.ctx)
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.Equal(t, "alpha", list[0].Name, "listed by name")
		require.Nil(t, list[0].Secrets, "no secrets reads back as nil")
		require.False(t, list[0].Enabled)
		got, err := r.MCPServerGet(b.ctx, fs.ID)
		require.NoError(t, err)
		require.Equal(t, fs.Name, got.Name)
		require.Equal(t, store.MCPSourceConfigFile, got.Source)
		require.Equal(t, b.now, got.CreatedAt)
		_, err = r.MCPServerGet(b.ctx, uuid.New())
		require.ErrorIs(t, err, store.ErrNotFound)
		return nil
	}))
	for name, dup := range map[string]store.MCPServer{
		"same id":   {ID: fs.ID, Name: "other", Source: store.MCPSourceDatabase, Transport: store.MCPTransportStdio, Spec: json.RawMessage(`{}`), CreatedAt: b.now, UpdatedAt: b.now},
		"same name": {ID: uuid.New(), Name: "fs", Source: store.MCPSourceDatabase, Transport: store.MCPTransportStdio, Spec: json.RawMessage(`{}`), CreatedAt: b.now, UpdatedAt: b.now},
	} {
		err := b.s.InTx(b.ctx, func(tx store.Tx) error { _, err := tx.MCPServerInsert(b.ctx, dup); return err })
		require.ErrorIs(t, err, store.ErrConflict, name)
	}
	for _, spec := range []string{`[1]`, `{"a":`} {
		bad := web
		bad.ID, bad.Name, bad.Spec = uuid.New(), "bad", json.RawMessage(spec)
		err := b.s.InTx(b.ctx, func(tx store.Tx) error { _, err := tx.MCPServerInsert(b.ctx, bad); return err })
		require.Error(t, err, "spec %s is refused", spec)
	}

	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		edit := fs
		edit.Name, edit.Source, edit.CreatedAt = "renamed", store.MCPSourceDatabase, later // ignored
		edit.Enabled, edit.Transport, edit.Spec, edit.Secrets, edit.UpdatedAt = false, store.MCPTransportHTTP, json.RawMessage(`{"url":"http://x"}`), nil, later
		got, err := tx.MCPServerUpdate(b.ctx, edit)
		require.NoError(t, err)
		require.Equal(t, "fs", got.Name)
		require.Equal(t, store.MCPSourceConfigFile, got.Source)
		require.Equal(t, b.now, got.CreatedAt)
		require.Equal(t, later, got.UpdatedAt)
		require.False(t, got.Enabled)
		require.Equal(t, store.MCPTransportHTTP, got.Transport)
		require.JSONEq(t, `{"url":"http://x"}`, string(got.Spec))
		require.Nil(t, got.Secrets)
		missing := edit
		missing.ID = uuid.New()
		_, err = tx.MCPServerUpdate(b.ctx, missing)
		require.ErrorIs(t, err, store.ErrNotFound)

		n, err := tx.MCPServerDelete(b.ctx, fs.ID)
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		n, err = tx.MCPServerDelete(b.ctx, fs.ID)
		require.NoError(t, err)
		require.Zero(t, n)
		list, err := tx.MCPServerList(b.ctx)
		require.NoError(t, err)
		require.Len(t, list, 1)
		return nil
	}))
}
