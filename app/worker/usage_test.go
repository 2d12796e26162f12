package worker_test

import (
	"context"
	"io"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
	"github.com/chatd/chatd/store/postgres"
)

// ledger reads a chat's usage records, one row per record kind-less sum.
func ledger(t testing.TB, s store.Store, chatID uuid.UUID) store.UsageRow {
	t.Helper()
	var rows []store.UsageRow
	require.NoError(t, s.ReadTx(context.Background(), func(tx store.Reader) error {
		var err error
		rows, err = tx.UsageSum(context.Background(), store.UsageSumParams{ChatIDs: []uuid.UUID{chatID}})
		return err
	}))
	require.Len(t, rows, 1)
	return rows[0]
}

// TestUsageRecordedOnceAcrossARetry: a step whose first provider call
// fails and whose retry answers is one ledger record, with the tokens the
// answering call reported, on the chat's object too.
func TestUsageRecordedOnceAcrossARetry(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		u := llmtest.Usage{InputTokens: 11, OutputTokens: 7, CacheReadTokens: 3, ReasoningTokens: 2}
		s := newStore(t)
		e := setup(t, s, providers[0], []llmtest.Reply{llmtest.HTTPError(503, "busy"), llmtest.TextChunks("fine").WithUsage(u)})
		chat := e.create(sdk.CreateChatRequest{Content: sdk.Text("hi")})
		// A new chat is unowned until a worker takes it: wait for the
		// turn's end first.
		e.waitStatus(chat.ID, sdk.ChatStatusWaiting)
		e.waitUnowned(chat.ID)
		require.Len(t, e.llm.Requests(), 2)
		got := ledger(t, s, chat.ID)
		require.Equal(t, int64(1), got.Calls, "one record for the step, none for the failed attempt")
		require.Equal(t, store.UsageTokens{InputTokens: 11, OutputTokens: 7, CachedTokens: 3, ReasoningTokens: 2}, got.UsageTokens)
		require.Equal(t, &sdk.UsageTotals{InputTokens: 11, OutputTokens: 7, CachedTokens: 3, ReasoningTokens: 2}, e.chat(chat.ID).Usage)
		// The chat list carries the same totals; a chat with nothing
		// recorded carries none.
		idle := e.create(sdk.CreateChatRequest{Title: "idle"})
		list, err := e.c.ListChats(e.ctx, sdk.ListChatsOptions{})
		require.NoError(t, err)
		byID := map[uuid.UUID]sdk.Chat{}
		for _, c := range list {
			byID[c.ID] = c
		}
		require.Equal(t, e.chat(chat.ID).Usage, byID[chat.ID].Usage)
		require.Contains(t, byID, idle.ID)
		require.Nil(t, byID[idle.ID].Usage)
	})
}

// TestUsageRecordedOnceAcrossATakeover: the owner dies while its call
// streams (its usage never commits); the next owner (the next process on
// the SQLite file, another replica on Postgres) answers the step, which
// is recorded once, with the answering call's tokens.
func TestUsageRecordedOnceAcrossATakeover(t *testing.T) {
	// takeover runs a turn on a first owner (open(0)) that dies mid-stream
	// and a second (open(1)) that finishes it.
	takeover := func(t *testing.T, cfg config.Config, open func(i int, cfg config.Config) (*app.App, error)) {
		ctx := context.Background()
		hang := llmtest.Join(llmtest.TextChunks("Half an"), llmtest.Hang())
		llmSrv := llmtest.NewOpenAI(t, hang, llmtest.TextChunks("The answer.").WithUsage(llmtest.Usage{InputTokens: 21, OutputTokens: 4}))
		token := auth.NewToken()
		cfg.BootstrapToken, cfg.OpenAIBaseURL, cfg.DefaultModel, cfg.Worker = token, llmSrv.URL, "openai/test-model", fastWorker()
		cfg.Worker.HeartbeatInterval, cfg.Worker.LeaseTimeout = 100*time.Millisecond, 300*time.Millisecond
		runA, crashA := context.WithCancel(ctx)
		a, err := open(0, cfg)
		require.NoError(t, err)
		require.NoError(t, a.Start(runA))
		srvA := httptest.NewServer(a.Handler())
		cA := &sdk.Client{BaseURL: srvA.URL, Token: token, HTTP: srvA.Client()}
		chat, err := cA.CreateChat(ctx, sdk.CreateChatRequest{Content: sdk.Text("A long question"), Title: "takeover"})
		require.NoError(t, err)
		waitClosed(t, hang.Started(), "the model to stream on the first owner")
		crashA() // no Abandon, no commit
		a.Stop()
		srvA.Close()
		require.NoError(t, a.Close()) // on SQLite, one process owns the file
		b, err := open(1, cfg)
		cB := serveApp(t, ctx, token, b, err)
		waitClientStatus(t, cB, chat, sdk.ChatStatusWaiting)
		requireOneTurn(t, cB, chat, "A long question", "The answer.")
		require.Len(t, llmSrv.Requests(), 2)
		got := ledger(t, b.Internals().Store, chat.ID)
		require.Equal(t, int64(1), got.Calls, "the dead owner's call is not counted")
		require.Equal(t, store.UsageTokens{InputTokens: 21, OutputTokens: 4}, got.UsageTokens)
	}
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		db := filepath.Join(t.TempDir(), "chatd.db")
		takeover(t, config.Config{DB: db}, func(_ int, cfg config.Config) (*app.App, error) {
			return app.New(context.Background(), cfg, io.Discard)
		})
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		dsn, schema := dbtest.PostgresSchema(t)
		takeover(t, config.Config{}, func(i int, cfg config.Config) (*app.App, error) {
			s, err := postgres.Open(context.Background(), dsn, postgres.Options{SearchPath: schema})
			require.NoError(t, err)
			if i == 0 {
				m, err := s.Migrations()
				require.NoError(t, err)
				_, err = m.Up(context.Background())
				require.NoError(t, err)
			}
			return app.NewWithStore(context.Background(), cfg, s, io.Discard)
		})
	})
}

