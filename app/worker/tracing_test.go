package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// spans is what an in-memory exporter got, with lookups by name.
type spans []tracetest.SpanStub

func (ss spans) named(name string) spans {
	var out spans
	for _, s := range ss {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// one is the only span called name.
func (ss spans) one(t testing.TB, name string) tracetest.SpanStub {
	t.Helper()
	got := ss.named(name)
	require.Len(t, got, 1, "spans named %s", name)
	return got[0]
}

func (ss spans) byID(id trace.SpanID) (tracetest.SpanStub, bool) {
	for _, s := range ss {
		if s.SpanContext.SpanID() == id {
			return s, true
		}
	}
	return tracetest.SpanStub{}, false
}

// parent is the name of s's parent span ("" for a root).
func (ss spans) parent(s tracetest.SpanStub) string {
	if !s.Parent.IsValid() {
		return ""
	}
	p, ok := ss.byID(s.Parent.SpanID())
	if !ok {
		return "?"
	}
	return p.Name
}

func attr(s tracetest.SpanStub, key string) (string, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.String(), true
		}
	}
	return "", false
}

// tracedTurn is turnMetrics with an in-memory span exporter: it returns
// the spans and the registry once the turn's outcome is counted (the
// chat_turn span has ended by then).
func tracedTurn(t *testing.T, newStore func(t testing.TB) store.Store, replies []llmtest.Reply, status sdk.ChatStatus, outcome string, configure ...func(*config.Config)) (*fixture, spans, prometheus.Gatherer) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })
	configure = append(configure, func(c *config.Config) { c.TracerProvider = tp })
	prov := providers[0]
	e := setup(t, newStore(t), prov, replies, configure...)
	c := e.create(sdk.CreateChatRequest{Content: sdk.Text("a secret prompt")})
	e.waitStatus(c.ID, status)
	reg := e.app.Internals().Metrics.Registry
	require.Eventually(t, func() bool {
		n, err := gathered(reg, "chatd_turn_outcomes_total", map[string]string{"outcome": outcome, "chat_kind": "root"})
		return err == nil && n == 1
	}, 15*time.Second, 5*time.Millisecond, "the %s outcome is never counted", outcome)
	got := spans(exp.GetSpans())
	turn := got.one(t, "chat_turn")
	id, _ := attr(turn, "chat_id")
	require.Equal(t, c.ID.String(), id)
	return e, got, reg
}

