package worker

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/chatstate/chatstatetest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// TestRunnerEventProcessing checks the ten rules of the spec's "Event
// processing" one loop iteration at a time: the test calls process as the
// runner loop would and inspects the goroutines it keeps.
func TestRunnerEventProcessing(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		setup := func(t *testing.T) *fixture {
			t.Parallel()
			return setupOn(t, newStore(t), Config{BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond})
		}

		// start acquires a running chat and processes its first event: the
		// generation goroutine calls the provider, which blocks.
		start := func(t *testing.T, g *fixture, text string) (id uuid.UUID, r *runner, ctx context.Context, first event, call providerCall) {
			id = g.create(text)
			rid, c := g.acquire(id)
			r, ctx = g.runner(id, rid)
			first = eventFromChat(c)
			r.process(ctx, first)
			require.NotNil(t, r.active, "a running chat gets a generation goroutine")
			call = g.provider.next(t)
			require.Equal(t, text, lastUserText(call.req))
			return id, r, ctx, first, call
		}

		t.Run("1 stale or duplicate snapshot is ignored", func(t *testing.T) {
			g := setup(t)
			_, r, ctx, first, call := start(t, g, "hello")
			active := r.active

			for _, snap := range []int64{first.SnapshotVersion, first.SnapshotVersion - 1} {
				ev := first
				ev.SnapshotVersion = snap
				ev.Status = store.ChatStatusInterrupting
				ev.HistoryVersion++
				r.process(ctx, ev)
				require.Same(t, active, r.active, "snapshot %d: the active goroutine stays", snap)
				require.Len(t, r.tasks, 1, "snapshot %d: nothing is spawned", snap)
				require.NoError(t, call.ctx.Err(), "snapshot %d: the generation is not cancelled", snap)
				require.Equal(t, first, r.last, "snapshot %d: the local state is not updated", snap)
			}
		})

		t.Run("2 ownership change asks for cleanup", func(t *testing.T) {
			cases := map[string]func(g *fixture, id uuid.UUID){
				"another runner": func(g *fixture, id uuid.UUID) { g.acquire(id) },
				"abandoned": func(g *fixture, id uuid.UUID) {
					g.do(func(t *chatstate.Tx) error { _, err := t.Abandon(id); return err })
				},
				"another worker": func(g *fixture, id uuid.UUID) {
					g.do(func(t *chatstate.Tx) error { _, err := t.Acquire(id, uuid.New(), uuid.New()); return err })
				},
			}
			for name, change := range cases {
				t.Run(name, func(t *testing.T) {
					g := setup(t)
					id, r, ctx, _, _ := start(t, g, "hello")
					change(g, id)
					r.process(ctx, g.event(id))
					select {
					case <-ctx.Done():
					default:
						t.Fatal("the runner did not request its cleanup")
					}
					require.Len(t, r.tasks, 1, "no goroutine is spawned for a chat the runner lost")
				})
			}
		})

		t.Run("3 same history and status spawns nothing", func(t *testing.T) {
			g := setup(t)
			id, r, ctx, first, call := start(t, g, "hello")
			active := r.active
			// Queueing a message moves snapshot and queue versions only.
			g.do(func(t *chatstate.Tx) error {
				_, err := t.SendMessage(id, chatstate.UserInput{Content: sdk.Text("later")}, chatstate.BusyQueue)
				return err
			})
			ev := g.event(id)
			require.Greater(t, ev.SnapshotVersion, first.SnapshotVersion)
			require.Equal(t, first.HistoryVersion, ev.HistoryVersion)
			r.process(ctx, ev)
			require.Same(t, active, r.active)
			require.Len(t, r.tasks, 1)
			require.NoError(t, call.ctx.Err(), "the generation keeps running")
			require.Equal(t, ev, r.last, "the local state follows the processed event")
		})

		t.Run("4 new history version cancels the generation and restarts it", func(t *testing.T) {
			g := setup(t)
			id, r, ctx, first, call := start(t, g, "hello")
			old := r.active
			var userID int64
			for _, m := range g.messages(id) {
				if m.Role == store.RoleUser {
					userID = m.ID
				}
			}
			g.do(func(t *chatstate.Tx) error {
				_, err := t.EditMessage(id, userID, chatstate.UserInput{Content: sdk.Text("edited")})
				return err
			})
			ev := g.event(id)
			require.Greater(t, ev.HistoryVersion, first.HistoryVersion)
			r.process(ctx, ev)
			require.Error(t, call.ctx.Err(), "the old generation is cancelled at once")
			require.NotSame(t, old, r.active, "a new generation goroutine is active")
			next := g.provider.next(t)
			require.Equal(t, "edited", lastUserText(next.req), "the new generation works on the new history")

			// 5: once the cancelled goroutine has finished, the next
			// iteration forgets it.
			eventually(t, old.finished, "the cancelled generation exits")
			g.do(func(t *chatstate.Tx) error {
				_, err := t.SendMessage(id, chatstate.UserInput{Content: sdk.Text("later")}, chatstate.BusyQueue)
				return err
			})
			ev = g.event(id)
			ev.Status = store.ChatStatusInterrupting // a different status so the iteration gets to rule 5
			r.process(ctx, ev)
			for _, tk := range r.tasks {
				require.NotSame(t, old, tk, "finished goroutines are removed")
			}
		})

		t.Run("4 new status cancels the generation; 8 interrupting finishes the interruption", func(t *testing.T) {
			g := setup(t)
			id, r, ctx, _, call := start(t, g, "hello")
			old := r.active
			g.do(func(t *chatstate.Tx) error { _, err := t.Interrupt(id); return err })
			ev := g.event(id)
			require.Equal(t, store.ChatStatusInterrupting, ev.Status)
			r.process(ctx, ev)
			require.Error(t, call.ctx.Err(), "the generation is cancelled at once")
			require.NotSame(t, old, r.active)
			eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting },
				"the interrupt goroutine applies FinishInterruption")
			require.Len(t, g.messages(id), 1, "nothing was streamed, so no partial message")
		})

		t.Run("6 archived abandons", func(t *testing.T) {
			g := setup(t)
			id := g.create("")
			rid, _ := g.acquire(id)
			g.do(func(t *chatstate.Tx) error { _, err := t.SetArchived(id, true); return err })
			r, ctx := g.runner(id, rid)
			r.process(ctx, g.event(id))
			eventually(t, func() bool { return !g.peek(id).WorkerID.Valid }, "the archived chat is abandoned")
		})

		t.Run("6 archived wins over running", func(t *testing.T) {
			g := setup(t)
			id := g.create("hello")
			rid, c := g.acquire(id)
			r, ctx := g.runner(id, rid)
			ev := eventFromChat(c)
			ev.Archived = true
			r.process(ctx, ev)
			active := r.active
			require.NotNil(t, active)
			eventually(t, active.finished, "the abandon goroutine finishes")
			require.False(t, g.chat(id).WorkerID.Valid, "the chat is abandoned")
			require.Empty(t, g.provider.calls, "no generation ran")
		})

		t.Run("7 running generates and commits the reply, which ends the turn", func(t *testing.T) {
			g := setup(t)
			id, _, _, _, _ := start(t, g, "hello")
			g.provider.answer("hi there")
			eventually(t, func() bool { return len(g.peekMessages(id)) == 2 }, "the reply is committed")
			ms := g.messages(id)
			require.Equal(t, store.RoleAssistant, ms[1].Role)
			require.Equal(t, "hi there", partsOf(t, ms[1])[0].Text)
			// A reply without tool calls finishes the turn in its own
			// commit (one transaction: CommitStep, FinishTurn).
			require.Equal(t, store.ChatStatusWaiting, g.chat(id).Status, "the reply's commit finishes the turn")
		})

		t.Run("9 requires_action cancels the action after the deadline", func(t *testing.T) {
			g := setup(t)
			seeded, rid := g.seed(chatstatetest.Spec{
				State: chatstate.StateA0, DynamicTools: []sdk.DynamicTool{{Name: chatstatetest.ActionTool}},
			})
			id := seeded.ID
			c := g.chat(id)
			require.Equal(t, store.ChatStatusRequiresAction, c.Status)
			require.NotNil(t, c.RequiresActionDeadlineAt)
			require.WithinDuration(t, g.clock.Now().Add(rigActionTimeout), *c.RequiresActionDeadlineAt, time.Millisecond)

			r, ctx := g.runner(id, rid)
			r.process(ctx, eventFromChat(c))
			waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			require.NoError(t, g.clock.BlockUntil(waitCtx, 1), "the timeout goroutine waits on the clock")

			g.clock.Advance(rigActionTimeout - time.Second)
			require.Equal(t, 1, g.clock.Waiters(), "the deadline has not passed")
			require.Equal(t, store.ChatStatusRequiresAction, g.chat(id).Status)

			g.clock.Advance(time.Second)
			eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusRunning },
				"CancelRequiresAction resumes the chat")
			ms := g.messages(id)
			last := partsOf(t, ms[len(ms)-1])
			require.Len(t, last, 1)
			require.Equal(t, sdk.PartToolResult, last[0].Type)
			require.Equal(t, seeded.Call, last[0].ToolCallID)
			require.True(t, last[0].IsError, "the call gets a synthetic cancellation")
		})

		t.Run("10 waiting or error abandons", func(t *testing.T) {
			finished := map[string]chatstate.State{"waiting": chatstate.StateW, "error": chatstate.StateE0}
			for name, st := range finished {
				t.Run(name, func(t *testing.T) {
					g := setup(t)
					seeded, rid := g.seed(chatstatetest.Spec{State: st})
					id := seeded.ID
					r, ctx := g.runner(id, rid)
					r.process(ctx, g.event(id))
					eventually(t, func() bool { return !g.peek(id).WorkerID.Valid }, "the %s chat is abandoned", name)
					require.Empty(t, g.provider.calls)
				})
			}
		})
	})
}

