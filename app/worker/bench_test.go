package worker_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/llm/demo"
	"github.com/chatd/chatd/app/partbuf"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/worker"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
	"github.com/chatd/chatd/store/postgres"
)

// The benchmarks put the worker's throughput next to the store's: a turn
// is two write transactions (Create with the worker's direct admission,
// then CommitStep with FinishTurn and Abandon), so turns/s over commits/s
// says how much of a turn is spent beyond its commits.
//
//	go test -run '^$' -bench . -benchtime 3s ./app/worker

func benchStores(b *testing.B, fn func(b *testing.B, s store.Store)) {
	b.Run("sqlite", func(b *testing.B) { fn(b, dbtest.NewSQLite(b)) })
	b.Run("postgres", func(b *testing.B) {
		dbtest.PostgresDSN(b)
		fn(b, dbtest.NewPostgres(b))
	})
}

// benchModels resolves every chat to one model.
type benchModels struct{ m worker.Model }

func (m benchModels) Resolve(uuid.NullUUID) (worker.Model, error) { return m.m, nil }

func benchOwner(b *testing.B, s store.Store) uuid.UUID {
	b.Helper()
	ctx := context.Background()
	id := uuid.New()
	require.NoError(b, s.InTx(ctx, func(tx store.Tx) error {
		_, err := tx.UserInsert(ctx, store.UserInsertParams{ID: id, Name: "bench", Now: time.Now()})
		return err
	}))
	return id
}

// BenchmarkTurns: complete turns per second with the demo model (no token
// delay) through the state machine and the worker: create a chat with a
// message, wait for its chat:update that says waiting.
func BenchmarkTurns(b *testing.B) {
	benchStores(b, func(b *testing.B, s store.Store) {
		ctx := context.Background()
		var ps pubsub.Pubsub = pubsub.NewMemory()
		leases := false
		if pg, ok := s.(*postgres.Store); ok {
			p, err := postgres.NewPubsub(ctx, pg.Pool())
			require.NoError(b, err)
			b.Cleanup(func() { p.Close() })
			ps, leases = p, true
		}
		mcfg := chatstate.Config{}
		if leases {
			mcfg.LeaseTimeout = worker.DefaultLeaseTimeout
		}
		m := chatstate.New(s, ps, mcfg)
		buf := partbuf.New(partbuf.Config{})
		require.NoError(b, buf.Start(ctx))
		b.Cleanup(buf.Stop)
		w := worker.New(worker.Config{Leases: leases, RootLimit: 1 << 30}, worker.Deps{
			Machine: m, Store: s, Pubsub: ps, Buffer: buf,
			Models: benchModels{worker.Model{ID: uuid.New(), Provider: demo.New(demo.Config{TokenDelay: demo.NoDelay}), Name: "demo"}},
			Log:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		m.SetAdmitter(w) // as the app does
		require.NoError(b, w.Start(ctx))
		b.Cleanup(w.Stop)
		owner := benchOwner(b, s)

		b.ResetTimer()
		for range b.N {
			id := uuid.New()
			done := make(chan struct{}, 1)
			unsubscribe, err := ps.Subscribe(ctx, pubsub.ChannelUpdate(id.String()), func(payload []byte) {
				var p chatstate.UpdatePayload
				if json.Unmarshal(payload, &p) == nil && p.Status == store.ChatStatusWaiting {
					select {
					case done <- struct{}{}:
					default:
					}
				}
			})
			require.NoError(b, err)
			require.NoError(b, m.Do(ctx, func(t *chatstate.Tx) error {
				_, err := t.Create(chatstate.CreateParams{
					ID: id, OwnerID: owner, Title: "bench", TitleSource: store.TitleSourceUser,
					Input: chatstate.UserInput{Content: sdk.Text("Tell me something.")},
				})
				return err
			}))
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				b.Fatalf("turn of chat %s did not finish", id)
			}
			unsubscribe()
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "turns/s")
	})
}

// BenchmarkRawCommit: single-row commits per second, each a transaction
// that locks one chat and bumps its snapshot_version.
func BenchmarkRawCommit(b *testing.B) {
	benchStores(b, func(b *testing.B, s store.Store) {
		ctx := context.Background()
		owner := benchOwner(b, s)
		id := uuid.New()
		require.NoError(b, s.InTx(ctx, func(tx store.Tx) error {
			_, err := tx.ChatInsert(ctx, store.ChatInsertParams{
				ID: id, OwnerID: owner, Title: "bench", TitleSource: store.TitleSourceUser,
				Status: store.ChatStatusWaiting, Now: time.Now(),
			})
			return err
		}))

		b.ResetTimer()
		for range b.N {
			require.NoError(b, s.InTx(ctx, func(tx store.Tx) error {
				if _, err := tx.ChatLock(ctx, id); err != nil {
					return err
				}
				_, err := tx.ChatBumpSnapshot(ctx, id)
				return err
			}))
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
	})
}