// sum is the sum of a histogram's observations over the series with want.
func sum(t testing.TB, reg prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	require.NoError(t, err)
	var s float64
	for _, f := range fams {
		if f.GetName() != name || f.GetType() != dto.MetricType_HISTOGRAM {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, want) {
				s += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return s
}

// TestTracingOneStepTurn: a one-step turn without tools gives one
// chat_turn root with the stages it passed through as its descendants, in
// a plausible order, with the spec's attributes and no message content;
// each stage's span and observation come from one end (equal durations);
// the provider request carries the trace context.
func TestTracingOneStepTurn(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		e, got, reg := tracedTurn(t, newStore, []llmtest.Reply{llmtest.DefaultReply()}, sdk.ChatStatusWaiting, "completed")
		turn := got.one(t, "chat_turn")
		require.Equal(t, "", got.parent(turn), "chat_turn is a trace root")
		outcome, _ := attr(turn, "turn_outcome")
		require.Equal(t, "completed", outcome)
		require.Equal(t, codes.Unset, turn.Status.Code)

		ttft, attempt, stream := got.one(t, "time_to_first_token"), got.one(t, "provider_attempt"), got.one(t, "stream")
		acq, prep := got.one(t, "acquisition"), got.one(t, "prepare")
		// One step: the model call's, whose commit also finishes the turn.
		step := got.one(t, "generation_step")
		action, _ := attr(step, "generation_action")
		require.Equal(t, "generate", action)
		require.Equal(t, "chat_turn", got.parent(acq))
		require.Equal(t, "chat_turn", got.parent(step))
		require.Equal(t, "generation_step", got.parent(prep))
		require.Equal(t, "generation_step", got.parent(stream))
		require.Equal(t, "stream", got.parent(ttft))
		require.Equal(t, "stream", got.parent(attempt))
		var commits spans
		for _, s := range got {
			if s.Name == "commit" && s.SpanContext.TraceID() != turn.SpanContext.TraceID() {
				// The runner giving the waiting chat up: no turn's work.
				require.Equal(t, "", got.parent(s))
				continue
			}
			require.Equal(t, turn.SpanContext.TraceID(), s.SpanContext.TraceID(), "%s is in the turn's trace", s.Name)
			if s.Name == "commit" {
				require.Equal(t, "generation_step", got.parent(s))
				commits = append(commits, s)
			}
		}
		require.Len(t, commits, 1, "the step with the finish (the acquisition recorded the attempt)")

		// A plausible order, not timing: each stage inside its parent,
		// the pickup before the step, the first token within the stream.
		inside := func(child, parent tracetest.SpanStub) {
			t.Helper()
			require.False(t, child.StartTime.Before(parent.StartTime), "%s starts inside %s", child.Name, parent.Name)
			require.False(t, child.EndTime.After(parent.EndTime), "%s ends inside %s", child.Name, parent.Name)
		}
		inside(acq, turn)
		inside(step, turn)
		inside(prep, step)
		inside(stream, step)
		inside(ttft, stream)
		inside(attempt, stream)
		require.False(t, acq.StartTime.After(step.StartTime), "asked for, then the step")
		require.False(t, prep.EndTime.After(stream.StartTime), "prepared, then the model call")
		require.True(t, turn.StartTime.Equal(acq.StartTime), "the turn is backdated to its trigger")

		// The model attributes, on the model's stages only.
		for _, s := range []tracetest.SpanStub{stream, ttft, attempt, step, prep} {
			pt, _ := attr(s, "provider_type")
			model, _ := attr(s, "model")
			require.Equal(t, "openai-compat", pt, s.Name) // OPENAI_BASE_URL: an OpenAI-compatible provider
			require.Equal(t, "test-model", model, s.Name)
			_, ok := attr(s, "reasoning_effort")
			require.True(t, ok, s.Name)
		}
		for _, s := range []tracetest.SpanStub{turn, acq, commits[0]} {
			_, ok := attr(s, "model")
			require.False(t, ok, "%s carries no model", s.Name)
		}
		for _, s := range got {
			scope, _ := attr(s, "scope")
			kind, _ := attr(s, "chat_kind")
			require.Equal(t, "turn", scope, s.Name)
			require.Equal(t, "root", kind, s.Name)
			for _, kv := range s.Attributes {
				if kv.Key == "gen_ai.response.id" {
					continue // the fake server's id, chatcmpl-llmtest, is no content
				}
				v := kv.Value.String()
				require.NotContains(t, v, "secret prompt", "no message content on %s", s.Name)
				require.NotContains(t, v, "llmtest", "no reply content on %s", s.Name)
			}
		}

		// One end: the span's duration is the observation.
		for _, s := range []tracetest.SpanStub{stream, ttft, attempt, acq, turn} {
			d := s.EndTime.Sub(s.StartTime).Seconds()
			require.InDelta(t, d, sum(t, reg, "chatd_stage_duration_seconds", stage(s.Name)), 1e-9, s.Name)
		}

		// The provider saw the attempt's trace context.
		reqs := e.llm.Requests()
		require.Len(t, reqs, 1)
		tp := reqs[0].Header.Get("traceparent")
		require.True(t, strings.HasPrefix(tp, "00-"+attempt.SpanContext.TraceID().String()+"-"+attempt.SpanContext.SpanID().String()), tp)
	})
}

// TestTracingRetriesAndTools: a turn with a retried model call and a
// server-side tool call is one chat_turn with one provider_attempt per
// attempt, one retry_backoff, and one tool_call (carrying its tool name)
// per call; the failed attempt's spans end in error.
func TestTracingRetriesAndTools(t *testing.T) {
	replies := []llmtest.Reply{llmtest.HTTPError(503, "busy"), llmtest.ToolCall("call-1", "current_time", `{}`), llmtest.DefaultReply()}
	_, got, _ := tracedTurn(t, sqliteStore, replies, sdk.ChatStatusWaiting, "completed",
		func(c *config.Config) { c.BuiltinTools = true })
	attempts := got.named("provider_attempt")
	require.Len(t, attempts, 3)
	require.Equal(t, codes.Error, attempts[0].Status.Code, "HTTP 503")
	require.Equal(t, codes.Unset, attempts[1].Status.Code)
	require.Len(t, got.named("stream"), 3)
	ttfts := got.named("time_to_first_token")
	require.Len(t, ttfts, 3, "one window per attempt")
	require.Equal(t, codes.Error, ttfts[0].Status.Code, "the failed attempt's window ends in its error")
	require.Len(t, got.named("retry_backoff"), 1)
	call := got.one(t, "tool_call")
	name, _ := attr(call, "tool_name")
	require.Equal(t, "current_time", name)
	require.Equal(t, "generation_step", got.parent(call))
	require.Equal(t, codes.Unset, call.Status.Code)
	require.Len(t, got.named("chat_turn"), 1, "one turn across the steps")
}

