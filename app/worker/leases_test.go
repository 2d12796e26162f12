package worker

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// Leases are stamped and judged by the store's lease clock
// (store.LeaseWindow): the fixture's clock on SQLite, the database's on
// Postgres. The helpers below let lease time pass, and check stamps, the
// same way on both.

// elapse lets d pass for the leases first (on Postgres, whose own clock
// judges them, every stamp moves d into the past), then on the fixture's
// clock, so a timer that fires finds the leases aged.
func (g *fixture) elapse(d time.Duration) {
	g.t.Helper()
	dbtest.AgeLeases(g.t, g.store, d)
	g.clock.Advance(d)
}

// leaseFresh asks the store whether a lease is fresh within timeout at the
// fixture's time.
func (g *fixture) leaseFresh(id, rid uuid.UUID, timeout time.Duration) bool {
	g.t.Helper()
	var fresh bool
	require.NoError(g.t, g.store.ReadTx(g.ctx, func(tx store.Reader) error {
		var err error
		fresh, err = tx.HeartbeatFresh(g.ctx, id, rid, store.LeaseWindow{Now: g.clock.Now(), Timeout: timeout})
		return err
	}))
	return fresh
}

// requireStampedNow checks that a lease was just stamped by the lease
// clock: at the fixture's time exactly on SQLite; on Postgres, whose clock
// runs on while the test runs, within the last few seconds of its time.
func (g *fixture) requireStampedNow(id, rid uuid.UUID, msg string) {
	g.t.Helper()
	if dbtest.DatabaseLeaseClock(g.store) {
		require.True(g.t, g.leaseFresh(id, rid, 5*time.Second), msg)
		return
	}
	require.Equal(g.t, g.clock.Now(), g.heartbeatAt(id, rid), msg)
}

// requireUntil checks a wait the store measured by its lease clock:
// exactly want on SQLite; on Postgres at most want and not far below.
func (g *fixture) requireUntil(want, got time.Duration, msg string) {
	g.t.Helper()
	if !dbtest.DatabaseLeaseClock(g.store) {
		require.Equal(g.t, want, got, msg)
		return
	}
	require.LessOrEqual(g.t, got, want, msg)
	require.Greater(g.t, got, want-10*time.Second, msg)
}

// TestAcquisitionWritesHeartbeatRowsOnlyWithLeases: a worker with
// in-memory heartbeats (one process owns a SQLite file) leaves no
// heartbeat row behind when it acquires a chat, since nothing would ever
// renew or remove it; a worker with leases records the initial heartbeat.
func TestAcquisitionWritesHeartbeatRowsOnlyWithLeases(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		for _, c := range []struct {
			name string
			cfg  Config
		}{{"in-memory", Config{}}, {"leases", Config{Leases: true}}} {
			t.Run(c.name, func(t *testing.T) {
				g := setupOn(t, newStore(t), c.cfg)
				id := g.create("hello")
				require.Equal(t, 1, g.w.AcquirePass(g.ctx))
				g.provider.next(t) // the runner is generating
				chat := g.chat(id)
				require.Equal(t, g.w.id, chat.WorkerID.UUID)
				_, err := heartbeatOf(g, chat)
				if !c.cfg.Leases {
					require.ErrorIs(t, err, store.ErrNotFound, "no heartbeat row with in-memory heartbeats")
					return
				}
				require.NoError(t, err)
				g.requireStampedNow(id, chat.RunnerID.UUID, "the initial heartbeat")
			})
		}
	})
}

// TestTakeoverScheduledAtLeaseExpiry: with leases, the acquisition loop's
// next timed pass is due when the oldest lease of another worker goes
// stale, not an AcquireInterval later, so a crashed replica's chat is taken
// over at lease expiry (lease timeout + at most one heartbeat interval
// after the crash).
func TestTakeoverScheduledAtLeaseExpiry(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		g := setupOn(t, newStore(t), Config{Leases: true, LeaseTimeout: 30 * time.Second, AcquireInterval: 10 * time.Minute})
		require.Equal(t, 10*time.Minute, g.w.nextPassIn(g.ctx), "no foreign lease: the plain interval")

		crashed := uuid.New() // another replica that acquires a chat, then dies
		id := g.create("theirs")
		g.do(func(t *chatstate.Tx) error { _, err := t.Acquire(id, crashed, uuid.New()); return err })
		g.requireUntil(30*time.Second, g.w.nextPassIn(g.ctx), "due when the foreign lease expires")
		g.elapse(12 * time.Second)
		g.requireUntil(18*time.Second, g.w.nextPassIn(g.ctx), "12 s later")
		mine := g.create("mine")
		g.acquire(mine) // a fresh lease of this worker (its runner is elsewhere)
		g.requireUntil(18*time.Second, g.w.nextPassIn(g.ctx), "the worker's own leases do not count")

		// Started only now: runners of the worker's loops end with Stop.
		require.NoError(t, g.w.Start(g.ctx))
		t.Cleanup(g.w.Stop)
		waitCtx, cancel := context.WithTimeout(g.ctx, 10*time.Second)
		defer cancel()
		// The acquisition, sync and heartbeat loops wait on the clock.
		require.NoError(t, g.clock.BlockUntil(waitCtx, 3))
		g.elapse(18 * time.Second)
		require.Equal(t, "theirs", lastUserText(g.provider.next(t).req), "the timed pass at lease expiry takes the chat over")
		c := g.chat(id)
		require.Equal(t, g.w.id, c.WorkerID.UUID)
		require.Equal(t, g.w.id, g.chat(mine).WorkerID.UUID)
	})
}

