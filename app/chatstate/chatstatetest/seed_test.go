package chatstatetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/chatstate/chatstatetest"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// TestSeed: every Spec lands where it says, with the history, queue,
// owner and pending call it describes, on both stores.
func TestSeed(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		ctx := context.Background()
		s := newStore(t)
		m := chatstate.New(s, pubsub.NewMemory(), chatstate.Config{})
		var owner store.User
		require.NoError(t, s.InTx(ctx, func(tx store.Tx) error {
			var err error
			owner, err = tx.UserInsert(ctx, store.UserInsertParams{ID: uuid.New(), Name: "owner", Now: time.Now()})
			return err
		}))
		worker := uuid.New()
		messages := func(t *testing.T, id uuid.UUID) []store.Message {
			var ms []store.Message
			require.NoError(t, s.ReadTx(ctx, func(tx store.Reader) error {
				var err error
				ms, err = tx.MessageList(ctx, id, store.MessageListParams{})
				return err
			}))
			return ms
		}

		t.Run("every state", func(t *testing.T) {
			for _, st := range chatstate.AllStates {
				c := chatstatetest.Seed(t, m, s, chatstatetest.Spec{State: st, Owner: owner.ID, Worker: worker})
				require.Equal(t, st, c.State)
				if st == chatstate.StateN {
					continue
				}
				require.Equal(t, owner.ID, c.Row.OwnerID)
				require.Equal(t, chatstatetest.Title, c.Row.Title)
				require.NotZero(t, c.UserMessage, "%s has its first user message", st)
				if st.Runnable() {
					require.Equal(t, uuid.NullUUID{UUID: worker, Valid: true}, c.Row.WorkerID, "%s is owned by the worker", st)
				}
				switch st {
				case chatstate.StateR1, chatstate.StateI1, chatstate.StateA1, chatstate.StateE1, chatstate.StateXE1:
					require.Len(t, c.Queued, 1, st)
				default:
					require.Empty(t, c.Queued, st)
				}
				if st == chatstate.StateA0 || st == chatstate.StateA1 {
					require.NotEmpty(t, c.Call)
				} else {
					require.Empty(t, c.Call)
				}
			}
		})

		t.Run("variants", func(t *testing.T) {
			cases := []struct {
				name  string
				spec  chatstatetest.Spec
				check func(t *testing.T, c chatstatetest.Chat)
			}{
				{"empty W has no history", chatstatetest.Spec{State: chatstate.StateW, Empty: true}, func(t *testing.T, c chatstatetest.Chat) {
					require.Empty(t, messages(t, c.ID))
					require.False(t, c.Row.WorkerID.Valid)
				}},
				{"empty XW", chatstatetest.Spec{State: chatstate.StateXW, Empty: true}, func(t *testing.T, c chatstatetest.Chat) {
					require.Empty(t, messages(t, c.ID))
				}},
				{"turns", chatstatetest.Spec{State: chatstate.StateW, Turns: 2, Unowned: true}, func(t *testing.T, c chatstatetest.Chat) {
					ms := messages(t, c.ID)
					require.Len(t, ms, 4, "hello, reply 1, turn 2, reply 2")
					require.Equal(t, store.RoleAssistant, ms[3].Role)
					require.False(t, c.Row.WorkerID.Valid)
				}},
				{"two queued", chatstatetest.Spec{State: chatstate.StateA1, Queued: 2}, func(t *testing.T, c chatstatetest.Chat) {
					require.Len(t, c.Queued, 2)
					require.NotEmpty(t, c.Call)
				}},
				{"pending call while running", chatstatetest.Spec{State: chatstate.StateR0, Pending: true}, func(t *testing.T, c chatstatetest.Chat) {
					require.NotEmpty(t, c.Call)
				}},
				{"unowned runnable", chatstatetest.Spec{State: chatstate.StateI1, Unowned: true}, func(t *testing.T, c chatstatetest.Chat) {
					require.False(t, c.Row.WorkerID.Valid)
				}},
				{"compacting", chatstatetest.Spec{State: chatstate.StateR1, Compact: true, Turns: 1}, func(t *testing.T, c chatstatetest.Chat) {
					require.NotNil(t, c.Row.CompactionRequestedAt)
				}},
				{"invalid from A0", chatstatetest.Spec{State: chatstate.StateInvalid, Base: chatstate.StateA0}, func(t *testing.T, c chatstatetest.Chat) {
					require.Equal(t, store.ChatStatusRequiresAction, c.Row.Status)
					require.True(t, c.Row.Archived)
				}},
				{"labels and title", chatstatetest.Spec{State: chatstate.StateE0, Title: "mine", Labels: map[string]string{"k": "v"}}, func(t *testing.T, c chatstatetest.Chat) {
					require.Equal(t, "mine", c.Row.Title)
					require.Equal(t, map[string]string{"k": "v"}, c.Row.Labels)
					require.Contains(t, string(c.Row.LastError), chatstatetest.ErrorMessage)
				}},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					sp := tc.spec
					sp.Owner, sp.Worker = owner.ID, worker
					c := chatstatetest.Seed(t, m, s, sp)
					require.Equal(t, sp.State, c.State)
					tc.check(t, c)
				})
			}
		})
	})
}