// TestTracingErrorTurn: an error turn's chat_turn ends in error with the
// failure and turn_outcome=error; its window to the first token is a span
// with the error and no observation.
func TestTracingErrorTurn(t *testing.T) {
	_, got, reg := tracedTurn(t, sqliteStore, []llmtest.Reply{llmtest.HTTPError(400, "bad request")}, sdk.ChatStatusError, "error")
	turn := got.one(t, "chat_turn")
	outcome, _ := attr(turn, "turn_outcome")
	require.Equal(t, "error", outcome)
	require.Equal(t, codes.Error, turn.Status.Code)
	require.NotEmpty(t, turn.Status.Description)
	require.Equal(t, codes.Error, got.one(t, "time_to_first_token").Status.Code)
	require.Zero(t, count(t, reg, "chatd_stage_duration_seconds", stage("time_to_first_token")))
	require.Zero(t, count(t, reg, "chatd_stage_duration_seconds", stage("chat_turn")), "span only")
}

// TestTracingQueueWait: a message queued behind a running turn is
// promoted when the turn finishes; its queue_wait is a standalone
// turn-scoped stage (its own trace), on the histogram too, and the
// promoted prompt runs as a second chat_turn.
func TestTracingQueueWait(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })
	e := setup(t, sqliteStore(t), providers[0], []llmtest.Reply{llmtest.DefaultReply(), llmtest.DefaultReply()},
		func(c *config.Config) { c.TracerProvider = tp })
	held := e.router.Hold()
	c := e.create(sdk.CreateChatRequest{Content: sdk.Text("first")})
	waitClosed(t, held.Arrived(), "the first model call")
	res, err := e.c.SendMessage(e.ctx, c.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("second")})
	require.NoError(t, err)
	require.True(t, res.Queued, "queued behind the running turn")
	held.Release()
	reg := e.app.Internals().Metrics.Registry
	require.Eventually(t, func() bool {
		n, err := gathered(reg, "chatd_turn_outcomes_total", map[string]string{"outcome": "completed"})
		return err == nil && n == 2
	}, 15*time.Second, 5*time.Millisecond, "both turns complete")
	got := spans(exp.GetSpans())
	qw := got.one(t, "queue_wait")
	require.Equal(t, "", got.parent(qw), "standalone")
	for _, turn := range got.named("chat_turn") {
		require.NotEqual(t, turn.SpanContext.TraceID(), qw.SpanContext.TraceID())
	}
	scope, _ := attr(qw, "scope")
	require.Equal(t, "turn", scope)
	require.Equal(t, 1.0, count(t, reg, "chatd_stage_duration_seconds", stage("queue_wait")))
	require.InDelta(t, qw.EndTime.Sub(qw.StartTime).Seconds(), sum(t, reg, "chatd_stage_duration_seconds", stage("queue_wait")), 1e-9)
	require.Len(t, got.named("chat_turn"), 2)
}

// TestTracingBackgroundTitle: title generation's spans are their own
// trace roots under scope=background, outside every chat_turn.
func TestTracingBackgroundTitle(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })
	e := setup(t, sqliteStore(t), providers[0], []llmtest.Reply{llmtest.DefaultReply()},
		func(c *config.Config) { c.TracerProvider = tp })
	e.titles.Enqueue(llmtest.TextChunks("A title"))
	chat, err := e.c.CreateChat(e.ctx, sdk.CreateChatRequest{Content: sdk.Text("hi")})
	require.NoError(t, err)
	reg := e.app.Internals().Metrics.Registry
	require.Eventually(t, func() bool {
		n, err := gathered(reg, "chatd_turn_outcomes_total", nil)
		return err == nil && n == 1 && e.peek(chat.ID).TitleSource == string(store.TitleSourceGenerated)
	}, 15*time.Second, 5*time.Millisecond, "the title and the turn")
	got := spans(exp.GetSpans())
	var bg spans
	for _, s := range got {
		if scope, _ := attr(s, "scope"); scope == "background" {
			bg = append(bg, s)
		}
	}
	turn := got.one(t, "chat_turn")
	stream := bg.one(t, "stream")
	require.Equal(t, "", got.parent(stream), "a trace root")
	require.NotEqual(t, turn.SpanContext.TraceID(), stream.SpanContext.TraceID())
	require.Equal(t, "stream", got.parent(bg.one(t, "provider_attempt")))
}

// TestTracingThinking: a reply that reasons before it answers gives one
// thinking span for the reasoning block, inside its stream, carrying the
// model, before the text; thinking is span-only.
func TestTracingThinking(t *testing.T) {
	reply := llmtest.Join(llmtest.Reasoning("let me", " think"), llmtest.TextChunks("the answer"))
	_, got, reg := tracedTurn(t, sqliteStore, []llmtest.Reply{reply}, sdk.ChatStatusWaiting, "completed")
	think, stream := got.one(t, "thinking"), got.one(t, "stream")
	require.Equal(t, "stream", got.parent(think))
	require.False(t, think.StartTime.Before(stream.StartTime))
	require.False(t, think.EndTime.After(stream.EndTime))
	model, _ := attr(think, "model")
	require.Equal(t, "test-model", model)
	require.Zero(t, count(t, reg, "chatd_stage_duration_seconds", stage("thinking")), "span only")
}
