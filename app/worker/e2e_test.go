package worker_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/llm/demo"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/modelconfig"
	"github.com/chatd/chatd/app/partbuf"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// transcript is the role and text of every prompt message.
func (r wireRequest) transcript() []string {
	out := make([]string, len(r.Messages))
	for i, m := range r.Messages {
		out[i] = m.Role + ": " + m.Text
	}
	return out
}

// TestTurns runs whole turns over HTTP against each provider's fake server.
func TestTurns(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		for _, prov := range providers {
			t.Run(prov.name, func(t *testing.T) {
				t.Parallel()
				testTurns(t, newStore, prov)
			})
		}
		t.Run("demo", func(t *testing.T) {
			t.Parallel()
			noProvider := provider{
				name:      "demo",
				newServer: llmtest.NewOpenAI, // unused: nothing points at it
				configure: func(cfg *config.Config, _ string) { cfg.DemoTokenDelay = demo.NoDelay },
			}
			e := setup(t, newStore(t), noProvider, nil)
			chat := e.create(sdk.CreateChatRequest{Content: sdk.Text("Tell me about chatd.")})
			done := e.waitStatus(chat.ID, sdk.ChatStatusWaiting)
			require.Nil(t, done.LastError)
			ms := e.messages(chat.ID)
			require.Len(t, ms, 2)
			require.Equal(t, "assistant", ms[1].Role)
			require.NotEmpty(t, strings.TrimSpace(text(ms[1])), "the demo model answers with text")
			require.Equal(t, modelconfig.ModelID(modelconfig.DemoModelName, modelconfig.DemoModelName), *ms[1].ModelConfigID)
			require.Empty(t, e.llm.Requests())
		})
	})
}

