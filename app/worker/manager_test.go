package worker

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

func (g *fixture) heartbeatAt(id, rid uuid.UUID) time.Time {
	g.t.Helper()
	var at time.Time
	require.NoError(g.t, g.store.ReadTx(g.ctx, func(tx store.Reader) error {
		var err error
		at, err = tx.HeartbeatAt(g.ctx, id, rid)
		return err
	}))
	return at
}

// TestHeartbeatRenewsFreshLeasesAndDropsStaleOnes: each tick renews the
// leases that are still fresh; a lease that went stale is never revived,
// its runner is cleaned up, and the chat stays owned until an acquisition
// takes it over (spec: "Heartbeat loop").
func TestHeartbeatRenewsFreshLeasesAndDropsStaleOnes(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		g := setupOn(t, newStore(t), Config{Leases: true, LeaseTimeout: 30 * time.Second, HeartbeatInterval: 10 * time.Second})
		id := g.create("hello")
		require.Equal(t, 1, g.w.AcquirePass(g.ctx))
		call := g.provider.next(t)
		rid := g.chat(id).RunnerID.UUID

		g.elapse(10 * time.Second)
		g.w.manager.renewOnce(g.ctx)
		g.requireStampedNow(id, rid, "a fresh lease is renewed")
		require.Equal(t, 1, g.w.Runners())

		g.elapse(25 * time.Second) // 35s after Acquire, 25s after the renewal
		g.w.manager.renewOnce(g.ctx)
		g.requireStampedNow(id, rid, "renewed again")
		require.NoError(t, call.ctx.Err(), "the generation goes on while the lease is fresh")

		g.elapse(31 * time.Second) // missed three heartbeats
		g.w.manager.renewOnce(g.ctx)
		eventually(t, func() bool { return g.w.Runners() == 0 }, "the runner of a stale lease is cleaned up")
		require.Error(t, call.ctx.Err(), "its generation stops")
		c := g.chat(id)
		require.Equal(t, g.w.id, c.WorkerID.UUID, "the chat stays owned by the stale lease")
		require.Equal(t, rid, c.RunnerID.UUID)
		require.Equal(t, store.ChatStatusRunning, c.Status)

		require.Equal(t, 1, g.w.AcquirePass(g.ctx), "an acquisition pass takes the stale chat over")
		next := g.provider.next(t)
		require.Equal(t, "hello", lastUserText(next.req))
		require.NotEqual(t, rid, g.chat(id).RunnerID.UUID, "with a new runner id")
	})
}

// TestLostLeaseWakesAcquisition: a write that took a chat from its runner
// may have published nothing (a COMMIT reported failed that committed all
// the same), so the heartbeat tick that stops the runner for its lost
// lease also wakes the acquisition loop: the chat may be runnable without
// an owner, and the next timed pass may be an AcquireInterval away.
func TestLostLeaseWakesAcquisition(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		g := setupOn(t, newStore(t), Config{Leases: true})
		id := g.create("hello")
		require.Equal(t, 1, g.w.AcquirePass(g.ctx))
		call := g.provider.next(t)
		// The chat given up behind chatstate's back: no notification.
		require.NoError(t, g.store.InTx(g.ctx, func(tx store.Tx) error {
			_, err := tx.ChatUpdate(g.ctx, id, store.ChatPatch{
				WorkerID: store.Some(uuid.NullUUID{}), RunnerID: store.Some(uuid.NullUUID{}),
			})
			return err
		}))
		select {
		case <-g.w.wake:
		default:
		}

		g.w.manager.renewOnce(g.ctx)
		eventually(t, func() bool { return g.w.Runners() == 0 }, "the runner of the lost lease is cleaned up")
		require.Error(t, call.ctx.Err(), "its generation stops")
		select {
		case <-g.w.wake:
		default:
			t.Fatal("the lost lease did not wake the acquisition loop")
		}
		require.Equal(t, 1, g.w.AcquirePass(g.ctx), "the pass it asks for takes the chat")
		require.Equal(t, "hello", lastUserText(g.provider.next(t).req))
	})
}