// TestBudgetStopsARunningTurnAfterItsStep: a step that spends the owner's
// budget commits (its tool call runs and is answered), then the turn stops
// with a budget error instead of calling the model again; the next prompt
// is refused with 429 BUDGET_EXCEEDED naming the limit.
func TestBudgetStopsARunningTurnAfterItsStep(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		s := newStore(t)
		e := setup(t, s, providers[0], []llmtest.Reply{
			llmtest.ToolCall("call-1", "current_time", `{}`).WithUsage(llmtest.Usage{InputTokens: 30, OutputTokens: 5}),
			llmtest.DefaultReply(),
		}, func(c *config.Config) { c.BuiltinTools, c.BudgetTokensPerDay = true, 20 })
		chat := e.create(sdk.CreateChatRequest{Content: sdk.Text("what time is it?")})
		done := e.waitStatus(chat.ID, sdk.ChatStatusError)
		require.NotNil(t, done.LastError)
		require.Equal(t, sdk.ChatErrorBudget, done.LastError.Kind)
		require.Contains(t, done.LastError.Message, "tokens_per_day")
		require.Len(t, e.llm.Requests(), 1, "no model call after the budget is spent")
		roles := []string{}
		for _, m := range e.messages(chat.ID) {
			roles = append(roles, m.Role)
		}
		require.Equal(t, []string{"user", "assistant", "tool"}, roles, "the step and its tool result are kept")

		_, err := e.c.SendMessage(e.ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("again")})
		var apiErr *sdk.Error
		require.ErrorAs(t, err, &apiErr)
		require.Equal(t, 429, apiErr.StatusCode)
		require.Equal(t, sdk.CodeBudgetExceeded, apiErr.Code)
		require.Contains(t, apiErr.Message, "tokens_per_day")
		require.Len(t, e.messages(chat.ID), 3, "the refused prompt created nothing")
	})
}

// TestGenAISpans: a provider call is a client span "chat {model}" with the
// GenAI attributes, a tool run an "execute_tool {tool}" span; no message
// content is on them by default.
func TestGenAISpans(t *testing.T) {
	replies := []llmtest.Reply{
		llmtest.ToolCall("call-1", "current_time", `{}`).WithUsage(llmtest.Usage{InputTokens: 12, OutputTokens: 3}),
		llmtest.TextChunks("It is noon."),
	}
	_, got, _ := tracedTurn(t, sqliteStore, replies, sdk.ChatStatusWaiting, "completed",
		func(c *config.Config) { c.BuiltinTools = true })
	calls := got.named("chat test-model")
	require.Len(t, calls, 2)
	first := calls[0]
	require.Equal(t, trace.SpanKindClient, first.SpanKind)
	for key, want := range map[string]string{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai-compat", // OPENAI_BASE_URL: an OpenAI-compatible server
		"gen_ai.request.model":  "test-model",
		"gen_ai.response.model": "test-model", "gen_ai.response.id": "chatcmpl-llmtest",
		"gen_ai.usage.input_tokens": "12", "gen_ai.usage.output_tokens": "3",
		"gen_ai.response.finish_reasons": `["tool_calls"]`,
	} {
		v, ok := attr(first, key)
		require.True(t, ok, "attribute %s", key)
		require.Equal(t, want, v, key)
	}
	require.Equal(t, "stream", got.parent(first))
	for _, s := range got {
		_, in := attr(s, "gen_ai.input.messages")
		_, out := attr(s, "gen_ai.output.messages")
		require.False(t, in || out, "no content on span %s", s.Name)
	}
	tool := got.one(t, "execute_tool current_time")
	for key, want := range map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "current_time", "gen_ai.tool.call.id": "call-1"} {
		v, _ := attr(tool, key)
		require.Equal(t, want, v, key)
	}
	require.Equal(t, "tool_call", got.parent(tool))
}
