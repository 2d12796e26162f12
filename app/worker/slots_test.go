package worker

import (
	"context"
	"path"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/partbuf"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
	"github.com/chatd/chatd/store/postgres"
)

// A slot of the concurrent agent limiter that frees must start the chat
// waiting for it at once, on the replica that freed it and on the others,
// whatever freed it: the acquisition loop's timed pass comes only every
// DefaultAcquireInterval (30 s). These tests run the real loops with every
// interval at its default on a fake clock that no case moves as far as a
// timed acquisition pass, so only a wake-up (a local one, or chat:ownership)
// can start the waiting chat.

// slotClientTool is the holders' dynamic (client) tool.
const slotClientTool = "ask_client"

// slotRig: DefaultRootLimit holder chats fill every root slot, each in a
// model call the fake provider holds, and one more chat of another user
// waits for a slot, counted as waiting by the acquirer's last pass.
type slotRig struct {
	*fixture // the holders' replica (fixture.w) and the shared store, clock, provider and pubsub
	// acquirer is the worker whose loop must start the waiting chat: the
	// holders' own, or another replica's.
	acquirer *Worker
	holders  []uuid.UUID
	waiter   uuid.UUID
	start    time.Time // the clock when the slot was full
}

// slotCase is one way a holder gives its slot up.
type slotCase struct {
	name string
	// leases: the path exists only with leases (several replicas on Postgres).
	leases bool
	// otherReplica: the path only frees a slot for another replica (a
	// draining replica acquires nothing).
	otherReplica bool
	free         func(t *testing.T, r *slotRig)
}

var slotCases = []slotCase{
	{name: "finish", free: func(t *testing.T, r *slotRig) {
		r.provider.answer("done") // FinishTurn and Abandon in one bundle
	}},
	{name: "error", free: func(t *testing.T, r *slotRig) {
		r.provider.fail(&llm.Error{Kind: sdk.ChatErrorGeneric, StatusCode: 400, Message: "bad request"})
	}},
	{name: "interrupt", free: func(t *testing.T, r *slotRig) {
		r.do(func(tx *chatstate.Tx) error { _, err := tx.Interrupt(r.holders[0]); return err })
	}},
	{name: "park in requires_action", free: func(t *testing.T, r *slotRig) {
		r.provider.answers <- toolCallReply("call_client", slotClientTool)
	}},
	{name: "park for approval", free: func(t *testing.T, r *slotRig) {
		r.provider.answers <- toolCallReply("call_send", "send")
	}},
	{name: "delete", free: func(t *testing.T, r *slotRig) {
		r.do(func(tx *chatstate.Tx) error { _, err := tx.Delete(r.holders[0]); return err })
	}},
	{name: "lease lost", leases: true, free: func(t *testing.T, r *slotRig) {
		// The holder's lease goes stale (a heartbeat that could not be
		// written); its replica finds out at its next heartbeat tick,
		// well before a timed acquisition pass.
		ageLease(t, r.store, r.holders[0], DefaultLeaseTimeout+time.Second)
		r.clock.Advance(DefaultHeartbeatInterval)
	}},
	{name: "drain", leases: true, otherReplica: true, free: func(t *testing.T, r *slotRig) {
		require.NoError(t, r.w.Drain(r.ctx))
	}},
}

// TestFreedSlotStartsWaitingChat holds every path that frees a slot: the
// waiting chat's first model call comes after the slot frees with the
// clock short of a timed acquisition pass.
func TestFreedSlotStartsWaitingChat(t *testing.T) {
	require.Less(t, DefaultHeartbeatInterval, DefaultAcquireInterval, "the lease-lost case's heartbeat tick precedes a timed pass")
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		leases := path.Base(t.Name()) == "postgres" // as the app runs each store
		for _, other := range []bool{false, true} {
			for _, c := range slotCases {
				if (c.leases || other) && !leases || c.otherReplica && !other {
					continue // one process owns a SQLite file; a draining replica acquires nothing
				}
				where := "this replica"
				if other {
					where = "another replica"
				}
				t.Run(c.name+"/"+where, func(t *testing.T) {
					s := newStore(t)
					require.Equal(t, leases, s.Dialect() == "postgres")
					r := setupSlots(t, s, other)
					c.free(t, r)
					r.requireWaiterStarts(t)
				})
			}
		}
	})
}