// TestSyncStopsRunnersOfDeletedChats: a deleted chat publishes nothing;
// the database sync finds it gone and cleans its runner up.
func TestSyncStopsRunnersOfDeletedChats(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		g := setupOn(t, newStore(t), Config{})
		id := g.create("hello")
		require.Equal(t, 1, g.w.AcquirePass(g.ctx))
		call := g.provider.next(t)
		g.do(func(t *chatstate.Tx) error { _, err := t.Delete(id); return err })
		g.w.manager.syncOnce(g.ctx)
		eventually(t, func() bool { return g.w.Runners() == 0 }, "the runner of a deleted chat is cleaned up")
		require.Error(t, call.ctx.Err())
	})
}

// TestSyncLoopDeliversMissedUpdates: with every chat:update notification
// lost, the periodic database sync still drives the runner (receivers
// converge through versions and the periodic sync).
func TestSyncLoopDeliversMissedUpdates(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		g := setupOn(t, newStore(t), Config{SyncInterval: 5 * time.Second, AcquireInterval: time.Minute})
		g.w.deps.Pubsub = deafSubscriber{Subscriber: g.pubsub}
		id := g.create("hello")
		require.NoError(t, g.w.Start(g.ctx))
		t.Cleanup(g.w.Stop)
		call := g.provider.next(t) // the startup acquisition pass took the chat

		g.do(func(t *chatstate.Tx) error { _, err := t.Interrupt(id); return err })
		ctx, cancel := context.WithTimeout(g.ctx, 10*time.Second)
		defer cancel()
		require.NoError(t, g.clock.BlockUntil(ctx, 2), "the acquisition and sync loops wait on the clock")
		require.NoError(t, call.ctx.Err(), "nothing told the runner about the interrupt yet")

		g.clock.Advance(5 * time.Second)
		eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting },
			"the sync tick delivers the interrupt and the runner finishes it")
		require.Error(t, call.ctx.Err())
	})
}

// deafSubscriber loses every chat:update notification.
type deafSubscriber struct{ Subscriber }

func (d deafSubscriber) Subscribe(ctx context.Context, channel string, fn func([]byte)) (func(), error) {
	if channel == "chat:ownership" {
		return d.Subscriber.Subscribe(ctx, channel, fn)
	}
	return func() {}, nil
}

// TestGenerationRetryAccounting follows one turn through the retry
// budget on the controlled clock: RecordRetryState while backing off, the
// backoff on the clock, FinishError once generation_attempt exceeds
// MaxRetries (spec: "Generation goroutine").
func TestGenerationRetryAccounting(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		overloaded := &llm.Error{Kind: sdk.ChatErrorOverloaded, Retryable: true, StatusCode: 503, Provider: "fake", Message: "busy"}
		setup := func(t *testing.T) (*fixture, uuid.UUID) {
			t.Parallel()
			g := setupOn(t, newStore(t), Config{MaxRetries: 2, BackoffBase: time.Second, BackoffMax: 4 * time.Second})
			id := g.create("hello")
			require.Equal(t, 1, g.w.AcquirePass(g.ctx))
			return g, id
		}
		// failAndBackOff fails the current attempt and checks the retry
		// state clients see while the worker waits on the clock.
		failAndBackOff := func(t *testing.T, g *fixture, id uuid.UUID, attempt int64, delay time.Duration) {
			g.provider.next(t)
			g.provider.fail(overloaded)
			ctx, cancel := context.WithTimeout(g.ctx, 10*time.Second)
			defer cancel()
			require.NoError(t, g.clock.BlockUntil(ctx, 1), "attempt %d backs off on the clock", attempt)
			c := g.chat(id)
			require.Equal(t, store.ChatStatusRunning, c.Status)
			require.Equal(t, attempt, c.GenerationAttempt)
			require.NotNil(t, c.RetryState, "attempt %d: the retry state is visible while backing off", attempt)
			var retry sdk.ChatRetry
			require.NoError(t, json.Unmarshal(c.RetryState, &retry))
			require.Equal(t, attempt, retry.Attempt)
			require.Equal(t, delay.Milliseconds(), retry.DelayMS)
			require.Equal(t, sdk.ChatErrorOverloaded, retry.Kind)
			require.WithinDuration(t, g.clock.Now().Add(delay), retry.RetryingAt, time.Millisecond)
			g.clock.Advance(delay)
		}

		t.Run("retries then succeeds", func(t *testing.T) {
			g, id := setup(t)
			failAndBackOff(t, g, id, 1, time.Second)
			failAndBackOff(t, g, id, 2, 2*time.Second)
			g.provider.next(t)
			g.provider.answer("finally")
			eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting }, "the turn finishes")
			c := g.chat(id)
			require.Nil(t, c.RetryState, "the retry state is gone")
			require.Nil(t, c.LastError)
			ms := g.messages(id)
			require.Len(t, ms, 2)
			require.Equal(t, "finally", partsOf(t, ms[1])[0].Text)
		})

		t.Run("retry limit then error", func(t *testing.T) {
			g, id := setup(t)
			failAndBackOff(t, g, id, 1, time.Second)
			failAndBackOff(t, g, id, 2, 2*time.Second)
			g.provider.next(t)
			g.provider.fail(overloaded)
			eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusError }, "the chat ends in error")
			c := g.chat(id)
			require.Equal(t, int64(3), c.GenerationAttempt, "MaxRetries+1 attempts")
			var e sdk.ChatError
			require.NoError(t, json.Unmarshal(c.LastError, &e))
			require.Equal(t, sdk.ChatErrorOverloaded, e.Kind)
			require.Empty(t, g.provider.calls, "no further call")
			require.Len(t, g.messages(id), 1)
		})

		t.Run("non-retryable error at once", func(t *testing.T) {
			g, id := setup(t)
			g.provider.next(t)
			g.provider.fail(&llm.Error{Kind: sdk.ChatErrorAuth, StatusCode: 401, Provider: "fake", Message: "bad key"})
			eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusError }, "the chat ends in error")
			c := g.chat(id)
			require.Equal(t, int64(1), c.GenerationAttempt)
			var e sdk.ChatError
			require.NoError(t, json.Unmarshal(c.LastError, &e))
			require.Equal(t, sdk.ChatErrorAuth, e.Kind)
			require.Zero(t, g.clock.Waiters(), "no backoff")
		})
	})
}

