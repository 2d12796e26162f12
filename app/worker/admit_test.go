package worker

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// admitting makes the fixture's worker admit chats directly without
// starting its loops: a chat it does not admit stays unowned, because no
// acquisition pass runs unless the test runs one. Like Start, it runs
// the first pass (direct admission waits for one).
func (g *fixture) admitting() {
	g.admittingBeforeAPass()
	g.w.AcquirePass(g.ctx)
}

func (g *fixture) admittingBeforeAPass() {
	g.machine.SetAdmitter(g.w)
	g.w.admitMu.Lock()
	g.w.runCtx = g.ctx
	g.w.admitMu.Unlock()
}

func (g *fixture) ownedByWorker(id uuid.UUID) bool {
	return g.chat(id).WorkerID == uuid.NullUUID{UUID: g.w.id, Valid: true}
}

// TestDirectAdmission: a bundle that leaves a chat runnable acquires it
// for the worker in its own transaction (Admit), with the first model
// call's attempt, and the runner takes the turn from there; the worker
// steps aside, leaving the chat to the acquisition loop, when the last
// pass left chats waiting for a slot, when the pool is full, and once it
// drains.
func TestDirectAdmission(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		t.Run("admitted in the bundle that made it runnable", func(t *testing.T) {
			g := setupOn(t, newStore(t), Config{})
			g.admitting()
			id := g.create("hello")
			c := g.chat(id)
			require.True(t, g.ownedByWorker(id), "owned when the create committed")
			require.Equal(t, int64(1), c.GenerationAttempt, "with the first call's attempt")
			require.True(t, g.w.manager.has(id, c.RunnerID.UUID), "its runner runs")
			g.provider.next(t)
			g.provider.answer("hi")
			eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting }, "the turn finishes")
			eventually(t, func() bool { return !g.peek(id).WorkerID.Valid }, "and gives the chat up")

			// The next message to the idle chat is admitted the same way.
			g.do(func(t *chatstate.Tx) error {
				_, err := t.SendMessage(id, chatstate.UserInput{Content: sdk.Text("again")}, chatstate.BusyQueue)
				return err
			})
			require.True(t, g.ownedByWorker(id))
			g.provider.next(t)
			g.provider.answer("hi again")
			eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting }, "the second turn finishes")
			require.Len(t, g.messages(id), 4)
			require.Zero(t, g.w.AcquirePass(g.ctx), "nothing was left for the loop")
		})

		t.Run("chats waiting for a slot go first", func(t *testing.T) {
			g := setupOn(t, newStore(t), Config{})
			g.admitting()
			g.w.waiting.Store(1) // as the last pass left them
			id := g.create("hello")
			require.False(t, g.chat(id).WorkerID.Valid, "left to the acquisition loop")
			require.Equal(t, 1, g.w.AcquirePass(g.ctx))
			g.provider.next(t)
			g.provider.answer("hi")
			eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting }, "the turn finishes")
		})

		t.Run("with leases", func(t *testing.T) {
			g := setupOn(t, newStore(t), Config{Leases: true})
			g.admitting()
			id := g.create("hello")
			c := g.chat(id)
			require.True(t, g.ownedByWorker(id))
			require.NoError(t, g.store.ReadTx(g.ctx, func(tx store.Reader) error {
				fresh, err := tx.HeartbeatFresh(g.ctx, id, c.RunnerID.UUID, g.w.leaseWindow())
				require.True(t, fresh, "the admission wrote the runner's lease")
				return err
			}))
			g.provider.next(t)
			g.provider.answer("hi")
			eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting }, "the turn finishes")
		})

		t.Run("the runner is listed only once the bundle committed", func(t *testing.T) {
			// The sync loop stops a listed runner whose chat it cannot
			// read: listed before the commit, the runner of a chat the
			// bundle created was stopped by a sync that read before it,
			// leaving the chat owned by a runner that was not running.
			g := setupOn(t, newStore(t), Config{})
			g.admitting()
			spy := &listedAtAdmit{w: g.w}
			g.machine.SetAdmitter(spy)
			id := g.create("hello")
			require.Equal(t, []int{0}, spy.listed, "no runner listed while the bundle was open")
			require.True(t, g.w.manager.has(id, g.chat(id).RunnerID.UUID), "listed after the commit")
			g.provider.next(t)
			g.provider.answer("hi")
			eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting }, "the turn finishes")
		})

		t.Run("nothing before the first pass", func(t *testing.T) {
			g := setupOn(t, newStore(t), Config{})
			g.admittingBeforeAPass()
			id := g.create("hello")
			require.False(t, g.chat(id).WorkerID.Valid, "chats resumed at the start go first")
			require.Equal(t, 1, g.w.AcquirePass(g.ctx))
			g.provider.next(t)
			g.provider.answer("hi")
			eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting }, "the turn finishes")
		})

		t.Run("a full pool admits nothing", func(t *testing.T) {
			g := setupOn(t, newStore(t), Config{RootLimit: 1})
			g.admitting()
			first := g.create("one")
			require.True(t, g.ownedByWorker(first))
			second := g.create("two")
			require.False(t, g.chat(second).WorkerID.Valid, "over the limit: it waits for a slot")
			require.Equal(t, int64(1), g.w.waiting.Load(), "and later chats wait behind it")
			g.clock.Advance(time.Second) // the second is the older
			third := g.create("three")
			require.False(t, g.chat(third).WorkerID.Valid)
			g.provider.next(t)
			g.provider.answer("hi")
			eventually(t, func() bool { return !g.peek(first).WorkerID.Valid }, "the first turn frees its slot")
			require.Equal(t, 1, g.w.AcquirePass(g.ctx), "the loop admits the older one")
			require.True(t, g.ownedByWorker(second))
			require.Equal(t, int64(1), g.w.waiting.Load(), "the third still waits")
			g.provider.next(t)
			g.provider.answer("hi")
			eventually(t, func() bool { return g.peek(second).Status == store.ChatStatusWaiting }, "the second turn finishes")
			eventually(t, func() bool { return !g.peek(second).WorkerID.Valid }, "and frees its slot")
			require.Equal(t, 1, g.w.AcquirePass(g.ctx))
			require.Zero(t, g.w.waiting.Load())
			g.provider.next(t)
			g.provider.answer("hi")
			eventually(t, func() bool { return g.peek(third).Status == store.ChatStatusWaiting }, "the third turn finishes")
		})

		t.Run("a draining worker admits nothing", func(t *testing.T) {
			g := setupOn(t, newStore(t), Config{})
			g.admitting()
			require.NoError(t, g.w.Drain(g.ctx))
			id := g.create("hello")
			require.False(t, g.chat(id).WorkerID.Valid)
			require.Zero(t, g.w.Runners())
		})

	})
}

