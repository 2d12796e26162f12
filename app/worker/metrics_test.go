package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// count sums what the registry holds for the family name over the series
// whose labels include want: a histogram's observations, a counter's value.
func count(t testing.TB, reg prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	n, err := gathered(reg, name, want)
	require.NoError(t, err)
	return n
}

// gathered is count without the test: safe in a polled condition, which
// runs on another goroutine.
func gathered(reg prometheus.Gatherer, name string, want map[string]string) (float64, error) {
	fams, err := reg.Gather()
	if err != nil {
		return 0, err
	}
	var n float64
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if !hasLabels(m, want) {
				continue
			}
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM:
				n += float64(m.GetHistogram().GetSampleCount())
			case dto.MetricType_COUNTER:
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n, nil
}

// histogramSum is the sum of a histogram family's observations over the
// series whose labels include want.
func histogramSum(t testing.TB, reg prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	require.NoError(t, err)
	var sum float64
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, want) {
				sum += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

func stage(name string) map[string]string {
	return map[string]string{"stage": name, "scope": "turn", "chat_kind": "root"}
}

// turnMetrics runs one chat's turn on a fake provider scripted with
// replies until the chat reaches status and its turn's outcome is
// counted, and returns the app's registry.
func turnMetrics(t *testing.T, newStore func(t testing.TB) store.Store, replies []llmtest.Reply, status sdk.ChatStatus, outcome string, configure ...func(*config.Config)) prometheus.Gatherer {
	t.Helper()
	prov := providers[0] // openai; the transport is the same for every provider
	e := setup(t, newStore(t), prov, replies, configure...)
	c := e.create(sdk.CreateChatRequest{Content: sdk.Text("hi")})
	e.waitStatus(c.ID, status)
	reg := e.app.Internals().Metrics.Registry
	// The outcome is counted once the task that finished the turn returns.
	require.Eventually(t, func() bool {
		n, err := gathered(reg, "chatd_turn_outcomes_total", map[string]string{"outcome": outcome, "chat_kind": "root"})
		return err == nil && n == 1
	}, 15*time.Second, 5*time.Millisecond, "the %s outcome is never counted", outcome)
	// Counted at the release of the last task of the turn, so every stage
	// of the turn has ended by now.
	return reg
}

// TestStageMetricsOneStepTurn: a one-step turn without tools records one
// chat_turn, one time_to_first_token, one provider_attempt and one stream,
// on the stage family and (for the model's work) the model family, and
// counts one completed outcome.
func TestStageMetricsOneStepTurn(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		reg := turnMetrics(t, newStore, []llmtest.Reply{llmtest.DefaultReply()}, sdk.ChatStatusWaiting, "completed")
		for _, s := range []string{"chat_turn", "time_to_first_token", "provider_attempt", "stream", "acquisition"} {
			require.Equal(t, 1.0, count(t, reg, "chatd_stage_duration_seconds", stage(s)), s)
		}
		// The step's commit, which finishes the turn: the acquisition
		// recorded the attempt (reservesAttempt).
		require.Equal(t, 1.0, count(t, reg, "chatd_stage_duration_seconds", stage("commit")), "the step, which finishes the turn")
		for _, s := range []string{"time_to_first_token", "provider_attempt", "stream"} {
			require.Equal(t, 1.0, count(t, reg, "chatd_model_stage_duration_seconds",
				map[string]string{"stage": s, "provider_type": "openai-compat", "model": "test-model", "chat_kind": "root"}), s)
		}
		// Per-model time to first token: the same elapsed time as the
		// time_to_first_token stage.
		ttft := map[string]string{"provider_type": "openai-compat", "model": "test-model", "chat_kind": "root"}
		require.Equal(t, 1.0, count(t, reg, "chatd_ttft_seconds", ttft))
		require.Equal(t, histogramSum(t, reg, "chatd_stage_duration_seconds", stage("time_to_first_token")),
			histogramSum(t, reg, "chatd_ttft_seconds", ttft))
		require.Zero(t, count(t, reg, "chatd_stage_duration_seconds", stage("retry_backoff")))
		require.Zero(t, count(t, reg, "chatd_stage_duration_seconds", stage("tool_call")))
		require.Equal(t, 1.0, count(t, reg, "chatd_turn_outcomes_total", nil), "one turn, counted once")
	})
}

