package worker_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
	"github.com/chatd/chatd/store/postgres"
)

// Crash recovery (DESIGN.md rule 6, "Nothing is lost"): a process that dies
// mid-generation leaves its chat owned by a worker id that no longer
// exists; the next owner finishes the turn, and no committed message is
// lost or duplicated.

// requireOneTurn checks that the chat holds exactly the prompt and one
// answer.
func requireOneTurn(t testing.TB, c *sdk.Client, chat sdk.Chat, prompt, answer string) {
	t.Helper()
	resp, err := c.ChatMessages(context.Background(), chat.ID, sdk.MessagesOptions{Limit: 100})
	require.NoError(t, err)
	require.Equal(t, []string{"user: " + prompt, "assistant: " + answer}, transcript(resp.Messages))
	require.Empty(t, resp.QueuedMessages)
}

// waitClientStatus polls the chat through c until it has status.
func waitClientStatus(t testing.TB, c *sdk.Client, chat sdk.Chat, status sdk.ChatStatus) sdk.Chat {
	t.Helper()
	var last sdk.Chat
	require.Eventually(t, func() bool {
		got, err := c.Chat(context.Background(), chat.ID)
		if err != nil {
			return false
		}
		last = got
		return got.Status == status
	}, 30*time.Second, 10*time.Millisecond, "chat %s never reached %s", chat.ID, status)
	return last
}

func TestCrashRecoverySQLiteRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hang := llmtest.Join(llmtest.TextChunks("Half an"), llmtest.Hang())
	llmSrv := llmtest.NewOpenAI(t, hang, llmtest.TextChunks("The whole answer."))
	token := auth.NewToken()
	cfg := config.Config{
		DB: filepath.Join(t.TempDir(), "chatd.db"), BootstrapToken: token,
		OpenAIBaseURL: llmSrv.URL, DefaultModel: "openai/test-model", Worker: fastWorker(),
	}

	// The first process starts the turn and dies while the model streams.
	a1, err := app.New(ctx, cfg, io.Discard)
	require.NoError(t, err)
	runCtx, crash := context.WithCancel(ctx)
	require.NoError(t, a1.Start(runCtx))
	srv1 := httptest.NewServer(a1.Handler())
	c1 := &sdk.Client{BaseURL: srv1.URL, Token: token, HTTP: srv1.Client()}
	chat, err := c1.CreateChat(ctx, sdk.CreateChatRequest{Content: sdk.Text("A long question"), Title: "crash"})
	require.NoError(t, err)
	waitClosed(t, hang.Started(), "the model to stream")
	crash() // no Abandon, no commit: the worker just stops
	a1.Stop()
	srv1.Close()
	dead := storeChat(t, a1.Internals().Store, chat.ID)
	require.Equal(t, a1.Internals().Worker.ID(), dead.WorkerID.UUID, "the chat stays owned by the dead worker")
	require.Equal(t, "running", string(dead.Status))
	require.NoError(t, a1.Close())

	// The next process on the same file takes the chat over at startup.
	a2, err := app.New(ctx, cfg, io.Discard)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, a2.Close()) })
	require.NoError(t, a2.Start(ctx))
	t.Cleanup(a2.Stop)
	require.NotEqual(t, a1.Internals().Worker.ID(), a2.Internals().Worker.ID(), "a new process has a new worker id")
	srv2 := httptest.NewServer(a2.Handler())
	t.Cleanup(srv2.Close)
	c2 := &sdk.Client{BaseURL: srv2.URL, Token: token, HTTP: srv2.Client()}

	done := waitClientStatus(t, c2, chat, sdk.ChatStatusWaiting)
	require.Nil(t, done.LastError)
	requireOneTurn(t, c2, chat, "A long question", "The whole answer.")
	require.Len(t, llmSrv.Requests(), 2)
}

func TestCrashRecoveryKilledProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the chatd binary")
	}
	t.Parallel()
	bin := buildChatd(t)
	hang := llmtest.Join(llmtest.TextChunks("Half an"), llmtest.Hang())
	llmSrv := llmtest.NewOpenAI(t, hang, llmtest.TextChunks("Answer after the crash."))
	token := auth.NewToken()
	db := filepath.Join(t.TempDir(), "chatd.db")

	first, c1 := startChatd(t, bin, db, token, llmSrv.URL)
	chat, err := c1.CreateChat(context.Background(), sdk.CreateChatRequest{Content: sdk.Text("A long question"), Title: "kill"})
	require.NoError(t, err)
	waitClosed(t, hang.Started(), "the model to stream")
	require.NoError(t, first.cmd.Process.Kill()) // SIGKILL: nothing runs on the way out
	first.wait()

	_, c2 := startChatd(t, bin, db, token, llmSrv.URL)
	done := waitClientStatus(t, c2, chat, sdk.ChatStatusWaiting)
	require.Nil(t, done.LastError)
	requireOneTurn(t, c2, chat, "A long question", "Answer after the crash.")
	require.Len(t, llmSrv.Requests(), 2)
}

// chatdBuild is the chatd binary the tests that run it share: one build
// (with -race, a link of about half a minute on two cores) per package run.
var chatdBuild struct {
	dir    string // TestMain's, removed after the tests
	once   sync.Once
	path   string
	output []byte
	err    error
}

// buildChatd builds cmd/chatd once for the package's tests, with the race
// detector when the tests have it, and returns its path.
func buildChatd(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build chatd")
	}
	b := &chatdBuild
	b.once.Do(func() {
		b.path = filepath.Join(b.dir, "chatd")
		args := []string{"build", "-o", b.path}
		if raceEnabled {
			args = append(args, "-race")
		}
		cmd := exec.Command(goBin, append(args, "./cmd/chatd")...)
		cmd.Dir = filepath.Join("..", "..") // the module root
		b.output, b.err = cmd.CombinedOutput()
	})
	require.NoError(t, b.err, "go build: %s", b.output)
	return b.path
}

// process is a running chatd binary.
type process struct {
	cmd  *exec.Cmd
	logs *apptest.LogBuffer
	once sync.Once
}

func (p *process) wait() { p.once.Do(func() { _ = p.cmd.Wait() }) }

// startChatd runs `chatd serve` on a free port and waits until it answers;
// env adds settings (NAME=value).
func startChatd(t *testing.T, bin, db, token, openAIURL string, env ...string) (*process, *sdk.Client) {
	t.Helper()
	addr := freeAddr(t)
	p := &process{logs: &apptest.LogBuffer{}}
	p.cmd = exec.Command(bin, "serve", "--addr", addr, "--db", db)
	p.cmd.Env = append(os.Environ(),
		"CHATD_BOOTSTRAP_TOKEN="+token,
		"CHATD_DEFAULT_MODEL=openai/test-model",
		"OPENAI_BASE_URL="+openAIURL,
		"OPENAI_API_KEY=test-key",
	)
	p.cmd.Env = append(p.cmd.Env, env...)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	require.NoError(t, p.cmd.Start())
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		p.wait()
		if t.Failed() {
			t.Logf("chatd %s logs:\n%s", addr, p.logs.String())
		}
	})
	base := "http://" + addr
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 60*time.Second, 20*time.Millisecond, "chatd did not start: %s", p.logs)
	return p, sdk.New(base, token)
}

