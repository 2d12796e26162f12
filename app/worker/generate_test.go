package worker

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// toolCallReply is a model answer that calls name.
func toolCallReply(id, name string) providerResult {
	return providerResult{resp: llm.Response{Parts: []sdk.ChatMessagePart{{
		Type: sdk.PartToolCall, ToolCallID: id, ToolName: name, Args: json.RawMessage(`{}`),
	}}, FinishReason: "tool_calls"}}
}

func TestGenerationToolCalls(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		t.Run("an unknown tool gets an error result and the model goes on", func(t *testing.T) {
			t.Parallel()
			g := setupOn(t, newStore(t), Config{})
			id := g.create("use a tool")
			require.Equal(t, 1, g.w.AcquirePass(g.ctx))
			g.provider.next(t)
			g.provider.answers <- toolCallReply("call_x", "no_such_tool")

			second := g.provider.next(t)
			last := second.req.Messages[len(second.req.Messages)-1]
			require.Equal(t, llm.RoleTool, last.Role, "the next request carries the tool's result")
			require.Len(t, last.Parts, 1)
			require.Equal(t, "call_x", last.Parts[0].ToolCallID)
			require.True(t, last.Parts[0].IsError)
			require.Contains(t, string(last.Parts[0].Result), "no_such_tool")
			g.provider.answer("Sorry, I cannot.")
			eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting }, "the turn finishes")
			require.Len(t, g.messages(id), 4)
		})

		t.Run("the step limit finishes the turn after the tool results", func(t *testing.T) {
			t.Parallel()
			g := setupOn(t, newStore(t), Config{MaxSteps: 1})
			id := g.create("use a tool")
			require.Equal(t, 1, g.w.AcquirePass(g.ctx))
			g.provider.next(t)
			g.provider.answers <- toolCallReply("call_x", "no_such_tool")
			eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting }, "the turn finishes")
			ms := g.messages(id)
			require.Equal(t, []string{store.RoleUser, store.RoleAssistant, store.RoleTool}, roleList(ms),
				"no final assistant reply and no error")
			require.Nil(t, g.chat(id).LastError)
			require.Empty(t, g.provider.calls, "the model is not called again")
		})

		t.Run("dynamic tool calls wait for the client", func(t *testing.T) {
			t.Parallel()
			g := setupOn(t, newStore(t), Config{})
			id := g.create("use a tool", sdk.DynamicTool{Name: "lookup"})
			require.Equal(t, 1, g.w.AcquirePass(g.ctx))
			call := g.provider.next(t)
			require.Len(t, call.req.Tools, 1)
			require.Equal(t, "lookup", call.req.Tools[0].Name)
			require.JSONEq(t, `{"type":"object","properties":{}}`, string(call.req.Tools[0].InputSchema),
				"a tool without a schema gets an empty object schema")
			g.provider.answers <- toolCallReply("call_1", "lookup")
			eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusRequiresAction }, "the chat waits for results")
			c := g.chat(id)
			require.NotNil(t, c.RequiresActionDeadlineAt)
			require.WithinDuration(t, g.clock.Now().Add(rigActionTimeout), *c.RequiresActionDeadlineAt, 0)
			require.Equal(t, g.w.id, c.WorkerID.UUID, "the runner keeps the chat to time the action out")
		})
	})
}

func roleList(ms []store.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Role
	}
	return out
}

