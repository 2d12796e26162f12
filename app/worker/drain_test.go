package worker_test

import (
	"context"
	"io"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store/dbtest"
	"github.com/chatd/chatd/store/postgres"
)

// Graceful shutdown (SIGTERM, App.Shutdown): a replica stops acquiring,
// then hands its running chats to the other replicas (Postgres) or lets
// them finish within the shutdown timeout (SQLite), leaving what is left
// for the next start. Nothing is lost or answered twice.

// TestShutdownHandsRunningChatToAnotherReplica: two replicas share one
// Postgres schema with a lease timeout far beyond the test, and acquisition
// timers as long, so replica B can only take the chat over because replica
// A released it on shutdown (and told B so on chat:ownership). A's step in
// flight is not committed; B runs it again and the chat ends with exactly
// one answer.
func TestShutdownHandsRunningChatToAnotherReplica(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, schema := dbtest.PostgresSchema(t)
	open := func() *postgres.Store {
		s, err := postgres.Open(ctx, dsn, postgres.Options{SearchPath: schema})
		require.NoError(t, err)
		return s
	}
	sA, sB := open(), open()
	migrations, err := sA.Migrations()
	require.NoError(t, err)
	_, err = migrations.Up(ctx)
	require.NoError(t, err)

	hang := llmtest.Join(llmtest.TextChunks("Half an"), llmtest.Hang())
	llmSrv := llmtest.NewOpenAI(t, hang, llmtest.TextChunks("Answer from replica B."))
	token := auth.NewToken()
	cfg := config.Config{BootstrapToken: token, OpenAIBaseURL: llmSrv.URL, DefaultModel: "openai/test-model", Worker: fastWorker()}
	cfg.Worker.LeaseTimeout, cfg.Worker.HeartbeatInterval = 10*time.Minute, time.Minute
	cfg.Worker.AcquireInterval = 10 * time.Minute

	replica := func(s *postgres.Store) (*app.App, *sdk.Client) {
		a, err := app.NewWithStore(ctx, cfg, s, io.Discard)
		return a, serveApp(t, ctx, token, a, err)
	}

	a, cA := replica(sA)
	chat, err := cA.CreateChat(ctx, sdk.CreateChatRequest{Content: sdk.Text("A long question"), Title: "handoff"})
	require.NoError(t, err)
	waitClosed(t, hang.Started(), "the model to stream on replica A")
	require.Equal(t, a.Internals().Worker.ID(), storeChat(t, sA, chat.ID).WorkerID.UUID, "replica A owns the chat")

	b, cB := replica(sB) // its first pass finds A's fresh lease and leaves the chat
	require.NotEqual(t, b.Internals().Worker.ID(), storeChat(t, sB, chat.ID).WorkerID.UUID)

	shutdownCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	require.NoError(t, a.Shutdown(shutdownCtx))
	require.Zero(t, a.Internals().Worker.Runners(), "A runs nothing after its shutdown")

	done := waitClientStatus(t, cB, chat, sdk.ChatStatusWaiting)
	require.Nil(t, done.LastError)
	requireOneTurn(t, cB, chat, "A long question", "Answer from replica B.")
	require.Len(t, llmSrv.Requests(), 2, "A's interrupted step, then B's")
}

// TestShutdownOnSQLiteFinishesRunningTurn: one process owns a SQLite file,
// so nobody could take its chats over: a turn still running at shutdown
// may finish within the shutdown timeout, and does.
func TestShutdownOnSQLiteFinishesRunningTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	release := make(chan struct{})
	slow := llmtest.Join(llmtest.TextChunks("Half an"), llmtest.Pause(release), llmtest.TextChunks(" answer."))
	llmSrv := llmtest.NewOpenAI(t, slow)
	token := auth.NewToken()
	cfg := config.Config{
		DB: filepath.Join(t.TempDir(), "chatd.db"), BootstrapToken: token,
		OpenAIBaseURL: llmSrv.URL, DefaultModel: "openai/test-model", Worker: fastWorker(),
	}
	a, err := app.New(ctx, cfg, io.Discard)
	c := serveApp(t, ctx, token, a, err)

	chat, err := c.CreateChat(ctx, sdk.CreateChatRequest{Content: sdk.Text("A long question"), Title: "drain"})
	require.NoError(t, err)
	waitClosed(t, slow.Started(), "the model to stream")

	shutdownCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- a.Shutdown(shutdownCtx) }()
	waitClosed(t, a.Internals().Worker.Draining(), "the drain to begin")
	require.Equal(t, "running", string(storeChat(t, a.Internals().Store, chat.ID).Status), "the turn is still running when the drain begins")
	close(release) // the model finishes its answer during the drain
	require.NoError(t, <-shut)

	done := storeChat(t, a.Internals().Store, chat.ID)
	require.Equal(t, "waiting", string(done.Status), "the turn finished before the process stopped")
	require.Nil(t, done.LastError)
	require.False(t, done.WorkerID.Valid, "the finished chat was given up")
	requireOneTurn(t, c, chat, "A long question", "Half an answer.")
	require.Len(t, llmSrv.Requests(), 1)
}

// TestShutdownOnSQLiteLeavesLongTurnForNextStart: a turn that outlasts the
// shutdown timeout is stopped, never marked failed, and left owned by the
// stopped worker like after a crash; the next start on the file resumes
// it and the chat ends with exactly one answer.
func TestShutdownOnSQLiteLeavesLongTurnForNextStart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hang := llmtest.Join(llmtest.TextChunks("Half an"), llmtest.Hang())
	llmSrv := llmtest.NewOpenAI(t, hang, llmtest.TextChunks("The whole answer."))
	token := auth.NewToken()
	cfg := config.Config{
		DB: filepath.Join(t.TempDir(), "chatd.db"), BootstrapToken: token,
		OpenAIBaseURL: llmSrv.URL, DefaultModel: "openai/test-model", Worker: fastWorker(),
	}

	a1, err := app.New(ctx, cfg, io.Discard)
	require.NoError(t, err)
	require.NoError(t, a1.Start(ctx))
	srv1 := httptest.NewServer(a1.Handler())
	c1 := &sdk.Client{BaseURL: srv1.URL, Token: token, HTTP: srv1.Client()}
	chat, err := c1.CreateChat(ctx, sdk.CreateChatRequest{Content: sdk.Text("A long question"), Title: "drain"})
	require.NoError(t, err)
	waitClosed(t, hang.Started(), "the model to stream")
	// The model never finishes: the drain ends at its deadline.
	shutdownCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	require.NoError(t, a1.Shutdown(shutdownCtx))
	cancel()
	srv1.Close()
	left := storeChat(t, a1.Internals().Store, chat.ID)
	require.Equal(t, "running", string(left.Status), "not failed: left to resume")
	require.Nil(t, left.LastError)
	require.Equal(t, a1.Internals().Worker.ID(), left.WorkerID.UUID, "still owned by the stopped worker")
	require.NoError(t, a1.Close())

	a2, err := app.New(ctx, cfg, io.Discard)
	c2 := serveApp(t, ctx, token, a2, err)
	done := waitClientStatus(t, c2, chat, sdk.ChatStatusWaiting)
	require.Nil(t, done.LastError)
	requireOneTurn(t, c2, chat, "A long question", "The whole answer.")
	require.Len(t, llmSrv.Requests(), 2)
}