func testTurns(t *testing.T, newStore func(t testing.TB) store.Store, prov provider) {
	t.Run("plain text", func(t *testing.T) {
		t.Parallel()
		e := setup(t, newStore(t), prov, []llmtest.Reply{llmtest.TextChunks("Hi", " there!")})
		chat := e.create(sdk.CreateChatRequest{Content: sdk.Text("hello"), SystemPrompt: "Be brief."})
		require.Equal(t, sdk.ChatStatusRunning, chat.Status)

		done := e.waitStatus(chat.ID, sdk.ChatStatusWaiting)
		require.Nil(t, done.LastError)
		require.Nil(t, done.Retry)
		ms := e.messages(chat.ID)
		require.Equal(t, []string{"user: hello", "assistant: Hi there!"}, transcript(ms))
		require.NotNil(t, ms[1].Usage)
		require.Equal(t, llmtest.DefaultUsage.InputTokens, ms[1].Usage.InputTokens)
		require.Equal(t, llmtest.DefaultUsage.OutputTokens, ms[1].Usage.OutputTokens)

		reqs := e.llm.Requests()
		require.Len(t, reqs, 1)
		r := decodeRequest(t, reqs[0])
		require.Equal(t, "test-model", r.Model)
		require.Equal(t, []string{"system: Be brief.", "user: hello"}, r.transcript())
		require.Empty(t, r.Tools)
		e.waitUnowned(chat.ID)
	})

	t.Run("dynamic tool call", func(t *testing.T) {
		t.Parallel()
		e := setup(t, newStore(t), prov, []llmtest.Reply{
			llmtest.Join(llmtest.TextChunks("Let me check."), llmtest.ToolCall("call_1", "get_weather", `{"city":"Paris"}`)),
			llmtest.TextChunks("It is sunny in Paris."),
		})
		chat := e.create(sdk.CreateChatRequest{
			Content: sdk.Text("Weather in Paris?"),
			UnsafeDynamicTools: []sdk.DynamicTool{{
				Name: "get_weather", Description: "Current weather of a city",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
			}},
		})
		waiting := e.waitStatus(chat.ID, sdk.ChatStatusRequiresAction)
		require.NotNil(t, waiting.RequiresActionDeadlineAt, "requires_action carries its deadline")
		require.WithinDuration(t, time.Now().Add(5*time.Minute), *waiting.RequiresActionDeadlineAt, time.Minute)
		ms := e.messages(chat.ID)
		require.Len(t, ms, 2)
		var call *sdk.ChatMessagePart
		for i, p := range ms[1].Content {
			if p.Type == sdk.PartToolCall {
				call = &ms[1].Content[i]
			}
		}
		require.NotNil(t, call, "the assistant message holds the tool call")
		require.Equal(t, "call_1", call.ToolCallID)
		require.Equal(t, "get_weather", call.ToolName)
		require.JSONEq(t, `{"city":"Paris"}`, string(call.Args))
		first := decodeRequest(t, e.llm.Requests()[0])
		require.Equal(t, []string{"get_weather"}, first.Tools, "the dynamic tool is offered to the model")

		require.NoError(t, e.c.SubmitToolResults(e.ctx, chat.ID, sdk.SubmitToolResultsRequest{Results: []sdk.ToolResult{{
			ToolCallID: "call_1", Output: json.RawMessage(`{"forecast":"sunny","celsius":21}`),
		}}}))
		done := e.waitStatus(chat.ID, sdk.ChatStatusWaiting)
		require.Nil(t, done.RequiresActionDeadlineAt)
		reqs := e.llm.Requests()
		require.Len(t, reqs, 2)
		second := decodeRequest(t, reqs[1])
		require.Equal(t, []string{"call_1"}, second.Messages[len(second.Messages)-2].ToolCalls,
			"the assistant's tool call is replayed before its result")
		result, ok := second.toolResult("call_1")
		require.True(t, ok, "the next request carries the tool result: %v", second.Messages)
		require.JSONEq(t, `{"forecast":"sunny","celsius":21}`, result)
		ms = e.messages(chat.ID)
		require.Equal(t, []string{"user", "assistant", "tool", "assistant"}, roles(ms))
		require.Equal(t, "It is sunny in Paris.", text(ms[3]))
	})

	t.Run("retries then success", func(t *testing.T) {
		t.Parallel()
		e := setup(t, newStore(t), prov, []llmtest.Reply{
			llmtest.HTTPError(429, "slow down"), llmtest.HTTPError(429, "slow down"), llmtest.TextChunks("Made it."),
		}, func(cfg *config.Config) {
			// Long enough backoffs to watch the retry state between attempts.
			cfg.Worker.BackoffBase, cfg.Worker.BackoffMax = 150*time.Millisecond, 150*time.Millisecond
		})
		chat := e.create(sdk.CreateChatRequest{Content: sdk.Text("hello")})
		var retry *sdk.ChatRetry
		require.Eventually(t, func() bool {
			c, err := e.c.Chat(e.ctx, chat.ID)
			if err == nil && c.Retry != nil {
				retry = c.Retry
			}
			return retry != nil
		}, 15*time.Second, 2*time.Millisecond, "the retry state is visible while backing off")
		require.Equal(t, sdk.ChatErrorRateLimit, retry.Kind)
		require.Contains(t, []int64{1, 2}, retry.Attempt)
		require.Equal(t, int64(150), retry.DelayMS)
		require.Equal(t, sdk.ChatStatusRunning, e.chat(chat.ID).Status, "backing off is still running")

		done := e.waitStatus(chat.ID, sdk.ChatStatusWaiting)
		require.Nil(t, done.Retry, "the retry state is cleared")
		require.Nil(t, done.LastError)
		require.Equal(t, []string{"user: hello", "assistant: Made it."}, transcript(e.messages(chat.ID)))
		require.Len(t, e.llm.Requests(), 3)
	})

	t.Run("retry limit then error", func(t *testing.T) {
		t.Parallel()
		e := setup(t, newStore(t), prov, nil, func(cfg *config.Config) { cfg.Worker.MaxRetries = 2 })
		e.llm.SetDefault(llmtest.HTTPError(503, "overloaded, try later"))
		chat := e.create(sdk.CreateChatRequest{Content: sdk.Text("hello")})
		done := e.waitStatus(chat.ID, sdk.ChatStatusError)
		require.NotNil(t, done.LastError)
		require.Equal(t, sdk.ChatErrorOverloaded, done.LastError.Kind)
		require.Equal(t, 503, done.LastError.StatusCode)
		require.True(t, done.LastError.Retryable)
		e.waitUnowned(chat.ID)
		require.Len(t, e.llm.Requests(), 3, "MaxRetries+1 provider calls")
		require.Equal(t, []string{"user: hello"}, transcript(e.messages(chat.ID)))
	})

	t.Run("non-retryable error", func(t *testing.T) {
		t.Parallel()
		e := setup(t, newStore(t), prov, []llmtest.Reply{llmtest.HTTPError(401, "invalid api key")})
		chat := e.create(sdk.CreateChatRequest{Content: sdk.Text("hello")})
		done := e.waitStatus(chat.ID, sdk.ChatStatusError)
		require.NotNil(t, done.LastError)
		require.Equal(t, sdk.ChatErrorAuth, done.LastError.Kind)
		require.False(t, done.LastError.Retryable)
		e.waitUnowned(chat.ID)
		require.Len(t, e.llm.Requests(), 1, "no retry")
	})

	t.Run("interrupt keeps the partial text", func(t *testing.T) {
		t.Parallel()
		reply := llmtest.Join(llmtest.TextChunks("Partial ", "answer"), llmtest.Hang())
		e := setup(t, newStore(t), prov, []llmtest.Reply{reply})
		chat := e.create(sdk.CreateChatRequest{Content: sdk.Text("hello")})
		waitClosed(t, reply.Started(), "the stream to hang")
		e.waitBuffered(chat.ID, "Partial answer")

		_, err := e.c.Interrupt(e.ctx, chat.ID)
		require.NoError(t, err)
		done := e.waitStatus(chat.ID, sdk.ChatStatusWaiting)
		require.Nil(t, done.LastError)
		require.Equal(t, []string{"user: hello", "assistant: Partial answer"}, transcript(e.messages(chat.ID)))
		require.Len(t, e.llm.Requests(), 1)
	})

	t.Run("edit mid-stream restarts on the new history", func(t *testing.T) {
		t.Parallel()
		hang := llmtest.Join(llmtest.TextChunks("About the orig"), llmtest.Hang())
		e := setup(t, newStore(t), prov, []llmtest.Reply{hang, llmtest.TextChunks("Answer to the edit.")})
		chat := e.create(sdk.CreateChatRequest{Content: sdk.Text("original question")})
		waitClosed(t, hang.Started(), "the stream to hang")
		ms := e.messages(chat.ID)
		require.Len(t, ms, 1)
		_, err := e.c.EditMessage(e.ctx, chat.ID, ms[0].ID, sdk.EditChatMessageRequest{Content: sdk.Text("edited question")})
		require.NoError(t, err)

		e.waitStatus(chat.ID, sdk.ChatStatusWaiting)
		reqs := e.llm.Requests()
		require.Len(t, reqs, 2)
		second := decodeRequest(t, reqs[1])
		require.Equal(t, []string{"edited question"}, second.userTexts())
		require.NotContains(t, string(reqs[1].Body), "original question")
		require.Equal(t, []string{"user: edited question", "assistant: Answer to the edit."}, transcript(e.messages(chat.ID)))
	})

	t.Run("manual compaction summarizes and prunes the prompt", func(t *testing.T) {
		t.Parallel()
		e := setup(t, newStore(t), prov, []llmtest.Reply{
			llmtest.TextChunks("First answer."), llmtest.TextChunks("The user said hello."), llmtest.TextChunks("Second answer."),
		})
		chat := e.create(sdk.CreateChatRequest{Content: sdk.Text("hello")})
		e.waitStatus(chat.ID, sdk.ChatStatusWaiting)
		_, err := e.c.Compact(e.ctx, chat.ID)
		require.NoError(t, err)
		done := e.waitStatus(chat.ID, sdk.ChatStatusWaiting)
		require.Nil(t, done.LastError)

		reqs := e.llm.Requests()
		require.Len(t, reqs, 2, "the compaction made one summary call and no assistant follow-up")
		summary := decodeRequest(t, reqs[1])
		users := summary.userTexts()
		require.Equal(t, llm.SummaryInstruction, users[len(users)-1])
		require.Contains(t, summary.transcript(), "assistant: First answer.")

		ms := e.messages(chat.ID)
		require.Equal(t, []string{"user", "assistant", "assistant", "tool"}, roles(ms))
		call, result := ms[2].Content[0], ms[3].Content[0]
		require.Equal(t, "chat_summarized", call.ToolName)
		require.True(t, ms[2].Compressed)
		var args, res map[string]any
		require.NoError(t, json.Unmarshal(call.Args, &args))
		require.NoError(t, json.Unmarshal(result.Result, &res))
		require.Equal(t, "manual", args["source"])
		require.Equal(t, "manual", res["source"])
		require.Equal(t, "The user said hello.", res["summary"])

		_, err = e.c.SendMessage(e.ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("next")})
		require.NoError(t, err)
		e.waitStatus(chat.ID, sdk.ChatStatusWaiting)
		reqs = e.llm.Requests()
		require.Len(t, reqs, 3)
		after := decodeRequest(t, reqs[2])
		users = after.userTexts()
		require.Contains(t, users[0], "The user said hello.", "the prompt starts at the summary")
		// Anthropic merges the consecutive user messages into one.
		require.True(t, strings.HasSuffix(users[len(users)-1], "next"), "the new message ends the prompt: %q", users)
		require.NotContains(t, string(reqs[2].Body), "First answer.", "history before the boundary is pruned")
	})

	t.Run("send with busy_behavior interrupt", func(t *testing.T) {
		t.Parallel()
		reply := llmtest.Join(llmtest.TextChunks("Partial"), llmtest.Hang())
		e := setup(t, newStore(t), prov, []llmtest.Reply{reply, llmtest.TextChunks("Answer to the second.")})
		chat := e.create(sdk.CreateChatRequest{Content: sdk.Text("first")})
		waitClosed(t, reply.Started(), "the stream to hang")
		e.waitBuffered(chat.ID, "Partial")
		resp, err := e.c.SendMessage(e.ctx, chat.ID, sdk.CreateChatMessageRequest{
			Content: sdk.Text("second"), BusyBehavior: sdk.BusyBehaviorInterrupt,
		})
		require.NoError(t, err)
		require.True(t, resp.Queued, "the message waits for the interruption")
		require.NotNil(t, resp.QueuedMessage)

		e.waitStatus(chat.ID, sdk.ChatStatusWaiting)
		ms := e.messages(chat.ID)
		require.Equal(t, []string{"user: first", "assistant: Partial", "user: second", "assistant: Answer to the second."}, transcript(ms))
		require.NotNil(t, ms[2].QueuedMessageID)
		require.Equal(t, resp.QueuedMessage.ID, *ms[2].QueuedMessageID)
		second := decodeRequest(t, e.llm.Requests()[1])
		require.Equal(t, []string{"user: first", "assistant: Partial", "user: second"}, second.transcript())
	})

	t.Run("deleting a running chat stops its generation", func(t *testing.T) {
		t.Parallel()
		e := setup(t, newStore(t), prov, nil)
		held := e.router.Hold()
		chat := e.create(sdk.CreateChatRequest{Content: sdk.Text("hello")})
		waitClosed(t, held.Arrived(), "the provider request")
		require.NoError(t, e.c.DeleteChat(e.ctx, chat.ID))
		waitClosed(t, held.Cancelled(), "the generation to stop")
		require.Eventually(t, func() bool { return e.app.Internals().Worker.Runners() == 0 }, 15*time.Second, 5*time.Millisecond,
			"the runner of the deleted chat is cleaned up")
	})

	t.Run("queue drains in order", func(t *testing.T) {
		t.Parallel()
		e := setup(t, newStore(t), prov, []llmtest.Reply{
			llmtest.TextChunks("a1"), llmtest.TextChunks("a2"), llmtest.TextChunks("a3"), llmtest.TextChunks("a4"),
		})
		held := e.router.Hold()
		chat := e.create(sdk.CreateChatRequest{Content: sdk.Text("m1")})
		waitClosed(t, held.Arrived(), "the first provider request")
		var queued []int64
		for _, m := range []string{"m2", "m3", "m4"} {
			resp, err := e.c.SendMessage(e.ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text(m)})
			require.NoError(t, err)
			require.True(t, resp.Queued, "%s is queued while the chat runs", m)
			require.NotNil(t, resp.QueuedMessage)
			queued = append(queued, resp.QueuedMessage.ID)
		}
		held.Release()

		e.waitStatus(chat.ID, sdk.ChatStatusWaiting)
		ms := e.messages(chat.ID)
		require.Equal(t, []string{
			"user: m1", "assistant: a1", "user: m2", "assistant: a2", "user: m3", "assistant: a3", "user: m4", "assistant: a4",
		}, transcript(ms))
		require.Nil(t, ms[0].QueuedMessageID)
		for i, qid := range queued {
			m := ms[2+2*i]
			require.NotNil(t, m.QueuedMessageID, "promoted %s carries its queued_message_id", text(m))
			require.Equal(t, qid, *m.QueuedMessageID)
		}
		reqs := e.llm.Requests()
		require.Len(t, reqs, 4)
		for i, r := range reqs {
			users := decodeRequest(t, r).userTexts()
			require.Equal(t, "m"+string(rune('1'+i)), users[len(users)-1], "request %d answers the next message", i)
		}
		resp, err := e.c.ChatMessages(e.ctx, chat.ID, sdk.MessagesOptions{})
		require.NoError(t, err)
		require.Empty(t, resp.QueuedMessages)
	})
}

