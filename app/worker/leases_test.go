package worker

import (
	"testing"

	"github.com/stretchr/testify/require"

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