// TestAcquisitionRecordsTheFirstAttempt: acquiring a running chat records
// the generation attempt of its first model call in the same transaction
// (reservesAttempt), so the call starts with no write between the two; a
// retry records the next attempt itself (TestGenerationRetryAccounting
// checks the numbering that follows).
func TestAcquisitionRecordsTheFirstAttempt(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		g := setupOn(t, newStore(t), Config{})
		id := g.create("hello")
		require.Zero(t, g.chat(id).GenerationAttempt)
		require.Equal(t, 1, g.w.AcquirePass(g.ctx))
		acquired := g.chat(id)
		require.Equal(t, uuid.NullUUID{UUID: g.w.ID(), Valid: true}, acquired.WorkerID)
		require.Equal(t, int64(1), acquired.GenerationAttempt, "the acquisition recorded the first attempt")

		g.provider.next(t)
		require.Equal(t, acquired, g.chat(id), "nothing was written between the acquisition and the call")
		g.provider.answer("hi")
		eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting }, "the turn finishes")
	})
}

func TestBackoffIsBoundedExponential(t *testing.T) {
	t.Parallel()
	w := New(Config{BackoffBase: time.Second, BackoffMax: 30 * time.Second}, Deps{})
	for n, want := range map[int64]time.Duration{
		1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 5: 16 * time.Second,
		6: 30 * time.Second, 7: 30 * time.Second, 1000: 30 * time.Second,
	} {
		require.Equal(t, want, w.backoff(n), "attempt %d", n)
	}
}

func TestKeyedLock(t *testing.T) {
	t.Parallel()
	var k keyedLock
	ctx := context.Background()
	unlockA, err := k.lock(ctx, "a")
	require.NoError(t, err)

	unlockB, err := k.lock(ctx, "b")
	require.NoError(t, err, "another key is independent")
	unlockB()

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = k.lock(cancelled, "a")
	require.ErrorIs(t, err, context.Canceled, "a held key blocks until the context ends")

	got := make(chan func())
	go func() {
		unlock, err := k.lock(ctx, "a")
		if err == nil {
			got <- unlock
		}
	}()
	select {
	case <-got:
		t.Fatal("the key was taken twice")
	default:
	}
	unlockA()
	(<-got)()
	k.mu.Lock()
	defer k.mu.Unlock()
	require.Empty(t, k.locks, "released keys are forgotten")
}

func TestStartTwice(t *testing.T) {
	t.Parallel()
	g := setupOn(t, dbtest.NewSQLite(t), Config{})
	require.NoError(t, g.w.Start(g.ctx))
	t.Cleanup(g.w.Stop)
	require.Error(t, g.w.Start(g.ctx))
}