// freeAddr returns a loopback address with a port that was free just now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// TestCrashRecoveryPostgresReplicaTakesOver: two replicas share one
// Postgres schema. Replica A dies mid-generation; once its lease is stale,
// replica B's acquisition takes the chat over and finishes the turn.
func TestCrashRecoveryPostgresReplicaTakesOver(t *testing.T) {
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
	cfg.Worker.HeartbeatInterval, cfg.Worker.LeaseTimeout = 100*time.Millisecond, 300*time.Millisecond

	replica := func(s *postgres.Store, runCtx context.Context) (*app.App, *sdk.Client) {
		a, err := app.NewWithStore(ctx, cfg, s, io.Discard)
		return a, serveApp(t, runCtx, token, a, err)
	}

	runA, crashA := context.WithCancel(ctx)
	a, cA := replica(sA, runA)
	chat, err := cA.CreateChat(ctx, sdk.CreateChatRequest{Content: sdk.Text("A long question"), Title: "replicas"})
	require.NoError(t, err)
	waitClosed(t, hang.Started(), "the model to stream on replica A")
	require.Equal(t, a.Internals().Worker.ID(), storeChat(t, sA, chat.ID).WorkerID.UUID, "replica A owns the chat")

	crashA() // replica A dies: no Abandon, its heartbeats stop
	a.Stop()
	// Checked before replica B starts: B would take the chat over once the
	// lease goes stale and, under load, could finish the turn and release
	// it before the check ran.
	require.Equal(t, a.Internals().Worker.ID(), storeChat(t, sB, chat.ID).WorkerID.UUID, "nothing released the chat on the way out")
	b, cB := replica(sB, ctx)

	done := waitClientStatus(t, cB, chat, sdk.ChatStatusWaiting)
	require.Nil(t, done.LastError)
	requireOneTurn(t, cB, chat, "A long question", "Answer from replica B.")
	require.Len(t, llmSrv.Requests(), 2)
	require.NotEqual(t, a.Internals().Worker.ID(), b.Internals().Worker.ID())
}

// TestCrashWithQueuedDurableRequest: a process dies (the in-process
// equivalent of kill -9: its worker stops, nothing is released or
// committed on the way out) while one durable request's turn streams and a
// second waits in the queue behind it. The next owner (the next process on
// the SQLite file, another replica on Postgres) runs both turns exactly
// once, in order; replaying either request returns its saved turn and
// runs nothing again.
func TestCrashWithQueuedDurableRequest(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		ctx := context.Background()
		hang := llmtest.Join(llmtest.TextChunks("Half an"), llmtest.Hang())
		llmSrv := llmtest.NewOpenAI(t, hang, llmtest.TextChunks("Answer one."), llmtest.TextChunks("Answer two."))
		token := auth.NewToken()
		cfg := config.Config{BootstrapToken: token, OpenAIBaseURL: llmSrv.URL, DefaultModel: "openai/test-model", Worker: fastWorker()}
		first, second := crashPair(t, newStore, cfg)

		runCtx, crash := context.WithCancel(ctx)
		a1, c1 := first(runCtx)
		chat, err := c1.CreateChat(ctx, sdk.CreateChatRequest{Title: "queued crash"})
		require.NoError(t, err)
		r1, r2 := uuid.New(), uuid.New()
		sent, err := c1.SendMessage(ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("first"), RequestID: &r1})
		require.NoError(t, err)
		require.False(t, sent.Queued)
		waitClosed(t, hang.Started(), "the first turn to stream")
		sent, err = c1.SendMessage(ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("second"), RequestID: &r2})
		require.NoError(t, err)
		require.True(t, sent.Queued, "the second request waits behind the first")

		crash()
		a1.Stop()
		dead := storeChat(t, a1.Internals().Store, chat.ID)
		require.Equal(t, a1.Internals().Worker.ID(), dead.WorkerID.UUID, "the chat stays owned by the dead worker")
		require.Equal(t, store.ChatStatusRunning, dead.Status)

		_, c2 := second(ctx)
		require.Eventually(t, func() bool {
			page, err := c2.ChatMessages(ctx, chat.ID, sdk.MessagesOptions{Limit: 100})
			return err == nil && len(page.QueuedMessages) == 0 && len(page.Messages) == 4
		}, 30*time.Second, 10*time.Millisecond, "both turns finish")
		done := waitClientStatus(t, c2, chat, sdk.ChatStatusWaiting)
		require.Nil(t, done.LastError)
		want := []string{"user: first", "assistant: Answer one.", "user: second", "assistant: Answer two."}
		page, err := c2.ChatMessages(ctx, chat.ID, sdk.MessagesOptions{Limit: 100})
		require.NoError(t, err)
		require.Equal(t, want, transcript(page.Messages), "each turn ran once, in order")
		require.Len(t, llmSrv.Requests(), 3, "the interrupted attempt, its retry, the queued turn")

		for _, r := range []struct {
			id           uuid.UUID
			text, answer string
		}{{r1, "first", "Answer one."}, {r2, "second", "Answer two."}} {
			again, err := c2.SendMessage(ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text(r.text), RequestID: &r.id})
			require.NoError(t, err)
			require.NotNil(t, again.Replayed)
			require.True(t, *again.Replayed, "request %q is replayed", r.text)
			require.NotNil(t, again.Outcome)
			require.Equal(t, "completed", again.Outcome.Status)
			require.Equal(t, []string{"user: " + r.text, "assistant: " + r.answer}, transcript(again.Messages))
		}
		page, err = c2.ChatMessages(ctx, chat.ID, sdk.MessagesOptions{Limit: 100})
		require.NoError(t, err)
		require.Equal(t, want, transcript(page.Messages), "the replays added nothing")
		require.Len(t, llmSrv.Requests(), 3, "the replays called no model")
	})
}