// TestDeadReplicaRecordsAreRemoved: each heartbeat tick refreshes the
// replica's own record; the cleanup removes the records of replicas that
// have not refreshed theirs for longer than the lease timeout.
func TestDeadReplicaRecordsAreRemoved(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		g := setupOn(t, newStore(t), Config{Leases: true, LeaseTimeout: 30 * time.Second, HeartbeatInterval: 10 * time.Second})
		dead := uuid.New()
		require.NoError(t, g.store.InTx(g.ctx, func(tx store.Tx) error {
			for _, id := range []uuid.UUID{g.w.id, dead} {
				if err := tx.ReplicaUpsert(g.ctx, store.Replica{WorkerID: id, Address: "http://" + id.String(), TokenHash: "t", UpdatedAt: g.clock.Now()}); err != nil {
					return err
				}
			}
			return nil
		}))
		replica := func(id uuid.UUID) error {
			return g.store.ReadTx(g.ctx, func(tx store.Reader) error { _, err := tx.ReplicaGet(g.ctx, id); return err })
		}
		for range 2 {
			g.elapse(10 * time.Second)
			g.w.manager.touchReplica(g.ctx)
		}
		g.w.manager.cleanupOnce(g.ctx)
		require.NoError(t, replica(g.w.id), "a live replica is kept: it refreshes its record")
		require.NoError(t, replica(dead), "a record younger than the lease timeout is kept")
		g.elapse(10 * time.Second)
		g.w.manager.touchReplica(g.ctx)
		if !dbtest.DatabaseLeaseClock(g.store) { // the database's clock has run on since
			g.w.manager.cleanupOnce(g.ctx)
			require.NoError(t, replica(dead), "a record exactly a lease timeout old is kept")
		}

		g.elapse(time.Second)
		g.w.manager.touchReplica(g.ctx)
		g.w.manager.cleanupOnce(g.ctx)
		require.ErrorIs(t, replica(dead), store.ErrNotFound, "the dead replica's record is removed")
		require.NoError(t, replica(g.w.id))
	})
}

// TestLeasesJudgedByTheDatabaseClock: two replicas on one Postgres whose
// clocks are 20 minutes apart (far more than the lease timeout) neither
// steal each other's live chats nor their replica records, and a dead
// replica's chat is taken over once its heartbeat is older than the lease
// timeout by the database's clock: leases are stamped and judged by the
// database, not by each replica's clock.
func TestLeasesJudgedByTheDatabaseClock(t *testing.T) {
	t.Parallel()
	s := dbtest.NewPostgres(t)
	cfg := Config{Leases: true, LeaseTimeout: 30 * time.Second, AcquireInterval: 10 * time.Minute}
	now := time.Now().UTC().Truncate(time.Millisecond)
	fast := setupAt(t, s, cfg, now.Add(10*time.Minute), nil)
	slow := setupAt(t, s, cfg, now.Add(-10*time.Minute), nil)
	for _, g := range []*fixture{fast, slow} {
		require.NoError(t, s.InTx(g.ctx, func(tx store.Tx) error {
			return tx.ReplicaUpsert(g.ctx, store.Replica{WorkerID: g.w.id, Address: "http://" + g.w.id.String(), TokenHash: "t", UpdatedAt: g.clock.Now()})
		}))
	}
	replica := func(id uuid.UUID) error {
		return s.ReadTx(fast.ctx, func(tx store.Reader) error { _, err := tx.ReplicaGet(fast.ctx, id); return err })
	}

	fastChat := fast.create("fast's")
	require.Equal(t, 1, fast.w.AcquirePass(fast.ctx))
	fast.provider.next(t)
	slowChat := slow.create("slow's")
	require.Equal(t, 1, slow.w.AcquirePass(slow.ctx), "only its own chat")
	slow.provider.next(t)

	require.Zero(t, fast.w.AcquirePass(fast.ctx), "a fast clock does not steal a live chat")
	require.Zero(t, slow.w.AcquirePass(slow.ctx), "a slow clock does not steal a live chat")
	for _, g := range []*fixture{fast, slow} {
		d := g.w.nextPassIn(g.ctx)
		require.LessOrEqual(t, d, 30*time.Second, "the other's lease expires within the lease timeout, by the database's clock")
		require.Greater(t, d, 20*time.Second, "and not sooner")
		g.w.manager.renewOnce(g.ctx)
		g.w.manager.touchReplica(g.ctx)
		g.w.manager.cleanupOnce(g.ctx)
		require.Equal(t, 1, g.w.Runners(), "its own lease renews")
	}
	require.NoError(t, replica(fast.w.id), "no replica's cleanup removes a live replica's record")
	require.NoError(t, replica(slow.w.id))
	require.Equal(t, fast.w.id, fast.chat(fastChat).WorkerID.UUID)
	require.Equal(t, slow.w.id, slow.chat(slowChat).WorkerID.UUID)

	// The fast replica dies: its heartbeats stop. 31 s pass by the
	// database's clock while the slow replica renews; neither app clock
	// moves at all.
	dbtest.AgeLeases(t, s, 20*time.Second)
	slow.w.manager.renewOnce(slow.ctx)
	slow.w.manager.touchReplica(slow.ctx)
	dbtest.AgeLeases(t, s, 11*time.Second)
	require.Equal(t, 1, slow.w.AcquirePass(slow.ctx), "the dead replica's chat is taken over")
	require.Equal(t, "fast's", lastUserText(slow.provider.next(t).req))
	require.Equal(t, slow.w.id, slow.chat(fastChat).WorkerID.UUID)
	require.Equal(t, slow.w.id, slow.chat(slowChat).WorkerID.UUID, "the live replica keeps its own chat")
	slow.w.manager.cleanupOnce(slow.ctx)
	require.ErrorIs(t, replica(fast.w.id), store.ErrNotFound, "the dead replica's record is removed")
	require.NoError(t, replica(slow.w.id))
}
