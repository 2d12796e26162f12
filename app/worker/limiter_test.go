package worker

import (
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

// The concurrent agent limiter (spec: "Concurrent agent limiter") admits
// chats inside the acquisition transaction. These tests run acquisition
// passes by hand on the controlled clock, so leases only go stale when a
// test advances it; chats run the way the app runs them (leases on
// Postgres, in-memory ownership on SQLite).

// setupLimiter is setupOn with leases as the app sets them for s.
func setupLimiter(t *testing.T, s store.Store, cfg Config) *fixture {
	t.Helper()
	cfg.Leases = s.Dialect() == "postgres"
	cfg.LeaseTimeout = 30 * time.Second
	return setupOn(t, s, cfg)
}

// createChild makes a subagent chat of parent with a running first message.
func (g *fixture) createChild(parent uuid.UUID, text string) uuid.UUID {
	g.t.Helper()
	var id uuid.UUID
	g.do(func(t *chatstate.Tx) error {
		res, err := t.Create(chatstate.CreateParams{
			OwnerID: g.owner, ParentChatID: uuid.NullUUID{UUID: parent, Valid: true}, Title: text, TitleSource: store.TitleSourceUser,
			Input: chatstate.UserInput{Content: sdk.Text(text)},
		})
		id = res.Chat.ID
		return err
	})
	return id
}

// owned reports which of ids the fixture's worker owns.
func (g *fixture) owned(ids ...uuid.UUID) (owned, unowned []uuid.UUID) {
	g.t.Helper()
	for _, id := range ids {
		c := g.chat(id)
		switch {
		case c.WorkerID.Valid && c.WorkerID.UUID == g.w.id:
			owned = append(owned, id)
		case !c.WorkerID.Valid:
			unowned = append(unowned, id)
		default:
			g.t.Fatalf("chat %s is owned by another worker %s", id, c.WorkerID.UUID)
		}
	}
	return owned, unowned
}

func TestLimiterRootLimit(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		g := setupLimiter(t, newStore(t), Config{RootLimit: 1})
		a, b := g.create("chat a"), g.create("chat b")

		require.Equal(t, 1, g.w.AcquirePass(g.ctx), "one slot, one admission")
		owned, unowned := g.owned(a, b)
		require.Len(t, owned, 1)
		require.Len(t, unowned, 1)
		first, second := owned[0], unowned[0]
		call := g.provider.next(t)
		require.Equal(t, "chat "+map[uuid.UUID]string{a: "a", b: "b"}[first], lastUserText(call.req))

		require.Zero(t, g.w.AcquirePass(g.ctx), "the refused chat waits for capacity")
		require.False(t, g.chat(second).WorkerID.Valid, "a refused chat stays unowned")
		require.Equal(t, store.ChatStatusRunning, g.chat(second).Status)

		g.provider.answer("done")
		eventually(t, func() bool {
			c := g.peek(first)
			return c.Status == store.ChatStatusWaiting && !c.WorkerID.Valid
		}, "the first chat finishes and releases its slot")

		require.Equal(t, 1, g.w.AcquirePass(g.ctx), "the freed slot admits the waiting chat")
		owned, _ = g.owned(second)
		require.Equal(t, []uuid.UUID{second}, owned)
		g.provider.next(t)
		g.provider.answer("done too")
		eventually(t, func() bool { return g.peek(second).Status == store.ChatStatusWaiting }, "the second chat finishes")
	})
}

func TestLimiterSubagentPoolIsSeparate(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		g := setupLimiter(t, newStore(t), Config{RootLimit: 1, SubagentLimit: 1})
		parent := g.create("") // waiting: holds no slot
		r1, r2 := g.create("root 1"), g.create("root 2")
		c1, c2 := g.createChild(parent, "child 1"), g.createChild(parent, "child 2")

		require.Equal(t, 2, g.w.AcquirePass(g.ctx), "one root and one subagent are admitted")
		roots, _ := g.owned(r1, r2)
		children, _ := g.owned(c1, c2)
		require.Len(t, roots, 1, "the root pool holds one chat")
		require.Len(t, children, 1, "the subagent pool holds one chat, whatever the root pool holds")
		require.False(t, g.chat(parent).WorkerID.Valid)
		require.Zero(t, g.w.AcquirePass(g.ctx))

		var nRoots, nSubagents int64
		require.NoError(t, g.store.ReadTx(g.ctx, func(tx store.Reader) error {
			var err error
			nRoots, nSubagents, err = tx.ChatCountOwned(g.ctx, g.w.acquireParams())
			return err
		}))
		require.Equal(t, int64(1), nRoots)
		require.Equal(t, int64(1), nSubagents)
	})
}

