package worker

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// waitTask waits for the runner's active goroutine to return.
func waitTask(t *testing.T, r *runner) {
	t.Helper()
	require.NotNil(t, r.active)
	select {
	case <-r.active.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the generation goroutine did not return")
	}
}

// A reply that calls no tool ends its turn in the transaction that stores
// it, and gives the waiting chat up there too; a reply with a tool call
// keeps its next step, and a queued prompt is promoted on the same runner.
func TestReplyFinishesTurnInItsStep(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		setup := func(t *testing.T) *fixture {
			t.Parallel()
			return setupOn(t, newStore(t), Config{BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond})
		}
		start := func(t *testing.T, g *fixture) (store.Chat, *runner) {
			id := g.create("hello")
			rid, c := g.acquire(id)
			r, ctx := g.runner(id, rid)
			r.process(ctx, eventFromChat(c))
			g.provider.next(t)
			return c, r
		}

		t.Run("plain reply", func(t *testing.T) {
			g := setup(t)
			c, r := start(t, g)
			g.provider.answer("hi")
			waitTask(t, r)
			after := g.chat(c.ID)
			require.Equal(t, store.ChatStatusWaiting, after.Status, "the step's commit finished the turn")
			require.False(t, after.WorkerID.Valid, "and gave the waiting chat up")
			require.False(t, after.RunnerID.Valid)
			ms := g.messages(c.ID)
			require.Equal(t, store.RoleAssistant, ms[len(ms)-1].Role)
			require.Equal(t, "hi", partsOf(t, ms[len(ms)-1])[0].Text)
		})

		t.Run("tool call", func(t *testing.T) {
			g := setup(t)
			c, r := start(t, g)
			g.provider.answers <- providerResult{resp: llm.Response{Parts: []sdk.ChatMessagePart{{
				Type: sdk.PartToolCall, ToolCallID: "call-1", ToolName: "nope", Args: []byte(`{}`),
			}}, FinishReason: "tool_calls"}}
			waitTask(t, r)
			require.Equal(t, store.ChatStatusRunning, g.chat(c.ID).Status, "the call is answered in a step of its own")
		})

		t.Run("queued prompt", func(t *testing.T) {
			g := setup(t)
			c, r := start(t, g)
			g.do(func(t *chatstate.Tx) error {
				_, err := t.SendMessage(c.ID, chatstate.UserInput{Content: sdk.Text("next")}, chatstate.BusyQueue)
				return err
			})
			g.provider.answer("hi")
			waitTask(t, r)
			after := g.chat(c.ID)
			require.Equal(t, store.ChatStatusRunning, after.Status, "the queue head starts the next turn")
			require.Equal(t, c.WorkerID, after.WorkerID, "on the same runner")
			ms := g.messages(c.ID)
			require.Equal(t, "next", partsOf(t, ms[len(ms)-1])[0].Text, "promoted after the reply")
			var queued []store.QueuedMessage
			require.NoError(t, g.store.ReadTx(context.Background(), func(tx store.Reader) error {
				var err error
				queued, err = tx.QueueList(context.Background(), c.ID)
				return err
			}))
			require.Empty(t, queued)
		})
	})
}

// A turn that gives its chat up frees a slot of the concurrent agent
// limit, which nothing publishes: the runner wakes the acquisition loop
// itself, so a chat waiting for the slot is not left for the next timed
// pass (AcquireInterval).
func TestFinishedTurnWakesAcquisition(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		g := setupLimiter(t, newStore(t), Config{RootLimit: 1})
		a, b := g.create("chat a"), g.create("chat b")
		require.Equal(t, 1, g.w.AcquirePass(g.ctx))
		owned, unowned := g.owned(a, b)
		require.Len(t, unowned, 1)
		g.provider.next(t)
		// Drop the wakes so far (the creates' ownership hints).
		select {
		case <-g.w.wake:
		default:
		}
		g.provider.answer("done")
		eventually(t, func() bool {
			c := g.peek(owned[0])
			return c.Status == store.ChatStatusWaiting && !c.WorkerID.Valid
		}, "the first chat finishes and releases its slot")
		// The runner wakes the loop right after its commit returns.
		select {
		case <-g.w.wake:
		case <-time.After(10 * time.Second):
			t.Fatal("the released slot did not wake the acquisition loop")
		}
		require.Equal(t, 1, g.w.AcquirePass(g.ctx), "the freed slot admits the waiting chat")
		g.provider.next(t)
		g.provider.answer("done too")
		eventually(t, func() bool { return g.peek(unowned[0]).Status == store.ChatStatusWaiting }, "the second chat finishes")
	})
}