// setupSlots builds the rig with every setting at its default (leases on
// Postgres, as the app runs them); other puts the acquirer on a second
// replica, the holders' replica having stopped acquiring.
func setupSlots(t *testing.T, s store.Store, other bool) *slotRig {
	t.Helper()
	cfg := Config{Leases: s.Dialect() == "postgres", ToolApproval: store.ApprovalEffectful}
	send := newMCPTool("send", store.EffectEffectful, false)
	withTools := func(d *Deps) { d.Tools = tools.NewRegistry(send) }
	g := setupWith(t, s, cfg, withTools)
	require.Equal(t, DefaultAcquireInterval, g.w.cfg.AcquireInterval)
	require.Equal(t, DefaultRootLimit, g.w.cfg.RootLimit)
	g.machine.SetAdmitter(g.w) // as the app wires it
	r := &slotRig{fixture: g, acquirer: g.w, holders: make([]uuid.UUID, DefaultRootLimit)}
	for i := range r.holders {
		r.holders[i] = g.create("holder", sdk.DynamicTool{Name: slotClientTool})
	}
	if other {
		// The holders' replica runs them from its own loop (so Drain
		// stops them), then stops acquiring: only the other replica can
		// start the waiting chat, and only if it hears of the free slot.
		require.NoError(t, g.w.Start(g.ctx))
		t.Cleanup(g.w.Stop)
		r.awaitHolders(t)
		g.w.stopAcquiring.Do(func() { close(g.w.noAcquire) })
		<-g.w.acquired
		r.acquirer = r.replica(t, cfg, withTools)
	} else {
		// Admitted by a pass of the test's own, so the loop's first pass
		// is the one that finds the waiting chat. Their runners run on
		// holders, which Stop does not cancel: the cleanup does first.
		holders, stopHolders := context.WithCancel(g.ctx)
		t.Cleanup(stopHolders)
		require.Equal(t, DefaultRootLimit, g.w.AcquirePass(holders))
		r.awaitHolders(t)
		t.Cleanup(func() { stopHolders(); g.w.Stop() })
	}
	// Created before the acquirer runs: no admission, and its
	// chat:ownership notice reaches no loop.
	r.waiter = g.createFor(g.user("waiter"), "waiter")
	require.NoError(t, r.acquirer.Start(g.ctx))
	if other {
		t.Cleanup(r.acquirer.Stop)
	}
	eventually(t, func() bool { return r.acquirer.waiting.Load() == 1 }, "the loop's first pass leaves the chat waiting for a slot")
	require.Zero(t, len(r.acquirer.wake), "nothing else is about to wake the acquisition loop")
	require.False(t, g.chat(r.waiter).WorkerID.Valid)
	r.start = g.clock.Now()
	return r
}

// awaitHolders waits for every holder's model call.
func (r *slotRig) awaitHolders(t *testing.T) {
	t.Helper()
	for range r.holders {
		require.Equal(t, "holder", lastUserText(r.provider.next(t).req))
	}
}

// replica is a second worker on the same store, clock, provider and
// pubsub (standing in for Postgres NOTIFY between replicas), with a
// machine of its own.
func (r *slotRig) replica(t *testing.T, cfg Config, deps func(*Deps)) *Worker {
	t.Helper()
	m := chatstate.New(r.store, r.pubsub, chatstate.Config{
		Clock: r.clock, RequiresActionTimeout: rigActionTimeout, LeaseTimeout: leaseTimeoutIf(cfg),
	})
	d := Deps{
		Machine: m, Store: r.store, Pubsub: r.pubsub, Buffer: partbuf.New(partbuf.Config{}),
		Models: oneModel{Model{ID: uuid.New(), Provider: r.provider, Name: "fake-model"}},
		Clock:  r.clock, Log: r.w.deps.Log,
	}
	deps(&d)
	w := New(cfg, d)
	m.SetAdmitter(w)
	return w
}

// requireWaiterStarts waits for the waiting chat's model call (other
// chats a freed slot resumes may call first) and checks that no timed
// acquisition pass can have run.
func (r *slotRig) requireWaiterStarts(t *testing.T) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case call := <-r.provider.calls:
			if lastUserText(call.req) != "waiter" {
				continue
			}
			require.Less(t, r.clock.Now().Sub(r.start), DefaultAcquireInterval, "no timed acquisition pass was due")
			c := r.chat(r.waiter)
			require.Equal(t, uuid.NullUUID{UUID: r.acquirer.id, Valid: true}, c.WorkerID, "the acquirer runs it")
			return
		case <-deadline:
			t.Fatalf("the waiting chat did not start after the slot freed (it is %s, owned %v): nothing woke the acquisition loop",
				r.peek(r.waiter).Status, r.peek(r.waiter).WorkerID.Valid)
		}
	}
}

// ageLease moves one chat's lease d into the past (Postgres judges leases
// by its own clock, which a test cannot move).
func ageLease(t *testing.T, s store.Store, chatID uuid.UUID, d time.Duration) {
	t.Helper()
	pg, ok := s.(*postgres.Store)
	require.True(t, ok, "leases live in Postgres, got %T", s)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tag, err := pg.Pool().Exec(ctx, `UPDATE chat_heartbeats SET heartbeat_at = heartbeat_at - $2::bigint * interval '1 microsecond' WHERE chat_id = $1`,
		chatID, d.Microseconds())
	require.NoError(t, err)
	require.Equal(t, int64(1), tag.RowsAffected(), "the chat has one lease")
}

// TestAcquisitionPages: more acquirable chats than one pass reads all
// start at once, with no wake-up and the clock short of a timed pass. A
// pass that takes some of a whole page runs again; before, the chats
// beyond the page waited for the next wake-up (a turn ending) or the
// timed pass: 250 messages sent at once on Postgres, most left to the
// loop, started up to 11 s late.
func TestAcquisitionPages(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		s := newStore(t)
		g := setupOn(t, s, Config{Leases: s.Dialect() == "postgres", AcquirePage: 2})
		require.Equal(t, 5, g.w.cfg.RootLimit)
		chats := map[uuid.UUID]bool{}
		for range 5 {
			chats[g.create("hello")] = true // no admitter: left to the loop
		}
		require.NoError(t, g.w.Start(g.ctx))
		t.Cleanup(g.w.Stop)
		for range chats {
			call := g.provider.next(t)
			require.Equal(t, "hello", lastUserText(call.req))
		}
		for id := range chats {
			require.True(t, g.chat(id).WorkerID.Valid, "chat %s is owned", id)
		}
	})
}
