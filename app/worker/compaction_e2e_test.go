package worker_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// compactionWindow and compactionPercent are the chat model's window and
// compression threshold in these tests: automatic compaction at 500
// tokens, a summary capped at 20% of the window.
const (
	compactionWindow  = 1000
	compactionPercent = 50
)

// compactionSetup starts chatd with the lookup server tool and the default
// model's window and threshold set through the admin API.
func compactionSetup(t *testing.T, s store.Store, prov provider, replies ...llmtest.Reply) *fixture {
	lookup := &tools.Func{ToolName: "lookup", Desc: "looks something up", EffectClass: store.EffectPure,
		Fn: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"found":"` + strings.Repeat("data ", 50) + `"}`), nil
		}}
	e := setup(t, s, prov, replies, func(cfg *config.Config) { cfg.Tools = []tools.Tool{lookup} })
	var configs []sdk.ChatModelConfig
	require.NoError(t, e.c.Do(e.ctx, http.MethodGet, "/chats/model-configs", nil, &configs))
	window, percent := int64(compactionWindow), int32(compactionPercent)
	for _, mc := range configs {
		if mc.Model == "test-model" {
			require.NoError(t, e.c.Do(e.ctx, http.MethodPatch, "/chats/model-configs/"+mc.ID.String(),
				sdk.UpdateChatModelConfigRequest{ContextLimit: &window, CompressionThreshold: &percent}, nil))
			return e
		}
	}
	t.Fatalf("no model config for test-model in %v", configs)
	return nil
}

// usage is a reply's token accounting: in input tokens and 10 output.
func usage(in int64) llmtest.Usage { return llmtest.Usage{InputTokens: in, OutputTokens: 10} }

// summaryResult is the chat_summarized tool result in a chat's messages.
func summaryResult(t *testing.T, ms []sdk.ChatMessage) map[string]any {
	t.Helper()
	for _, m := range ms {
		for _, p := range m.Content {
			if p.Type == sdk.PartToolResult && p.ToolName == chatstate.ToolChatSummarized {
				var out map[string]any
				require.NoError(t, json.Unmarshal(p.Result, &out))
				return out
			}
		}
	}
	t.Fatal("no chat_summarized result")
	return nil
}

// maxOutput is the output cap a provider request asked for.
func maxOutput(t *testing.T, r llmtest.Request) any {
	body := r.JSON(t)
	if v, ok := body["max_completion_tokens"]; ok {
		return v
	}
	return body["max_tokens"]
}

// TestCompactionInsideToolLoop: the automatic compaction trigger is
// checked before every generation, not only at the start of a turn. A
// tool loop whose usage crosses it mid-turn is summarized before the next
// model call, the turn's prompt follows the summary again, and the turn
// finishes; the durable request that started it completes. The summary's
// output is capped by the window, and its result records the trigger.
func TestCompactionInsideToolLoop(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		for _, prov := range providers {
			t.Run(prov.name, func(t *testing.T) {
				t.Parallel()
				e := compactionSetup(t, newStore(t), prov,
					llmtest.ToolCall("call_1", "lookup", `{}`).WithUsage(usage(300)), // under 50%
					llmtest.ToolCall("call_2", "lookup", `{}`).WithUsage(usage(600)), // past it, mid-turn
					llmtest.TextChunks("Looked up twice."),                           // the summary
					llmtest.TextChunks("Found it.").WithUsage(usage(200)),
				)
				requestID := uuid.New()
				created, err := e.c.CreateChatWithID(e.ctx, requestID, sdk.CreateChatRequest{Title: "t", Content: sdk.Text("find it")}, sdk.RetryPolicy{})
				require.NoError(t, err)
				done := e.waitStatus(created.ID, sdk.ChatStatusWaiting)
				require.Nil(t, done.LastError)

				reqs := e.llm.Requests()
				require.Equal(t, 4, len(reqs), "requests")
				summary := decodeRequest(t, reqs[2])
				require.Equal(t, llm.SummaryInstruction, summary.Messages[len(summary.Messages)-1].Text,
					"the step after the tool results past the trigger summarizes first")
				require.EqualValues(t, compactionWindow*20/100, maxOutput(t, reqs[2]), "the summary's output is bounded by the window")
				next := decodeRequest(t, reqs[3])
				// The summary, then the turn's prompt (Anthropic joins the two
				// user messages into one).
				texts := strings.Join(next.userTexts(), "")
				require.True(t, strings.HasPrefix(texts, "Summary of the conversation so far:\n\nLooked up twice."), texts)
				require.Contains(t, texts, "Continue the work from there")
				require.True(t, strings.HasSuffix(texts, "find it"), texts)
				require.Equal(t, 1, strings.Count(texts, "find it"))
				_, ok := next.toolResult("call_1")
				require.False(t, ok, "the tool results before the summary are not sent again")

				res := summaryResult(t, e.messages(created.ID))
				require.Equal(t, "automatic", res["source"])
				require.EqualValues(t, compactionPercent, res["threshold_percent"])
				require.EqualValues(t, compactionWindow, res["trigger_context_limit_tokens"])
				require.EqualValues(t, compactionWindow, res["context_limit_tokens"])

				got, err := e.c.LookupRequest(e.ctx, requestID, sdk.LookupOptions{})
				require.NoError(t, err)
				require.NotNil(t, got.Outcome, "the turn's request is finished")
				require.Equal(t, "completed", got.Outcome.Status)
			})
		}
	})
}

// TestCompactionStillOverLimit: when the first reply after a summary is
// still past the trigger the summary ran under, the chat stops with a
// clear "still over the context limit" error instead of summarizing again
// at every step.
func TestCompactionStillOverLimit(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		e := compactionSetup(t, newStore(t), providers[0],
			llmtest.ToolCall("call_1", "lookup", `{}`).WithUsage(usage(600)), // past the trigger
			llmtest.TextChunks("Looked it up."),                              // the summary
			llmtest.ToolCall("call_2", "lookup", `{}`).WithUsage(usage(700)), // still past it
			llmtest.TextChunks("a second summary"),                           // must never be asked for
		)
		chat := e.create(sdk.CreateChatRequest{Content: sdk.Text("find it")})
		failed := e.waitStatus(chat.ID, sdk.ChatStatusError)
		require.NotNil(t, failed.LastError)
		require.Contains(t, failed.LastError.Message, "still over the context limit")
		require.Contains(t, failed.LastError.Detail, "50% of the model's 1000-token window")
		require.Equal(t, sdk.ChatErrorConfig, failed.LastError.Kind)

		reqs := e.llm.Requests()
		require.Equal(t, 3, len(reqs), "one summary, no second one")
		n := 0
		for _, m := range e.messages(chat.ID) {
			for _, p := range m.Content {
				if p.Type == sdk.PartToolCall && p.ToolName == chatstate.ToolChatSummarized {
					n++
				}
			}
		}
		require.Equal(t, 1, n)
	})
}
