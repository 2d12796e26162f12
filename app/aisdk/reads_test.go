package aisdk

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// TestStoreReads: the reads a resume (and a send) makes without the API,
// on both stores. madeChat tells the chat a client chat id's create
// request made apart from a deleted one, from no request, and from what
// only the API's lookup answers; latestUserMessage finds the running
// turn's user message however many messages follow it, a page at a time.
func TestStoreReads(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		ctx := context.Background()
		s := newStore(t)
		h := &Handler{deps: Deps{Store: s}}
		now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
		write := func(fn func(tx store.Tx) error) {
			t.Helper()
			require.NoError(t, s.InTx(ctx, fn))
		}
		var alice, bob store.User
		write(func(tx store.Tx) (err error) {
			if alice, err = tx.UserInsert(ctx, store.UserInsertParams{ID: uuid.New(), Name: "alice", Now: now}); err != nil {
				return err
			}
			bob, err = tx.UserInsert(ctx, store.UserInsertParams{ID: uuid.New(), Name: "bob", Now: now})
			return err
		})
		newChat := func(owner uuid.UUID) store.Chat {
			var c store.Chat
			write(func(tx store.Tx) (err error) {
				c, err = tx.ChatInsert(ctx, store.ChatInsertParams{ID: uuid.New(), OwnerID: owner, Title: "c",
					TitleSource: store.TitleSourceFallback, Status: store.ChatStatusRunning, Now: now})
				return err
			})
			return c
		}
		request := func(caller, chatID uuid.UUID) uuid.UUID {
			rid := uuid.New()
			write(func(tx store.Tx) error {
				return tx.InvocationInsert(ctx, store.Invocation{RequestID: rid, CallerID: caller, ContentSHA256: "00",
					Kind: "create_chat", ChatID: chatID, AuditID: uuid.New(), State: store.InvocationCompleted,
					Response: json.RawMessage(`{}`), CreatedAt: now, UpdatedAt: now})
			})
			return rid
		}
		check := func(user, rid uuid.UUID, wantID uuid.UUID, want made) {
			t.Helper()
			id, got, err := h.madeChat(ctx, user, rid)
			require.NoError(t, err)
			require.Equal(t, want, got)
			require.Equal(t, wantID, id)
		}

		// Nothing admitted under the id.
		check(alice.ID, uuid.New(), uuid.Nil, chatNone)
		// Alice's chat, and the same chat once deleted.
		live := newChat(alice.ID)
		rid := request(alice.ID, live.ID)
		check(alice.ID, rid, live.ID, chatLive)
		write(func(tx store.Tx) error { return tx.ChatDelete(ctx, live.ID) })
		check(alice.ID, rid, live.ID, chatDeleted)
		// Another caller's request, and a chat alice does not own: the API
		// answers those.
		check(bob.ID, request(alice.ID, newChat(alice.ID).ID), uuid.Nil, chatUnclear)
		check(alice.ID, request(alice.ID, newChat(bob.ID).ID), uuid.Nil, chatUnclear)

		// latestUserMessage.
		chat := newChat(alice.ID)
		insert := func(role, visibility string) int64 {
			var m store.Message
			write(func(tx store.Tx) (err error) {
				if _, err := tx.ChatLock(ctx, chat.ID); err != nil {
					return err
				}
				if _, err := tx.ChatBumpSnapshot(ctx, chat.ID); err != nil {
					return err
				}
				m, err = tx.MessageInsert(ctx, store.MessageInsertParams{ChatID: chat.ID, Role: role,
					Content: json.RawMessage(`[{"type":"text","text":"x"}]`), Visibility: visibility, Now: now})
				return err
			})
			return m.ID
		}
		latest := func() int64 {
			t.Helper()
			var id int64
			require.NoError(t, s.ReadTx(ctx, func(tx store.Reader) (err error) {
				id, err = latestUserMessage(ctx, tx, chat.ID)
				return err
			}))
			return id
		}
		require.Zero(t, latest(), "an empty chat has none")
		insert(store.RoleAssistant, store.VisibilityBoth)
		require.Zero(t, latest(), "a chat without a user message has none (every page read)")
		insert(store.RoleUser, store.VisibilityBoth)
		insert(store.RoleAssistant, store.VisibilityBoth)
		turn := insert(store.RoleUser, store.VisibilityBoth)
		require.Equal(t, turn, latest())
		for i := range 80 {
			if i == 40 {
				// A model-only row (a summary) is not one people see.
				insert(store.RoleUser, store.VisibilityModel)
			}
			insert(store.RoleAssistant, store.VisibilityBoth)
			insert(store.RoleTool, store.VisibilityBoth)
		}
		require.Equal(t, turn, latest(), "found past 160 replies, beyond several pages")
	})
}