// TestStageMetricsRetryingTurn: a retried model call records one
// provider_attempt per attempt and one retry_backoff, counts the retry by
// its error kind, and the turn still completes once.
func TestStageMetricsRetryingTurn(t *testing.T) {
	replies := []llmtest.Reply{llmtest.HTTPError(503, "busy"), llmtest.HTTPError(503, "busy"), llmtest.DefaultReply()}
	reg := turnMetrics(t, sqliteStore, replies, sdk.ChatStatusWaiting, "completed")
	require.Equal(t, 3.0, count(t, reg, "chatd_stage_duration_seconds", stage("provider_attempt")))
	require.Equal(t, 3.0, count(t, reg, "chatd_model_stage_duration_seconds", map[string]string{"stage": "provider_attempt"}))
	require.Equal(t, 2.0, count(t, reg, "chatd_stage_duration_seconds", stage("retry_backoff")))
	require.Equal(t, 2.0, count(t, reg, "chatd_generation_retries_total", nil))
	require.Equal(t, 1.0, count(t, reg, "chatd_stage_duration_seconds", stage("time_to_first_token")), "failed attempts stream no token")
	require.Equal(t, 1.0, count(t, reg, "chatd_ttft_seconds", nil), "failed attempts stream no token")
	require.Equal(t, 1.0, count(t, reg, "chatd_stage_duration_seconds", stage("chat_turn")))
	require.Equal(t, 1.0, count(t, reg, "chatd_turn_outcomes_total", nil))
}

// TestStageMetricsErrorTurn: a turn that ends in error counts the error
// outcome and its kind, records its provider_attempt, and observes no
// chat_turn (that histogram is how long a reply takes).
func TestStageMetricsErrorTurn(t *testing.T) {
	reg := turnMetrics(t, sqliteStore, []llmtest.Reply{llmtest.HTTPError(400, "bad request")}, sdk.ChatStatusError, "error")
	require.Equal(t, 1.0, count(t, reg, "chatd_stage_duration_seconds", stage("provider_attempt")))
	require.Equal(t, 1.0, count(t, reg, "chatd_generation_errors_total", nil))
	require.Zero(t, count(t, reg, "chatd_stage_duration_seconds", stage("chat_turn")))
	require.Zero(t, count(t, reg, "chatd_stage_duration_seconds", stage("time_to_first_token")))
	require.Zero(t, count(t, reg, "chatd_ttft_seconds", nil))
	require.Equal(t, 1.0, count(t, reg, "chatd_turn_outcomes_total", nil))
}

// TestStageMetricsToolTurn: a turn with a server-side tool call is one
// turn of two model calls: one tool_call stage, the call counted by tool,
// effect class and outcome, one provider_attempt per call.
func TestStageMetricsToolTurn(t *testing.T) {
	replies := []llmtest.Reply{llmtest.ToolCall("call-1", "current_time", `{}`), llmtest.DefaultReply()}
	reg := turnMetrics(t, sqliteStore, replies, sdk.ChatStatusWaiting, "completed",
		func(c *config.Config) { c.BuiltinTools = true })
	require.Equal(t, 1.0, count(t, reg, "chatd_stage_duration_seconds", stage("tool_call")))
	require.Equal(t, 1.0, count(t, reg, "chatd_tool_calls_total",
		map[string]string{"tool": "current_time", "effect": "pure", "outcome": "ok"}))
	require.Equal(t, 2.0, count(t, reg, "chatd_stage_duration_seconds", stage("provider_attempt")))
	require.Equal(t, 2.0, count(t, reg, "chatd_stage_duration_seconds", stage("time_to_first_token")))
	require.Equal(t, 1.0, count(t, reg, "chatd_stage_duration_seconds", stage("chat_turn")), "one turn across both steps")
	require.Equal(t, 1.0, count(t, reg, "chatd_stage_duration_seconds", stage("acquisition")))
	require.Equal(t, 1.0, count(t, reg, "chatd_turn_outcomes_total", nil))
}

func sqliteStore(t testing.TB) store.Store { return dbtest.NewSQLite(t) }