// TestDirectAdmissionDoesNotWaitForTheLock: a bundle holds its chat's lock
// when it admits, and an acquisition takes the admission lock before the
// chat's, so the bundle only tries the admission lock; held elsewhere, the
// chat is left to the acquisition loop. (Postgres only: SQLite's writer
// lock is the admission lock, which nobody else holds during a write.)
func TestDirectAdmissionDoesNotWaitForTheLock(t *testing.T) {
	t.Parallel()
	s := dbtest.NewPostgres(t)
	g := setupOn(t, s, Config{Leases: true})
	g.admitting()
	held, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- s.InTx(g.ctx, func(tx store.Tx) error {
			if err := tx.AdmissionLock(g.ctx); err != nil {
				return err
			}
			close(held)
			<-release
			return nil
		})
	}()
	select {
	case <-held:
	case err := <-done:
		t.Fatalf("the holder ended early: %v", err)
	}
	id := g.create("hello")
	close(release)
	require.NoError(t, <-done)
	require.False(t, g.chat(id).WorkerID.Valid, "left to the acquisition loop")
}

// listedAtAdmit admits through w and notes how many runners w lists when
// the admission returns, inside the bundle.
type listedAtAdmit struct {
	w      *Worker
	listed []int
}

func (l *listedAtAdmit) Admit(t *chatstate.Tx, c store.Chat) (chatstate.Admission, error) {
	a, err := l.w.Admit(t, c)
	l.listed = append(l.listed, l.w.Runners())
	return a, err
}
