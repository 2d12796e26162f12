package stream_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/partbuf"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/worker"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
	"github.com/chatd/chatd/store/postgres"
)

// fastLeases lets a replica take over a chat whose owner stopped within
// a few seconds. The lease is twenty heartbeats long: at 700 ms a loaded
// machine (load average 20) let the owner's own lease go stale mid-turn,
// so the turn moved attempts before the test's first part.
var fastLeases = worker.Config{
	AcquireInterval: 100 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond,
	LeaseTimeout: 2 * time.Second, SyncInterval: 200 * time.Millisecond,
}

// TestStreamReplicas: on Postgres, a viewer on replica A (no worker) sees
// the live parts of a turn that runs on replica B, relayed over B's parts
// endpoint; when B's worker stops mid-turn and replica C takes the chat
// over, the same connection follows the relay to C and sees the turn
// complete. A viewer on B moves from B's local buffer to C the same way.
func TestStreamReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, schema := dbtest.PostgresSchema(t)
	llm := newPacedLLM(t)
	start := func(cfg config.Config) *replica {
		s, err := postgres.Open(ctx, dsn, postgres.Options{SearchPath: schema})
		require.NoError(t, err)
		p, err := s.Migrations()
		require.NoError(t, err)
		_, err = p.Up(ctx)
		require.NoError(t, err)
		return startApp(t, s, cfg)
	}
	cfg := pacedConfig(llm)
	cfg.Worker = fastLeases
	viewOnly := cfg
	viewOnly.NoWorker = true
	a := start(viewOnly)
	b := start(cfg)

	chat := createChat(t, a.client, "")
	onA := dial(t, a.srv.URL, chat.ID)
	onA.untilStatus(sdk.ChatStatusWaiting)
	onB := dial(t, b.srv.URL, chat.ID)
	onB.untilStatus(sdk.ChatStatusWaiting)
	_, err := a.client.SendMessage(ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("across replicas")})
	require.NoError(t, err)

	first := llm.next(t)
	row := chatRow(t, a.app.Internals().Store, chat.ID)
	require.Equal(t, uuid.NullUUID{UUID: b.app.Internals().Worker.ID(), Valid: true}, row.WorkerID, "replica B owns the chat")
	first.send(t, "one ", "two ")
	onA.untilPart(2)
	onB.untilPart(2)
	_, err = a.app.Internals().Buffer.GetParts(partbuf.Episode{ChatID: chat.ID, HistoryVersion: row.HistoryVersion, GenerationAttempt: 1})
	require.ErrorIs(t, err, partbuf.ErrEpisodeNotFound, "A's parts came from B, not from A's buffer")
	require.Equal(t, 1.0, gauge(t, a.app.Internals().Metrics.Registry, "chatd_stream_relay_connections", "direction", "outbound"), "A reads B")
	require.Equal(t, 1.0, gauge(t, b.app.Internals().Metrics.Registry, "chatd_stream_relay_connections", "direction", "inbound"), "B serves A")
	require.Equal(t, 1.0, gauge(t, b.app.Internals().Metrics.Registry, "chatd_stream_viewers"), "onB")

	// B's worker stops mid-turn without abandoning the chat; C takes over
	// once B's lease is stale.
	b.app.Internals().Worker.Stop()
	first.ended(t)
	c := start(cfg)
	second := llm.next(t)
	require.Equal(t, uuid.NullUUID{UUID: c.app.Internals().Worker.ID(), Valid: true}, chatRow(t, a.app.Internals().Store, chat.ID).WorkerID,
		"replica C owns the chat")
	second.send(t, "three ", "four")
	onA.untilPart(2)
	onB.untilPart(2)
	second.finish(t)

	for name, v := range map[string]*viewer{"on A": onA, "on B": onB} {
		v.untilIdle()
		ms := summarize(history(v.seen))
		require.Len(t, ms, 2, "viewer %s", name)
		require.Equal(t, "three four", ms[1].Text, "viewer %s", name)
		parts := partsByEpisode(t, v.seen)
		require.Equal(t, map[episodeKey]string{
			{row.HistoryVersion, 1}: "one two ",
			{row.HistoryVersion, 2}: "three four",
		}, parts, "viewer %s: both attempts streamed, gap-free", name)
	}
}

func chatRow(t testing.TB, s store.Store, id uuid.UUID) store.Chat {
	t.Helper()
	var c store.Chat
	require.NoError(t, s.ReadTx(context.Background(), func(tx store.Reader) error {
		var err error
		c, err = tx.ChatGet(context.Background(), id)
		return err
	}))
	return c
}