func roles(ms []sdk.ChatMessage) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Role
	}
	return out
}

// waitBuffered waits until the chat's current episode in the part buffer
// holds want: an interrupt commits what the buffer holds, so tests wait for
// the streamed deltas to be read off the wire before interrupting.
func (e *fixture) waitBuffered(id uuid.UUID, want string) {
	e.t.Helper()
	require.Eventually(e.t, func() bool {
		c, ok := peekChat(e.app.Internals().Store, id)
		if !ok {
			return false
		}
		parts, err := e.app.Internals().Buffer.GetParts(partbuf.Episode{ChatID: c.ID, HistoryVersion: c.HistoryVersion, GenerationAttempt: c.GenerationAttempt})
		var a llm.Assembler
		for _, p := range parts {
			a.Add(p)
		}
		return err == nil && text(sdk.ChatMessage{Content: a.Parts()}) == want
	}, 15*time.Second, 2*time.Millisecond, "the streamed text %q never reached the part buffer", want)
}

// TestRootLimitOverHTTP: with one root slot, a second chat waits unowned
// while the first runs, and the periodic acquisition pass admits it once
// the first has finished.
func TestRootLimitOverHTTP(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		e := setup(t, newStore(t), providers[0], nil, func(cfg *config.Config) { cfg.Worker.RootLimit = 1 })
		first, second := e.router.Hold(), e.router.Hold()
		a := e.create(sdk.CreateChatRequest{Content: sdk.Text("chat a")})
		waitClosed(t, first.Arrived(), "the first chat's provider request")
		b := e.create(sdk.CreateChatRequest{Content: sdk.Text("chat b")})
		// Both chats run; the one the worker admitted holds the only slot.
		owned := func(id uuid.UUID) bool { return storeChat(t, e.app.Internals().Store, id).WorkerID.Valid }
		require.True(t, owned(a.ID))
		require.Zero(t, e.app.Internals().Worker.AcquirePass(e.ctx), "an extra pass admits nothing")
		require.False(t, owned(b.ID), "the second chat waits for capacity, unowned")
		require.Equal(t, sdk.ChatStatusRunning, e.chat(b.ID).Status)

		first.Release()
		e.waitStatus(a.ID, sdk.ChatStatusWaiting)
		waitClosed(t, second.Arrived(), "the second chat's provider request once a slot is free")
		require.True(t, owned(b.ID))
		second.Release()
		e.waitStatus(b.ID, sdk.ChatStatusWaiting)
		require.Equal(t, []string{"user: chat b", "assistant: Hello from llmtest."}, transcript(e.messages(b.ID)))
	})
}
