package chatstate_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
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
