package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/chatd/chatd/store"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

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