func TestLimiterInterruptUnownedChatNeedsNoSlot(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		g := setupLimiter(t, newStore(t), Config{RootLimit: 1})
		a, b := g.create("chat a"), g.create("chat b")
		require.Equal(t, 1, g.w.AcquirePass(g.ctx))
		owned, unowned := g.owned(a, b)
		running, waiting := owned[0], unowned[0]
		call := g.provider.next(t)

		var res chatstate.Result
		g.do(func(t *chatstate.Tx) error {
			var err error
			res, err = t.Interrupt(waiting)
			return err
		})
		require.Equal(t, chatstate.StateW, res.State, "an unowned chat finishes its interruption at once")
		c := g.chat(waiting)
		require.Equal(t, store.ChatStatusWaiting, c.Status)
		require.False(t, c.WorkerID.Valid, "without taking a slot")
		require.Zero(t, g.w.AcquirePass(g.ctx), "nothing is left to admit")

		require.NoError(t, call.ctx.Err(), "the admitted chat keeps running")
		owned, _ = g.owned(running)
		require.Equal(t, []uuid.UUID{running}, owned)
		require.Empty(t, g.provider.calls, "the interrupted chat never called the model")
	})
}

// TestLimiterStaleLeaseFreesItsSlot: a chat holds its slot while its
// owner's heartbeat is fresh; once the lease is stale, admission counts
// the slot free, and the takeover rechecks the lease under the lock.
func TestLimiterStaleLeaseFreesItsSlot(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		g := setupOn(t, newStore(t), Config{RootLimit: 1, Leases: true, LeaseTimeout: 30 * time.Second})
		a, b := g.create("chat a"), g.create("chat b")
		require.Equal(t, 1, g.w.AcquirePass(g.ctx))
		g.provider.next(t)
		require.Zero(t, g.w.AcquirePass(g.ctx))

		g.elapse(29 * time.Second)
		require.Zero(t, g.w.AcquirePass(g.ctx), "a fresh lease keeps its slot")

		g.elapse(2 * time.Second)
		require.Equal(t, 1, g.w.AcquirePass(g.ctx), "a stale lease frees its slot for exactly one chat")
		var fresh int
		for _, id := range []uuid.UUID{a, b} {
			if c := g.chat(id); g.leaseFresh(c.ID, c.RunnerID.UUID, 30*time.Second) {
				fresh++
			}
		}
		require.Equal(t, 1, fresh, "one chat holds a fresh lease")
	})
}

func heartbeatOf(g *fixture, c store.Chat) (time.Time, error) {
	var at time.Time
	err := g.store.ReadTx(g.ctx, func(tx store.Reader) error {
		var err error
		at, err = tx.HeartbeatAt(g.ctx, c.ID, c.RunnerID.UUID)
		return err
	})
	return at, err
}

// user adds a user and returns its id.
func (g *fixture) user(name string) uuid.UUID {
	g.t.Helper()
	id := uuid.New()
	require.NoError(g.t, g.store.InTx(g.ctx, func(tx store.Tx) error {
		_, err := tx.UserInsert(g.ctx, store.UserInsertParams{ID: id, Name: name + "-" + id.String()[:8], Now: g.clock.Now()})
		return err
	}))
	return id
}

// createFor makes a running chat owned by owner.
func (g *fixture) createFor(owner uuid.UUID, text string) uuid.UUID {
	g.t.Helper()
	var id uuid.UUID
	g.do(func(t *chatstate.Tx) error {
		res, err := t.Create(chatstate.CreateParams{
			OwnerID: owner, Title: text, TitleSource: store.TitleSourceUser,
			Input: chatstate.UserInput{Content: sdk.Text(text)},
		})
		id = res.Chat.ID
		return err
	})
	return id
}

// waitingOnPeople seeds n chats in requires_action, each of its own user,
// owned by the fixture's worker or (unowned) left by a crashed one.
func (g *fixture) waitingOnPeople(n int, unowned bool) []uuid.UUID {
	g.t.Helper()
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = chatstatetest.Seed(g.t, g.machine, g.store, chatstatetest.Spec{
			State: chatstate.StateA0, Owner: g.user("waiting"), Worker: g.w.id, Runner: uuid.New(),
			DynamicTools: []sdk.DynamicTool{{Name: chatstatetest.ActionTool}}, Unowned: unowned,
		}).ID
		require.Equal(g.t, store.ChatStatusRequiresAction, g.chat(ids[i]).Status)
	}
	return ids
}

// TestLimiterRequiresActionTakesNoSlot: chats waiting on a person or an
// operator keep their owner but take no slot, so five of them (the default
// root limit) do not keep a sixth user's chat from running; after a crash
// they are taken over without a slot too.
func TestLimiterRequiresActionTakesNoSlot(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		for _, crashed := range []bool{false, true} {
			g := setupLimiter(t, newStore(t), Config{})
			waiting := g.waitingOnPeople(DefaultRootLimit, crashed)
			other := g.createFor(g.user("other"), "one turn")

			want := 1
			if crashed {
				want += len(waiting)
			}
			require.Equal(t, want, g.w.AcquirePass(g.ctx), "crashed %v: the sixth chat is admitted", crashed)
			owned, _ := g.owned(append(waiting, other)...)
			require.Len(t, owned, len(waiting)+1, "crashed %v: every chat has an owner", crashed)
			require.Equal(t, "one turn", lastUserText(g.provider.next(t).req))
			for _, id := range waiting {
				require.Equal(t, store.ChatStatusRequiresAction, g.chat(id).Status, "crashed %v: still waiting on its person", crashed)
			}
			g.provider.answer("done")
			eventually(t, func() bool { return g.peek(other).Status == store.ChatStatusWaiting }, "the sixth chat finishes its turn")
		}
	})
}

