package e2e_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/telemetry"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// otlpReceiver is an in-process OTLP/HTTP collector: it keeps every
// export request's body by path.
type otlpReceiver struct {
	mu     sync.Mutex
	bodies map[string][][]byte
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	o.mu.Lock()
	o.bodies[r.URL.Path] = append(o.bodies[r.URL.Path], b)
	o.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
}

func attrsOf(kvs []*common.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		v := kv.GetValue()
		switch {
		case v.GetArrayValue() != nil:
			for _, e := range v.GetArrayValue().GetValues() {
				out[kv.GetKey()] += e.GetStringValue()
			}
		case v.GetStringValue() != "":
			out[kv.GetKey()] = v.GetStringValue()
		default:
			out[kv.GetKey()] = strconv.FormatInt(v.GetIntValue(), 10)
		}
	}
	return out
}

// TestGenAIOverOTLP: a turn with a tool call, exported over OTLP/HTTP to
// an in-process receiver, arrives as GenAI client spans "chat {model}"
// with the convention's attributes, an execute_tool span, and the
// gen_ai.client.token.usage and gen_ai.client.operation.duration metrics.
//
// The OTLP exporters read their endpoint from the process environment, so
// the stores run one after the other (t.Setenv forbids parallel tests).
func TestGenAIOverOTLP(t *testing.T) {
	rec := &otlpReceiver{}
	collector := httptest.NewServer(rec)
	t.Cleanup(collector.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_SERVICE_NAME", "")
	stores := map[string]func(t testing.TB) store.Store{
		"sqlite":   func(t testing.TB) store.Store { return dbtest.NewSQLite(t) },
		"postgres": func(t testing.TB) store.Store { dbtest.PostgresDSN(t); return dbtest.NewPostgres(t) },
	}
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) { genAIOverOTLP(t, rec, collector.URL, stores[name]) })
	}
}

func genAIOverOTLP(t *testing.T, rec *otlpReceiver, endpoint string, newStore func(t testing.TB) store.Store) {
	{
		ctx := context.Background()
		rec.mu.Lock()
		rec.bodies = map[string][][]byte{}
		rec.mu.Unlock()
		tel, err := telemetry.FromEnv(ctx, func(k string) string {
			if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
				return endpoint
			}
			return ""
		})
		require.NoError(t, err)
		require.NotNil(t, tel.Meter)

		llm := llmtest.NewOpenAI(t,
			llmtest.ToolCall("call-9", "current_time", `{}`).WithUsage(llmtest.Usage{InputTokens: 40, OutputTokens: 6}),
			llmtest.TextChunks("It is late.").WithUsage(llmtest.Usage{InputTokens: 50, OutputTokens: 4}))
		h := apptest.Start(t, apptest.Options{Store: newStore, Config: config.Config{
			OpenAIBaseURL: llm.URL, DefaultModel: "openai/gpt-test", BuiltinTools: true,
			TracerProvider: tel.Provider, MeterProvider: tel.Meter,
		}})
		c := h.Admin
		chat, err := c.CreateChat(ctx, sdk.CreateChatRequest{Content: sdk.Text("time?"), Title: "otlp"})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			got, err := c.Chat(ctx, chat.ID)
			return err == nil && got.Status == sdk.ChatStatusWaiting
		}, 15*time.Second, 5*time.Millisecond)
		h.App.Stop()
		require.NoError(t, tel.Shutdown(ctx)) // flushes spans and metrics to the receiver

		rec.mu.Lock()
		defer rec.mu.Unlock()
		var chats []*tracepb.Span
		tools := map[string]string{}
		for _, body := range rec.bodies["/v1/traces"] {
			var req coltrace.ExportTraceServiceRequest
			require.NoError(t, proto.Unmarshal(body, &req))
			for _, rs := range req.GetResourceSpans() {
				for _, ss := range rs.GetScopeSpans() {
					for _, s := range ss.GetSpans() {
						switch s.GetName() {
						case "chat gpt-test":
							chats = append(chats, s)
						case "execute_tool current_time":
							tools = attrsOf(s.GetAttributes())
						}
					}
				}
			}
		}
		require.Len(t, chats, 2, "one client span per provider call")
		require.Equal(t, tracepb.Span_SPAN_KIND_CLIENT, chats[0].GetKind())
		first := attrsOf(chats[0].GetAttributes())
		for key, want := range map[string]string{
			"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai-compat", "gen_ai.request.model": "gpt-test",
			"gen_ai.response.model": "gpt-test", "gen_ai.response.id": "chatcmpl-llmtest",
			"gen_ai.response.finish_reasons": "tool_calls",
		} {
			require.Equal(t, want, first[key], key)
		}
		require.Equal(t, "40", first["gen_ai.usage.input_tokens"])
		require.Equal(t, "6", first["gen_ai.usage.output_tokens"])
		require.Equal(t, "current_time", tools["gen_ai.tool.name"])
		require.Equal(t, "call-9", tools["gen_ai.tool.call.id"])
		require.Equal(t, "execute_tool", tools["gen_ai.operation.name"])

		// token usage: input 40+50 and output 6+4 over two calls.
		sums := map[string]float64{}
		durations := uint64(0)
		for _, body := range rec.bodies["/v1/metrics"] {
			var req colmetrics.ExportMetricsServiceRequest
			require.NoError(t, proto.Unmarshal(body, &req))
			for _, rm := range req.GetResourceMetrics() {
				for _, sm := range rm.GetScopeMetrics() {
					for _, m := range sm.GetMetrics() {
						switch m.GetName() {
						case "gen_ai.client.token.usage":
							for _, dp := range m.GetHistogram().GetDataPoints() {
								at := attrsOf(dp.GetAttributes())
								require.Equal(t, "chat", at["gen_ai.operation.name"])
								require.Equal(t, "gpt-test", at["gen_ai.request.model"])
								sums[at["gen_ai.token.type"]] += dp.GetSum()
							}
						case "gen_ai.client.operation.duration":
							for _, dp := range m.GetHistogram().GetDataPoints() {
								durations += dp.GetCount()
							}
						}
					}
				}
			}
		}
		require.Equal(t, map[string]float64{"input": 90, "output": 10}, sums)
		require.Equal(t, uint64(2), durations, "one duration per call")
	}
}
