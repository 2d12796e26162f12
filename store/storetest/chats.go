package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/chatd/chatd/store"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

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
