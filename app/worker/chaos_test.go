package worker_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store/dbtest"
	"github.com/chatd/chatd/store/postgres"
)

// TestPostgresConnectionsKilledUnderLoad: while clients create chats and
// send durable follow-ups, every database connection of the server (its
// pool and its LISTEN connection) is terminated again and again
// (pg_terminate_backend, what a Postgres restart does to them), every
// 150 ms for 3 s. Clients
// only ever see a success or a 503 they retry with the same request id,
// never a 500; once the database stays up every chat finishes both turns,
// each user message stored once.
func TestPostgresConnectionsKilledUnderLoad(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn, schema := dbtest.PostgresSchema(t)
	appName := "chatd-chaos-" + uuid.NewString()[:8] // only this server's connections are killed
	s, err := postgres.Open(ctx, dsn+" application_name="+appName, postgres.Options{SearchPath: schema})
	require.NoError(t, err)
	migrations, err := s.Migrations()
	require.NoError(t, err)
	_, err = migrations.Up(ctx)
	require.NoError(t, err)
	killer, err := pgxpool.New(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(killer.Close)

	llmSrv := llmtest.NewOpenAI(t)
	llmSrv.SetDefault(llmtest.TextChunks("Done."))
	token := auth.NewToken()
	cfg := config.Config{BootstrapToken: token, OpenAIBaseURL: llmSrv.URL, DefaultModel: "openai/test-model", Worker: fastWorker()}
	cfg.Worker.HeartbeatInterval, cfg.Worker.LeaseTimeout = 100*time.Millisecond, time.Second
	logs := &apptest.LogBuffer{} // shown when a chat does not finish
	a, err := app.NewWithStore(ctx, cfg, s, logs)
	c := serveApp(t, ctx, token, a, err)

	// The chaos: for 3 s, every server connection is terminated every
	// 150 ms; then the database stays up, as after a restart.
	var (
		chaos  sync.WaitGroup
		killed int
	)
	chaos.Add(1)
	go func() {
		defer chaos.Done()
		tick := time.NewTicker(150 * time.Millisecond)
		defer tick.Stop()
		for range 20 {
			var n int
			err := killer.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, appName).Scan(&n)
			if err == nil {
				killed += n
			}
			<-tick.C
		}
	}()

	const clients = 6
	var (
		mu       sync.Mutex
		statuses = map[int]int{}
		chats    = make([]uuid.UUID, clients)
	)
	// retry calls fn until it succeeds, with the same request id; every
	// failure must be a 503.
	retry := func(t *testing.T, what string, fn func() error) {
		for {
			err := fn()
			status := http.StatusOK
			var e *sdk.Error
			if errors.As(err, &e) {
				status = e.StatusCode
			} else if err != nil {
				t.Errorf("%s: %v", what, err)
				return
			}
			mu.Lock()
			statuses[status]++
			mu.Unlock()
			if status != http.StatusServiceUnavailable {
				if err != nil {
					t.Errorf("%s: only a 503 may fail a request: %v", what, err)
				}
				return
			}
			if ctx.Err() != nil {
				t.Errorf("%s: still 503 at the deadline", what)
				return
			}
		}
	}
	var load sync.WaitGroup
	for i := range clients {
		load.Add(1)
		go func() {
			defer load.Done()
			create, send := uuid.New(), uuid.New()
			retry(t, "create", func() error {
				chat, err := c.CreateChat(ctx, sdk.CreateChatRequest{Content: sdk.Text(fmt.Sprintf("first %d", i)), Title: "chaos", RequestID: &create})
				chats[i] = chat.ID
				return err
			})
			retry(t, "send", func() error {
				_, err := c.SendMessage(ctx, chats[i], sdk.CreateChatMessageRequest{Content: sdk.Text(fmt.Sprintf("second %d", i)), RequestID: &send})
				var e *sdk.Error
				if errors.As(err, &e) && e.Code == sdk.CodeInvocationInProgress {
					return nil // admitted; its turn runs
				}
				return err
			})
		}()
	}
	chaos.Wait()
	load.Wait()
	t.Logf("statuses %v, connections killed %d", statuses, killed)
	require.NotZero(t, killed, "the chaos killed connections")
	require.Zero(t, statuses[http.StatusInternalServerError])

	for i, id := range chats {
		want := []string{fmt.Sprintf("user: first %d", i), "assistant: Done.", fmt.Sprintf("user: second %d", i), "assistant: Done."}
		var (
			got  []string
			last string // what the chat looked like at the last look
		)
		if !assert.Eventually(t, func() bool {
			page, err := c.ChatMessages(ctx, id, sdk.MessagesOptions{Limit: 100})
			if err != nil || len(page.QueuedMessages) > 0 {
				last = fmt.Sprintf("messages: err %v, %d queued", err, len(page.QueuedMessages))
				return false
			}
			got = transcript(page.Messages)
			chat, err := c.Chat(ctx, id)
			last = fmt.Sprintf("status %s (err %v), transcript %q", chat.Status, err, got)
			if chat.LastError != nil {
				last += fmt.Sprintf(", last_error %+v", *chat.LastError)
			}
			return err == nil && chat.Status == sdk.ChatStatusWaiting && len(got) == len(want)
		}, time.Minute, 20*time.Millisecond, "chat %d finishes both turns", i) {
			t.Fatalf("chat %d (%s) did not finish: %s\nserver log:\n%s", i, id, last, logs.String())
		}
		require.Equal(t, want, got, "chat %d: each message once", i)
	}
}