// TestStageMetricsInterruptedTurn: a turn stopped while its model call is
// in flight counts as interrupted, once, with no chat_turn observation.
func TestStageMetricsInterruptedTurn(t *testing.T) {
	e := setup(t, sqliteStore(t), providers[0], []llmtest.Reply{llmtest.DefaultReply()})
	held := e.router.Hold()
	c := e.create(sdk.CreateChatRequest{Content: sdk.Text("hi")})
	waitClosed(t, held.Arrived(), "the model call")
	_, err := e.c.Interrupt(e.ctx, c.ID)
	require.NoError(t, err)
	waitClosed(t, held.Cancelled(), "the cancelled model call")
	e.waitStatus(c.ID, sdk.ChatStatusWaiting)
	reg := e.app.Internals().Metrics.Registry
	require.Eventually(t, func() bool {
		n, err := gathered(reg, "chatd_turn_outcomes_total", map[string]string{"outcome": "interrupted", "chat_kind": "root"})
		return err == nil && n == 1
	}, 15*time.Second, 5*time.Millisecond, "the interrupted outcome is never counted")
	require.Equal(t, 1.0, count(t, reg, "chatd_turn_outcomes_total", nil))
	require.Zero(t, count(t, reg, "chatd_stage_duration_seconds", stage("chat_turn")))
	require.Zero(t, count(t, reg, "chatd_stage_duration_seconds", stage("time_to_first_token")))
}

// TestStageMetricsBackgroundTitle: title generation is background work:
// its stream and provider_attempt are on the stage family under
// scope=background, and not on the model family, which is turn-scoped.
func TestStageMetricsBackgroundTitle(t *testing.T) {
	e := setup(t, sqliteStore(t), providers[0], []llmtest.Reply{llmtest.DefaultReply()})
	e.titles.Enqueue(llmtest.TextChunks("A title"))
	chat, err := e.c.CreateChat(e.ctx, sdk.CreateChatRequest{Content: sdk.Text("hi")})
	require.NoError(t, err)
	reg := e.app.Internals().Metrics.Registry
	require.Eventually(t, func() bool {
		n, err := gathered(reg, "chatd_turn_outcomes_total", nil)
		return err == nil && n == 1 && e.peek(chat.ID).TitleSource == string(store.TitleSourceGenerated)
	}, 15*time.Second, 5*time.Millisecond, "the title and the turn")
	bg := map[string]string{"stage": "provider_attempt", "scope": "background", "chat_kind": "root"}
	require.Equal(t, 1.0, count(t, reg, "chatd_stage_duration_seconds", bg))
	bg["stage"] = "stream"
	require.Equal(t, 1.0, count(t, reg, "chatd_stage_duration_seconds", bg))
	require.Equal(t, 1.0, count(t, reg, "chatd_stage_duration_seconds", stage("provider_attempt")), "the turn's own call")
	require.Equal(t, 1.0, count(t, reg, "chatd_model_stage_duration_seconds", map[string]string{"stage": "provider_attempt"}))
}

// TestRunnerLogsNameTheChat: the worker's lines about a chat carry its
// chat_id, runner_id and the step's history_version.
func TestRunnerLogsNameTheChat(t *testing.T) {
	var logs lockedLog
	e := &fixture{t: t, ctx: context.Background(), prov: providers[0]}
	e.llm = providers[0].newServer(t, llmtest.HTTPError(503, "busy"), llmtest.DefaultReply())
	e.titles = providers[0].newServer(t)
	e.router = newRouter(t, e.llm, e.titles)
	token := auth.NewToken()
	cfg := config.Config{BootstrapToken: token, Worker: fastWorker(), LogFormat: config.LogFormatJSON}
	providers[0].configure(&cfg, e.router.URL)
	a, err := app.NewWithStore(e.ctx, cfg, sqliteStore(t), &logs)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, a.Close()) })
	require.NoError(t, a.Start(e.ctx))
	t.Cleanup(a.Stop)
	e.app = a
	e.srv = httptest.NewServer(a.Handler())
	t.Cleanup(e.srv.Close)
	e.c = &sdk.Client{BaseURL: e.srv.URL, Token: token, HTTP: e.srv.Client()}

	c := e.create(sdk.CreateChatRequest{Content: sdk.Text("hi")})
	e.waitStatus(c.ID, sdk.ChatStatusWaiting)
	var retry map[string]any
	for _, line := range strings.Split(logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "generation failed; retrying" {
			retry = m
		}
	}
	require.NotNil(t, retry, "the retry is logged as JSON: %s", logs.String())
	require.Equal(t, c.ID.String(), retry["chat_id"])
	require.NotEmpty(t, retry["runner_id"])
	require.NotEmpty(t, retry["worker_id"])
	require.Contains(t, retry, "history_version")
}

// lockedLog is a log destination safe to read while the app writes.
type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