// crashPair returns how to start the process that will crash (first) and
// the one that takes over after it (second) on one database: the next
// process on the same SQLite file (started once the first is closed), or
// on Postgres another replica with short leases on a store of its own.
// Each returns the app, serving on its own HTTP server, and a client with
// cfg's bootstrap token; cleanups stop and close them.
func crashPair(t *testing.T, newStore func(t testing.TB) store.Store, cfg config.Config) (first, second func(runCtx context.Context) (*app.App, *sdk.Client)) {
	t.Helper()
	ctx := context.Background()
	if path.Base(t.Name()) == "sqlite" { // dbtest.Each's subtest
		cfg.DB = filepath.Join(t.TempDir(), "chatd.db")
		var a1 *app.App
		first = func(runCtx context.Context) (*app.App, *sdk.Client) {
			a, err := app.New(ctx, cfg, io.Discard)
			require.NoError(t, err)
			a1 = a
			require.NoError(t, a.Start(runCtx))
			srv := httptest.NewServer(a.Handler())
			t.Cleanup(srv.Close)
			return a, &sdk.Client{BaseURL: srv.URL, Token: cfg.BootstrapToken, HTTP: srv.Client()}
		}
		second = func(runCtx context.Context) (*app.App, *sdk.Client) {
			a1.Stop()
			require.NoError(t, a1.Close()) // one process owns the file
			a, err := app.New(ctx, cfg, io.Discard)
			return a, serveApp(t, runCtx, cfg.BootstrapToken, a, err)
		}
		return first, second
	}
	cfg.Worker.HeartbeatInterval, cfg.Worker.LeaseTimeout = 100*time.Millisecond, 300*time.Millisecond
	dsn, schema := dbtest.PostgresSchema(t)
	open := func() *postgres.Store {
		s, err := postgres.Open(ctx, dsn, postgres.Options{SearchPath: schema})
		require.NoError(t, err)
		return s
	}
	sA := open()
	migrations, err := sA.Migrations()
	require.NoError(t, err)
	_, err = migrations.Up(ctx)
	require.NoError(t, err)
	replica := func(s *postgres.Store) func(context.Context) (*app.App, *sdk.Client) {
		return func(runCtx context.Context) (*app.App, *sdk.Client) {
			a, err := app.NewWithStore(ctx, cfg, s, io.Discard)
			return a, serveApp(t, runCtx, cfg.BootstrapToken, a, err)
		}
	}
	return replica(sA), replica(open())
}
