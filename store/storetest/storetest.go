// Package storetest is the conformance suite every chatd store runs. Each
// behaviour is tested once here and must hold on SQLite and on Postgres:
// a difference between the two is a bug.
package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
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
		{"Elicitations", testElicitations}, {"ElicitationReleasesSlot", testElicitationReleasesSlot}, {"MCPOAuthTokens", testMCPOAuthTokens}, {"MCPUserOAuthTokens", testMCPUserOAuthTokens},
		{"OwnerCounts", testOwnerCounts},
		{"MessageTree", testMessageTree}, {"MessageTreePruned", testMessageTreePruned},
		{"UsageLedger", testUsageLedger}, {"UserBudgets", testUserBudgets},
		{"SystemPrompts", testSystemPrompts}, {"ChatImports", testChatImports},
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