// TestAutomaticCompaction: once the last usage crosses the threshold of
// the model's window, the next turn first summarizes the history without
// the pending user message, commits the boundary triplet with the message
// re-committed after it as model-only, and then answers on the pruned
// prompt (spec: "Manual compaction", automatic triggers).
func TestAutomaticCompaction(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		g := setupOn(t, newStore(t), Config{CompactThresholdPercent: 50})
		g.w.deps.Models = oneModel{Model{ID: uuid.New(), Provider: g.provider, Name: "fake-model", ContextLimit: 100}}
		id := g.create("first")
		require.Equal(t, 1, g.w.AcquirePass(g.ctx))
		g.provider.next(t)
		g.provider.answers <- providerResult{resp: llm.Response{
			Parts: []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "one"}}, FinishReason: "stop",
			Usage: llm.Usage{InputTokens: 40, OutputTokens: 10}, // 50% of the window
		}}
		eventually(t, func() bool {
			c := g.peek(id)
			return c.Status == store.ChatStatusWaiting && !c.WorkerID.Valid
		}, "the first turn finishes")

		g.do(func(t *chatstate.Tx) error {
			_, err := t.SendMessage(id, chatstate.UserInput{Content: sdk.Text("second")}, chatstate.BusyQueue)
			return err
		})
		require.Equal(t, 1, g.w.AcquirePass(g.ctx))
		summary := g.provider.next(t)
		require.Equal(t, llm.SummaryInstruction, lastUserText(summary.req))
		var texts []string
		for _, m := range summary.req.Messages {
			for _, p := range m.Parts {
				texts = append(texts, m.Role+": "+p.Text)
			}
		}
		require.Equal(t, []string{"user: first", "assistant: one", "user: " + llm.SummaryInstruction}, texts,
			"the pending message is not summarized")
		g.provider.answer("The user said first.")

		next := g.provider.next(t)
		require.Len(t, next.req.Messages, 2)
		require.Equal(t, "Summary of the conversation so far:\n\nThe user said first.", lastUserText(llm.Request{Messages: next.req.Messages[:1]}))
		require.Equal(t, "second", lastUserText(next.req), "the pending message follows the summary verbatim")
		g.provider.answer("two")
		eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting }, "the turn finishes")

		var call sdk.ChatMessagePart
		for _, m := range g.messages(id) {
			for _, p := range partsOf(t, m) {
				if p.Type == sdk.PartToolCall && p.ToolName == chatstate.ToolChatSummarized {
					call = p
				}
			}
		}
		var args map[string]any
		require.NoError(t, json.Unmarshal(call.Args, &args))
		require.Equal(t, "automatic", args["source"])

		// A manual compaction records the binding trigger as well.
		g.do(func(t *chatstate.Tx) error {
			_, err := t.RequestCompaction(id)
			return err
		})
		require.Equal(t, 1, g.w.AcquirePass(g.ctx))
		require.Equal(t, llm.SummaryInstruction, lastUserText(g.provider.next(t).req))
		g.provider.answer("Two turns.")
		eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting }, "the compaction finishes")
		var results []map[string]any
		for _, m := range g.messages(id) {
			for _, p := range partsOf(t, m) {
				if p.Type == sdk.PartToolResult && p.ToolName == chatstate.ToolChatSummarized {
					var res map[string]any
					require.NoError(t, json.Unmarshal(p.Result, &res))
					results = append(results, res)
				}
			}
		}
		require.Len(t, results, 2)
		for i, source := range []string{"automatic", "manual"} {
			require.Equal(t, source, results[i]["source"])
			require.EqualValues(t, 50, results[i]["threshold_percent"])
			require.EqualValues(t, 100, results[i]["trigger_context_limit_tokens"])
			require.EqualValues(t, 100, results[i]["context_limit_tokens"])
		}
	})
}

func TestGenerationPassesReasoningEffort(t *testing.T) {
	t.Parallel()
	g := setupOn(t, dbtest.NewSQLite(t), Config{})
	var id uuid.UUID
	g.do(func(t *chatstate.Tx) error {
		res, err := t.Create(chatstate.CreateParams{OwnerID: g.owner, Title: "t", TitleSource: store.TitleSourceUser,
			Input: chatstate.UserInput{Content: sdk.Text("think"), ReasoningEffort: "high"}})
		id = res.Chat.ID
		return err
	})
	require.Equal(t, 1, g.w.AcquirePass(g.ctx))
	require.Equal(t, "high", g.provider.next(t).req.ReasoningEffort)
	g.provider.answer("done")
	eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting }, "the turn finishes")
	ms := g.messages(id)
	require.Equal(t, "high", ms[len(ms)-1].ReasoningEffort, "the reply records the effort it ran with")
}

// A model config's compression_threshold overrides the deployment's
// CHATD_COMPACT_THRESHOLD_PERCENT: at 50% usage a model whose threshold is
// 50 compacts first, one that has none (the deployment's 90) does not.
func TestCompactionThresholdPerModel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		model    int
		compacts bool
	}{{"the model's 50", 50, true}, {"the deployment's 90", 0, false}} {
		t.Run(tc.name, func(t *testing.T) {
			g := setupOn(t, dbtest.NewSQLite(t), Config{CompactThresholdPercent: 90})
			g.w.deps.Models = oneModel{Model{ID: uuid.New(), Provider: g.provider, Name: "fake-model", ContextLimit: 100,
				CompactThresholdPercent: tc.model}}
			id := g.create("first")
			require.Equal(t, 1, g.w.AcquirePass(g.ctx))
			g.provider.next(t)
			g.provider.answers <- providerResult{resp: llm.Response{
				Parts: []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "one"}}, FinishReason: "stop",
				Usage: llm.Usage{InputTokens: 40, OutputTokens: 10},
			}}
			eventually(t, func() bool {
				c := g.peek(id)
				return c.Status == store.ChatStatusWaiting && !c.WorkerID.Valid
			}, "the first turn finishes")
			g.do(func(t *chatstate.Tx) error {
				_, err := t.SendMessage(id, chatstate.UserInput{Content: sdk.Text("second")}, chatstate.BusyQueue)
				return err
			})
			require.Equal(t, 1, g.w.AcquirePass(g.ctx))
			first := g.provider.next(t)
			if tc.compacts {
				require.Equal(t, llm.SummaryInstruction, lastUserText(first.req))
				g.provider.answer("The user said first.")
				g.provider.next(t)
			} else {
				require.Equal(t, "second", lastUserText(first.req), "no compaction below the deployment's threshold")
			}
			g.provider.answer("two")
			eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting }, "the turn finishes")
		})
	}
}
