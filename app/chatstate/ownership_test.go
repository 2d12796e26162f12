package chatstate_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// TestAcquireWritesAHeartbeatRowOnlyWithLeases: with leases as heartbeat
// rows (LeaseTimeout set, several replicas) Acquire records the initial
// heartbeat; with in-memory heartbeats (one process owns a SQLite file)
// nothing would renew or remove a row, so none is written.
func TestAcquireWritesAHeartbeatRowOnlyWithLeases(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore) // its machine has LeaseTimeout set
		inMemory := chatstate.New(f.s, f.pub, chatstate.Config{Clock: f.fake})
		for _, c := range []struct {
			name string
			m    *chatstate.Machine
			row  bool
		}{{"leases", f.m, true}, {"in-memory heartbeats", inMemory, false}} {
			t.Run(c.name, func(t *testing.T) {
				id, runner := f.create(t, "hello"), uuid.New()
				f.advance(time.Second)
				require.NoError(t, c.m.Do(f.ctx, func(tx *chatstate.Tx) error {
					_, err := tx.Acquire(id, f.worker, runner)
					return err
				}))
				require.Equal(t, runner, f.snap(t, id).Chat.RunnerID.UUID, "acquired")
				var (
					at    time.Time
					fresh bool
				)
				err := f.s.ReadTx(f.ctx, func(tx store.Reader) error {
					var err error
					if at, err = tx.HeartbeatAt(f.ctx, id, runner); err != nil {
						return err
					}
					fresh, err = tx.HeartbeatFresh(f.ctx, id, runner, store.LeaseWindow{Now: f.clock(), Timeout: 30 * time.Second})
					return err
				})
				if !c.row {
					require.ErrorIs(t, err, store.ErrNotFound, "no heartbeat row without leases")
					return
				}
				require.NoError(t, err)
				require.True(t, fresh, "the initial heartbeat makes a fresh lease")
				if dbtest.DatabaseLeaseClock(f.s) {
					// The fixture's clock is months from the real time.
					require.NotEqual(t, f.clock(), at, "stamped by the database's clock, not the machine's")
					return
				}
				require.Equal(t, f.clock(), at, "stamped by the machine's clock")
			})
		}
	})
}

// TestReleaseWorker: a worker shutting down abandons every chat it owns,
// each announced on chat:ownership so another replica acquires it at once;
// another worker's chats and unowned ones are left alone.
func TestReleaseWorker(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		mine1, mine2 := f.create(t, "one"), f.create(t, "two")
		f.acquire(t, mine1)
		f.acquire(t, mine2)
		other := uuid.New()
		theirs := f.create(t, "three")
		f.do(t, func(tx *chatstate.Tx) error {
			_, err := tx.Acquire(theirs, other, uuid.New())
			return err
		})
		unowned := f.create(t, "four")
		before := map[uuid.UUID]store.Chat{}
		for _, id := range []uuid.UUID{mine1, mine2, theirs, unowned} {
			before[id] = f.snap(t, id).Chat
		}
		f.pub.take()

		released, err := f.m.ReleaseWorker(f.ctx, f.worker)
		require.NoError(t, err)
		require.ElementsMatch(t, []uuid.UUID{mine1, mine2}, released)
		for _, id := range released {
			c := f.snap(t, id).Chat
			require.False(t, c.WorkerID.Valid, "released")
			require.False(t, c.RunnerID.Valid, "released")
			require.Equal(t, store.ChatStatusRunning, c.Status, "only the ownership changes")
			require.Equal(t, before[id].HistoryVersion, c.HistoryVersion)
			require.Greater(t, c.SnapshotVersion, before[id].SnapshotVersion)
		}
		require.Equal(t, before[theirs], f.snap(t, theirs).Chat, "another worker's chat is left alone")
		require.Equal(t, before[unowned], f.snap(t, unowned).Chat)

		var channels []string
		for _, p := range f.pub.take() {
			channels = append(channels, p.Channel)
		}
		require.ElementsMatch(t, []string{
			pubsub.ChannelUpdate(mine1.String()), pubsub.ChannelUpdate(mine2.String()),
			pubsub.ChannelOwnership, pubsub.ChannelOwnership,
		}, channels, "each released chat is announced for acquisition")

		released, err = f.m.ReleaseWorker(f.ctx, f.worker)
		require.NoError(t, err)
		require.Empty(t, released, "nothing left to release")
		require.Empty(t, f.pub.take())
	})
}