// TestLimiterFairBetweenUsers: a user with a 60-chat backlog does not
// starve another user's single chat; the user holding fewer slots gets the
// next free one, ties going to the oldest chat.
func TestLimiterFairBetweenUsers(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		g := setupLimiter(t, newStore(t), Config{RootLimit: 2})
		backlog := make([]uuid.UUID, 60)
		for i := range backlog {
			backlog[i] = g.create("backlog")
			g.clock.Advance(time.Millisecond)
		}
		require.Equal(t, 2, g.w.AcquirePass(g.ctx), "the backlog fills both slots")
		owned, _ := g.owned(backlog...)
		require.Equal(t, backlog[:2], owned, "oldest first")
		g.provider.next(t)
		g.provider.next(t)

		single := g.createFor(g.user("single"), "my one turn")
		require.Zero(t, g.w.AcquirePass(g.ctx), "no slot is free")

		g.provider.answer("done")
		eventually(t, func() bool {
			return g.peek(backlog[0]).Status == store.ChatStatusWaiting || g.peek(backlog[1]).Status == store.ChatStatusWaiting
		}, "one backlog chat finishes and frees its slot")
		eventually(t, func() bool {
			return !g.peek(backlog[0]).WorkerID.Valid || !g.peek(backlog[1]).WorkerID.Valid
		}, "and releases it")

		require.Equal(t, 1, g.w.AcquirePass(g.ctx))
		owned, _ = g.owned(single)
		require.Equal(t, []uuid.UUID{single}, owned, "the other user's chat takes the next free slot")
		require.Equal(t, "my one turn", lastUserText(g.provider.next(t).req))
		_, unowned := g.owned(backlog[2:]...)
		require.Len(t, unowned, 58, "the backlog waits")
	})
}

// TestLimiterFairWithinOnePass: several free slots in one pass go round
// the users before a second chat of the same user.
func TestLimiterFairWithinOnePass(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		g := setupLimiter(t, newStore(t), Config{RootLimit: 2})
		a1 := g.create("a1")
		g.clock.Advance(time.Millisecond)
		a2 := g.create("a2")
		g.clock.Advance(time.Millisecond)
		b1 := g.createFor(g.user("bob"), "b1")
		require.Equal(t, 2, g.w.AcquirePass(g.ctx))
		owned, unowned := g.owned(a1, a2, b1)
		require.Equal(t, []uuid.UUID{a1, b1}, owned)
		require.Equal(t, []uuid.UUID{a2}, unowned)
		g.provider.next(t)
		g.provider.next(t)
	})
}

// TestLimiterResumedChatIsReadmitted: a chat counts again once it leaves
// requires_action; with its pool full it waits unowned for the next free
// slot instead of taking its user past the limit.
func TestLimiterResumedChatIsReadmitted(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		g := setupLimiter(t, newStore(t), Config{RootLimit: 1})
		waiting := g.waitingOnPeople(1, true)[0]
		other := g.createFor(g.user("other"), "other turn")
		require.Equal(t, 2, g.w.AcquirePass(g.ctx), "the waiting chat takes no slot; the other chat takes the one slot")
		require.Equal(t, "other turn", lastUserText(g.provider.next(t).req))

		call := g.chat(waiting)
		ms := g.messages(waiting)
		var callID string
		for _, p := range partsOf(t, ms[len(ms)-1]) {
			if p.Type == sdk.PartToolCall {
				callID = p.ToolCallID
			}
		}
		require.NotEmpty(t, callID)
		g.do(func(t *chatstate.Tx) error {
			_, err := t.CompleteRequiresAction(waiting, []sdk.ToolResult{{ToolCallID: callID, Output: []byte(`"yes"`)}}, uuid.NullUUID{})
			return err
		})
		g.w.manager.syncOnce(g.ctx) // deliver the row even if a notification raced the runner's subscription
		eventually(t, func() bool {
			c := g.peek(waiting)
			return c.Status == store.ChatStatusRunning && !c.WorkerID.Valid
		}, "the resumed chat gives its owner up: the only slot is taken")
		require.Empty(t, g.provider.calls, "it did not call the model past the limit")
		require.Equal(t, call.OwnerID, g.chat(waiting).OwnerID)
		require.Zero(t, g.w.AcquirePass(g.ctx), "it waits for capacity")

		g.provider.answer("done")
		eventually(t, func() bool { return !g.peek(other).WorkerID.Valid }, "the other chat finishes and frees the slot")
		require.Equal(t, 1, g.w.AcquirePass(g.ctx))
		require.Equal(t, "hello", lastUserText(g.provider.next(t).req), "the resumed chat runs at the next free slot")
	})
}
