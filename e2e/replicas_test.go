package e2e_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
	"github.com/chatd/chatd/store/open"
	"github.com/chatd/chatd/store/postgres"
)

// TestReplicaAddressOnlyOnSharedStores checks the "several replicas"
// capability: on Postgres a started app publishes its address for the
// stream relay and removes it on Stop; on SQLite (one process) it never
// writes one.
func TestReplicaAddressOnlyOnSharedStores(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		ctx := context.Background()
		h := apptest.Start(t, apptest.Options{Store: newStore, NoStart: true, Config: config.Config{NoWorker: true}})
		s, a := h.Store, h.App
		a.SetAdvertiseURL("http://replica.test:8080")
		replica := func() (store.Replica, error) {
			var r store.Replica
			err := s.ReadTx(ctx, func(tx store.Reader) error {
				var err error
				r, err = tx.ReplicaGet(ctx, h.Worker.ID())
				return err
			})
			return r, err
		}

		require.NoError(t, a.Start(ctx))
		r, err := replica()
		if s.Dialect() == "postgres" {
			require.NoError(t, err)
			require.Equal(t, "http://replica.test:8080", r.Address)
			require.Len(t, r.TokenHash, 64, "a hex SHA-256, not the token")
		} else {
			require.ErrorIs(t, err, store.ErrNotFound)
		}
		a.Stop()
		_, err = replica()
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

// TestPostgresNotificationsReachOtherProcesses checks the "cross-process
// pubsub" capability: on Postgres the app's state machine publishes with
// NOTIFY, so a listener on another connection pool (another replica) hears
// that a new chat needs an owner. The in-process pubsub would never reach it.
func TestPostgresNotificationsReachOtherProcesses(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn, schema := dbtest.PostgresSchema(t)
	openPG := func() *postgres.Store {
		s, err := postgres.Open(ctx, dsn, postgres.Options{SearchPath: schema})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		return s
	}
	s, other := openPG(), openPG()
	require.NoError(t, open.Migrate(ctx, s, func(p *goose.Provider) error { _, err := p.Up(ctx); return err }))

	listener, err := postgres.NewPubsub(ctx, other.Pool())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, listener.Close()) })
	var (
		mu    sync.Mutex
		heard = map[uuid.UUID]bool{}
		wake  = make(chan struct{}, 1) // coalesces: the set holds what was heard
	)
	stop, err := listener.Subscribe(ctx, pubsub.ChannelOwnership, func(payload []byte) {
		var p chatstate.OwnershipPayload
		if json.Unmarshal(payload, &p) != nil {
			return
		}
		mu.Lock()
		heard[p.ChatID] = true
		mu.Unlock()
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	require.NoError(t, err)
	t.Cleanup(stop)

	h := apptest.Start(t, apptest.Options{Store: func(testing.TB) store.Store { return s }, NoStart: true, Config: config.Config{NoWorker: true}})

	chat, err := h.Admin.CreateChat(ctx, sdk.CreateChatRequest{
		Content: []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "hello"}},
	})
	require.NoError(t, err)
	// NOTIFY channels are database-wide, not per schema: tests running
	// beside this one on the same database are heard too.
	for {
		mu.Lock()
		ok := heard[chat.ID]
		mu.Unlock()
		if ok {
			return
		}
		select {
		case <-wake:
		case <-ctx.Done():
			t.Fatal("the other process never heard about the new chat")
		}
	}
}
