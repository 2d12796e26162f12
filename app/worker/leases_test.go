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
				at, err := heartbeatOf(g, chat)
				if !c.cfg.Leases {
					require.ErrorIs(t, err, store.ErrNotFound, "no heartbeat row with in-memory heartbeats")
					return
				}
				require.NoError(t, err)
				require.Equal(t, g.clock.Now(), at)
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
		require.Equal(t, 30*time.Second, g.w.nextPassIn(g.ctx), "due when the foreign lease expires")
		g.clock.Advance(12 * time.Second)
		require.Equal(t, 18*time.Second, g.w.nextPassIn(g.ctx))
		mine := g.create("mine")
		g.acquire(mine) // a fresh lease of this worker (its runner is elsewhere)
		require.Equal(t, 18*time.Second, g.w.nextPassIn(g.ctx), "the worker's own leases do not count")

		// Started only now: runners of the worker's loops end with Stop.
		require.NoError(t, g.w.Start(g.ctx))
		t.Cleanup(g.w.Stop)
		waitCtx, cancel := context.WithTimeout(g.ctx, 10*time.Second)
		defer cancel()
		// The acquisition, sync and heartbeat loops wait on the clock.
		require.NoError(t, g.clock.BlockUntil(waitCtx, 3))
		g.clock.Advance(18 * time.Second)
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
		for range 3 {
			g.clock.Advance(10 * time.Second)
			g.w.manager.touchReplica(g.ctx)
		}
		g.w.manager.cleanupOnce(g.ctx)
		require.NoError(t, replica(g.w.id), "a live replica is kept: it refreshes its record")
		require.NoError(t, replica(dead), "a record exactly a lease timeout old is kept")

		g.clock.Advance(time.Second)
		g.w.manager.touchReplica(g.ctx)
		g.w.manager.cleanupOnce(g.ctx)
		require.ErrorIs(t, replica(dead), store.ErrNotFound, "the dead replica's record is removed")
		require.NoError(t, replica(g.w.id))
	})
}