// TestRunnerBootstrapMissesNoUpdate: a runner subscribes to chat:update
// and then reads the chat, so a transition that commits between the
// acquisition and the subscription still reaches it (spec: "Chat runner":
// "During bootstrap, it must first subscribe to the channel and then fetch
// the initial state of the chat from the database to avoid missing any
// updates"). The sync loop is not running here, so only the bootstrap read
// can deliver the interrupt.
func TestRunnerBootstrapMissesNoUpdate(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		g := setupOn(t, newStore(t), Config{})
		id := g.create("hello")
		interrupted := make(chan error, 1)
		g.w.deps.Pubsub = hookSubscriber{Subscriber: g.pubsub, before: func(channel string) {
			if channel != "chat:update:"+id.String() {
				return
			}
			// An interrupt lands after Acquire committed, before the
			// runner listens.
			interrupted <- g.machine.Do(g.ctx, func(t *chatstate.Tx) error { _, err := t.Interrupt(id); return err })
		}}
		require.Equal(t, 1, g.w.AcquirePass(g.ctx))
		require.NoError(t, <-interrupted)
		require.Eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting }, 3*time.Second, 5*time.Millisecond,
			"the interrupt that committed before the runner subscribed was never processed (the chat stays interrupting)")
	})
}

// hookSubscriber runs before ahead of every subscription.
type hookSubscriber struct {
	Subscriber
	before func(channel string)
}

func (h hookSubscriber) Subscribe(ctx context.Context, channel string, fn func([]byte)) (func(), error) {
	h.before(channel)
	return h.Subscriber.Subscribe(ctx, channel, fn)
}
