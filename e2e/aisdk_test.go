package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/worker"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// aisdkRig is a running server (fake OpenAI model, built-in tools) with
// users alice and bob, spoken to through the AI SDK routes.
type aisdkRig struct {
	ctx        context.Context
	url        string
	llm        *llmtest.Server
	alice, bob string // tokens
	aliceAPI   *sdk.Client
}

func startAISDK(t testing.TB, newStore func(t testing.TB) store.Store) *aisdkRig {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	r := &aisdkRig{ctx: ctx, llm: llmtest.NewOpenAI(t)}
	h := apptest.Start(t, apptest.Options{Store: newStore, Config: config.Config{
		OpenAIBaseURL: r.llm.URL, DefaultModel: "openai/test-model", BuiltinTools: true,
		Worker: worker.Config{BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond, SyncInterval: 50 * time.Millisecond},
	}})
	r.url = h.URL
	r.alice, r.bob = h.NewUserToken(t, "alice"), h.NewUserToken(t, "bob")
	r.aliceAPI = h.Client(r.alice)
	return r
}

// streamed is one answer of the AI SDK routes.
type streamed struct {
	status int
	header http.Header
	chunks []map[string]any
	done   bool // ended with data: [DONE]
	body   []byte
}

// types lists the chunk types in order.
func (s streamed) types() []string {
	var out []string
	for _, c := range s.chunks {
		out = append(out, c["type"].(string))
	}
	return out
}

// text joins the text deltas.
func (s streamed) text() string {
	var b strings.Builder
	for _, c := range s.chunks {
		if c["type"] == "text-delta" {
			b.WriteString(c["delta"].(string))
		}
	}
	return b.String()
}

func (s streamed) first(typ string) map[string]any {
	for _, c := range s.chunks {
		if c["type"] == typ {
			return c
		}
	}
	return nil
}

func (r *aisdkRig) do(t *testing.T, token, method, path string, body any) streamed {
	t.Helper()
	out, err := r.try(token, method, path, body, nil)
	require.NoError(t, err)
	return out
}

// try is do for other goroutines: errors are returned, never failed on.
func (r *aisdkRig) try(token, method, path string, body any, onChunk func(map[string]any)) (streamed, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return streamed{}, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(r.ctx, method, r.url+"/api/v2/ai-sdk/chat"+path, rd)
	if err != nil {
		return streamed{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return streamed{}, err
	}
	return readStream(resp, onChunk)
}

// readStream reads an answer to its end, handing each chunk to onChunk
// (when set) as it arrives.
func readStream(resp *http.Response, onChunk func(map[string]any)) (streamed, error) {
	defer resp.Body.Close()
	out := streamed{status: resp.StatusCode, header: resp.Header}
	var err error
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		out.body, err = io.ReadAll(resp.Body)
		return out, err
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			out.done = true
			break
		}
		var c map[string]any
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return out, fmt.Errorf("chunk %q: %w", data, err)
		}
		out.chunks = append(out.chunks, c)
		if onChunk != nil {
			onChunk(c)
		}
	}
	return out, sc.Err()
}

// result is a streamed answer from another goroutine.
type result struct {
	s   streamed
	err error
}

func (res result) get(t *testing.T) streamed {
	t.Helper()
	require.NoError(t, res.err)
	return res.s
}

func userMsg(id, text string) map[string]any {
	return map[string]any{"id": id, "role": "user", "parts": []any{map[string]any{"type": "text", "text": text}}}
}

func submit(chatID string, msgs ...map[string]any) map[string]any {
	// A title: no title generation takes a scripted reply.
	return map[string]any{"id": chatID, "trigger": "submit-message", "messages": msgs, "title": "t"}
}

func TestAISDKPlainTurnAndIdempotentResend(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := startAISDK(t, newStore)
		r.llm.Enqueue(llmtest.Join(llmtest.Reasoning("thinking"), llmtest.TextChunks("Hello ", "there")))
		s := r.do(t, r.alice, http.MethodPost, "", submit("chatAbc123", userMsg("m1", "hi")))
		require.Equal(t, http.StatusOK, s.status, string(s.body))
		require.Equal(t, "v1", s.header.Get("X-Vercel-Ai-Ui-Message-Stream"))
		require.Equal(t, "no-cache", s.header.Get("Cache-Control"))
		require.Equal(t, "no", s.header.Get("X-Accel-Buffering"))
		require.True(t, s.done, "the stream ends with [DONE]")
		types := s.types()
		require.Equal(t, "start", types[0])
		require.Equal(t, "start-step", types[1])
		require.Equal(t, []string{"finish-step", "finish"}, types[len(types)-2:])
		require.Contains(t, types, "reasoning-start")
		require.Contains(t, types, "reasoning-end")
		require.Equal(t, "Hello there", s.text())
		start := s.first("start")
		meta := start["messageMetadata"].(map[string]any)["chatd"].(map[string]any)
		chatID := uuid.MustParse(meta["chat_id"].(string))
		require.Equal(t, "stop", s.first("finish")["finishReason"])

		// An ordinary chat: the native API sees it and its reply.
		chat, err := r.aliceAPI.Chat(r.ctx, chatID)
		require.NoError(t, err)
		require.Equal(t, "chatAbc123", chat.Labels["ai_sdk_chat_id"])
		requests := len(r.llm.Requests())

		// The same message id again: no second turn, the same reply.
		again := r.do(t, r.alice, http.MethodPost, "", submit("chatAbc123", userMsg("m1", "hi")))
		require.Equal(t, http.StatusOK, again.status, string(again.body))
		require.Equal(t, "Hello there", again.text())
		require.Equal(t, start["messageId"], again.first("start")["messageId"])
		require.Len(t, r.llm.Requests(), requests, "a resend starts no turn")
		msgs, err := r.aliceAPI.ChatMessages(r.ctx, chatID, sdk.MessagesOptions{})
		require.NoError(t, err)
		require.Len(t, msgs.Messages, 2, "one user message, one reply")

		// The same message id with other text is a conflict, before any stream.
		conflict := r.do(t, r.alice, http.MethodPost, "", submit("chatAbc123", userMsg("m1", "other")))
		require.Equal(t, http.StatusConflict, conflict.status)
		require.Contains(t, string(conflict.body), sdk.CodeInvocationConflict)

		// Idle: resume answers 204; history hydrates useChat.
		require.Equal(t, http.StatusNoContent, r.do(t, r.alice, http.MethodGet, "/chatAbc123/stream", nil).status)
		h := r.do(t, r.alice, http.MethodGet, "/chatAbc123/messages", nil)
		require.Equal(t, http.StatusOK, h.status)
		var ui []map[string]any
		require.NoError(t, json.Unmarshal(h.body, &ui))
		require.Len(t, ui, 2)
		require.Equal(t, "user", ui[0]["role"])
		require.Equal(t, start["messageId"], ui[1]["id"])
		parts := ui[1]["parts"].([]any)
		require.Equal(t, "step-start", parts[0].(map[string]any)["type"])
		require.Equal(t, "Hello there", parts[len(parts)-1].(map[string]any)["text"])
	})
}

func TestAISDKUsersKeptApart(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := startAISDK(t, newStore)
		r.llm.Enqueue(llmtest.TextChunks("for alice"))
		a := r.do(t, r.alice, http.MethodPost, "", submit("shared", userMsg("m1", "hi")))
		require.Equal(t, "for alice", a.text())
		// Bob's "shared" is not alice's: empty, idle, then his own chat.
		b := r.do(t, r.bob, http.MethodGet, "/shared/messages", nil)
		require.Equal(t, http.StatusOK, b.status)
		require.JSONEq(t, "[]", string(b.body))
		require.Equal(t, http.StatusNoContent, r.do(t, r.bob, http.MethodGet, "/shared/stream", nil).status)
		r.llm.Enqueue(llmtest.TextChunks("for bob"))
		bs := r.do(t, r.bob, http.MethodPost, "", submit("shared", userMsg("m1", "hi")))
		require.Equal(t, "for bob", bs.text())
		chatOf := func(s streamed) string {
			return s.first("start")["messageMetadata"].(map[string]any)["chatd"].(map[string]any)["chat_id"].(string)
		}
		require.NotEqual(t, chatOf(a), chatOf(bs))
		// Alice's chat UUID is not bob's to use: his id maps to his own chat.
		other := r.do(t, r.bob, http.MethodGet, "/"+chatOf(a)+"/messages", nil)
		require.JSONEq(t, "[]", string(other.body))
		// Deleting the chat frees the id: the next POST makes a new chat.
		require.NoError(t, r.aliceAPI.DeleteChat(r.ctx, uuid.MustParse(chatOf(a))))
		require.JSONEq(t, "[]", string(r.do(t, r.alice, http.MethodGet, "/shared/messages", nil).body))
		r.llm.Enqueue(llmtest.TextChunks("anew"))
		fresh := r.do(t, r.alice, http.MethodPost, "", submit("shared", userMsg("m1", "hi")))
		require.Equal(t, "anew", fresh.text())
		require.NotEqual(t, chatOf(a), chatOf(fresh))
		// Without credentials: 401 before any stream.
		require.Equal(t, http.StatusUnauthorized, r.do(t, "", http.MethodPost, "", submit("x", userMsg("m1", "hi"))).status)
		// Bad input: JSON 4xx before any stream.
		bad := r.do(t, r.alice, http.MethodPost, "", submit("not/valid", userMsg("m1", "hi")))
		require.Equal(t, http.StatusBadRequest, bad.status)
		require.Contains(t, string(bad.body), sdk.CodeValidation)
		bad = r.do(t, r.alice, http.MethodPost, "", map[string]any{"id": "ok", "trigger": "nope", "messages": []any{userMsg("m", "x")}})
		require.Equal(t, http.StatusBadRequest, bad.status)
		bad = r.do(t, r.alice, http.MethodPost, "", submit("ok"))
		require.Equal(t, http.StatusBadRequest, bad.status)
	})
}

func TestAISDKClientToolRoundTrip(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := startAISDK(t, newStore)
		// The model answers once the POST's stream has begun, so the tool
		// call's argument deltas reach it live: a step streamed and
		// committed before the stream subscribed comes whole, without
		// deltas (tool-input-start, then tool-input-available).
		release := make(chan struct{})
		r.llm.Enqueue(llmtest.Join(llmtest.Pause(release), llmtest.ToolCallChunks("call_w", "get_weather", `{"city":`, `"Paris"}`)),
			llmtest.TextChunks("It is sunny."))
		body := submit("tools", userMsg("m1", "weather?"))
		body["tools"] = []any{map[string]any{"name": "get_weather", "description": "weather", "input_schema": map[string]any{"type": "object"}}}
		var begun sync.Once
		s, err := r.try(r.alice, http.MethodPost, "", body, func(c map[string]any) {
			if c["type"] == "start" {
				begun.Do(func() { close(release) })
			}
		})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, s.status, string(s.body))
		in := s.first("tool-input-available")
		require.NotNil(t, in, "%v", s.types())
		require.Equal(t, "call_w", in["toolCallId"])
		require.Equal(t, map[string]any{"city": "Paris"}, in["input"])
		require.Nil(t, in["dynamic"], "an app's own tool is static (tool-get_weather)")
		require.Contains(t, s.types(), "tool-input-delta")
		require.Equal(t, "tool-calls", s.first("finish")["finishReason"])

		// addToolOutput: the next POST carries the assistant message with the output.
		assistant := map[string]any{"id": s.first("start")["messageId"], "role": "assistant", "parts": []any{
			map[string]any{"type": "step-start"},
			map[string]any{"type": "tool-get_weather", "toolCallId": "call_w", "state": "output-available",
				"input": map[string]any{"city": "Paris"}, "output": map[string]any{"sky": "clear"}},
		}}
		cont := submit("tools", userMsg("m1", "weather?"), assistant)
		cont["messageId"] = assistant["id"]
		c := r.do(t, r.alice, http.MethodPost, "", cont)
		require.Equal(t, http.StatusOK, c.status, string(c.body))
		require.Equal(t, "It is sunny.", c.text())
		require.Equal(t, "start", c.types()[0])
		require.NotContains(t, c.types(), "tool-input-available", "the steps the client has are not sent again")
		require.Equal(t, "stop", c.first("finish")["finishReason"])
		// The model read the client's output.
		reqs := r.llm.Requests()
		require.Contains(t, string(reqs[len(reqs)-1].Body), `sky`)
		// A retried continuation submits nothing twice and ends the same.
		again := r.do(t, r.alice, http.MethodPost, "", cont)
		require.Equal(t, http.StatusOK, again.status, string(again.body))
		require.Equal(t, "It is sunny.", again.text())
	})
}

func TestAISDKServerToolApproval(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := startAISDK(t, newStore)
		r.llm.Enqueue(llmtest.ToolCall("call_t", "current_time", `{}`), llmtest.TextChunks("Noted the time."))
		body := submit("approve", userMsg("m1", "time?"))
		body["tool_approval"] = "always"
		s := r.do(t, r.alice, http.MethodPost, "", body)
		require.Equal(t, http.StatusOK, s.status, string(s.body))
		ask := s.first("tool-approval-request")
		require.NotNil(t, ask, "%v", s.types())
		require.Equal(t, "call_t", ask["toolCallId"])
		require.Equal(t, true, s.first("tool-input-available")["dynamic"], "a server tool is dynamic")
		require.Equal(t, "tool-calls", s.first("finish")["finishReason"])

		assistant := map[string]any{"id": s.first("start")["messageId"], "role": "assistant", "parts": []any{
			map[string]any{"type": "step-start"},
			map[string]any{"type": "dynamic-tool", "toolName": "current_time", "toolCallId": "call_t", "state": "approval-responded",
				"input": map[string]any{}, "approval": map[string]any{"id": ask["approvalId"], "approved": true}},
		}}
		cont := submit("approve", userMsg("m1", "time?"), assistant)
		cont["messageId"] = assistant["id"]
		c := r.do(t, r.alice, http.MethodPost, "", cont)
		require.Equal(t, http.StatusOK, c.status, string(c.body))
		out := c.first("tool-output-available")
		require.NotNil(t, out, "%v", c.types())
		require.Equal(t, "call_t", out["toolCallId"])
		require.Equal(t, "Noted the time.", c.text())
		require.Equal(t, "stop", c.first("finish")["finishReason"])

		// A denial: the call's result is tool-output-denied.
		r.llm.Enqueue(llmtest.ToolCall("call_d", "current_time", `{}`), llmtest.TextChunks("Fine, no time."))
		body = submit("deny", userMsg("m1", "time?"))
		body["tool_approval"] = "always"
		s = r.do(t, r.alice, http.MethodPost, "", body)
		require.NotNil(t, s.first("tool-approval-request"), "%v", s.types())
		assistant["id"] = s.first("start")["messageId"]
		assistant["parts"] = []any{map[string]any{"type": "dynamic-tool", "toolName": "current_time", "toolCallId": "call_d",
			"state": "approval-responded", "input": map[string]any{}, "approval": map[string]any{"id": "call_d", "approved": false, "reason": "not now"}}}
		cont = submit("deny", userMsg("m1", "time?"), assistant)
		cont["messageId"] = assistant["id"]
		c = r.do(t, r.alice, http.MethodPost, "", cont)
		require.Equal(t, "call_d", c.first("tool-output-denied")["toolCallId"], "%v", c.types())
		require.Equal(t, "Fine, no time.", c.text())
	})
}

func TestAISDKEditAndRegenerate(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := startAISDK(t, newStore)
		r.llm.Enqueue(llmtest.TextChunks("first"), llmtest.TextChunks("second"))
		require.Equal(t, "first", r.do(t, r.alice, http.MethodPost, "", submit("ed", userMsg("m1", "one"))).text())
		s2 := r.do(t, r.alice, http.MethodPost, "", submit("ed", userMsg("m1", "one"), userMsg("m2", "two")))
		require.Equal(t, "second", s2.text())

		// Edit m1 (the transport sends messageId and the history up to it).
		r.llm.Enqueue(llmtest.TextChunks("edited"))
		edit := submit("ed", userMsg("m1", "uno"))
		edit["messageId"] = "m1"
		e := r.do(t, r.alice, http.MethodPost, "", edit)
		require.Equal(t, http.StatusOK, e.status, string(e.body))
		require.Equal(t, "edited", e.text())
		var ui []map[string]any
		require.NoError(t, json.Unmarshal(r.do(t, r.alice, http.MethodGet, "/ed/messages", nil).body, &ui))
		require.Len(t, ui, 2, "the edit replaced everything from m1")
		require.Equal(t, "uno", ui[0]["parts"].([]any)[0].(map[string]any)["text"])

		// Regenerate the last reply: the same prompt, a new answer.
		r.llm.Enqueue(llmtest.TextChunks("again"))
		g := r.do(t, r.alice, http.MethodPost, "", map[string]any{"id": "ed", "trigger": "regenerate-message", "messageId": ui[1]["id"],
			"messages": []any{ui[0]}})
		require.Equal(t, http.StatusOK, g.status, string(g.body))
		require.Equal(t, "again", g.text())
		require.NoError(t, json.Unmarshal(r.do(t, r.alice, http.MethodGet, "/ed/messages", nil).body, &ui))
		require.Len(t, ui, 2)
		require.Equal(t, "uno", ui[0]["parts"].([]any)[0].(map[string]any)["text"])
		parts := ui[1]["parts"].([]any)
		require.Equal(t, "again", parts[len(parts)-1].(map[string]any)["text"])

		// Editing m1 again (the client still calls it m1) follows the edits.
		r.llm.Enqueue(llmtest.TextChunks("third"))
		edit = submit("ed", userMsg("m1", "eins"))
		edit["messageId"] = "m1"
		require.Equal(t, "third", r.do(t, r.alice, http.MethodPost, "", edit).text())
	})
}

func TestAISDKResumeAndInterrupt(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := startAISDK(t, newStore)
		release := make(chan struct{})
		reply := llmtest.Join(llmtest.TextChunks("Part one, "), llmtest.Pause(release), llmtest.TextChunks("part two."))
		r.llm.Enqueue(reply)
		posted := make(chan result, 1)
		go func() {
			s, err := r.try(r.alice, http.MethodPost, "", submit("resumable", userMsg("m1", "go")), nil)
			posted <- result{s, err}
		}()
		select {
		case <-reply.Started():
		case <-r.ctx.Done():
			t.Fatal("the model never started")
		}
		// Mid-reply, another connection resumes: a replay from start, then
		// live; the model goes on once the replay has reached the client.
		resumed := make(chan result, 1)
		go func() {
			var once bool
			s, err := r.try(r.alice, http.MethodGet, "/resumable/stream", nil, func(c map[string]any) {
				if c["type"] == "text-delta" && !once {
					once = true
					close(release)
				}
			})
			resumed <- result{s, err}
		}()
		p, s := (<-posted).get(t), (<-resumed).get(t)
		require.Equal(t, http.StatusOK, s.status, string(s.body))
		require.Equal(t, "Part one, part two.", p.text())
		require.Equal(t, "Part one, part two.", s.text(), "the resumed stream replays the reply once")
		require.Equal(t, p.first("start")["messageId"], s.first("start")["messageId"])
		require.Equal(t, "stop", s.first("finish")["finishReason"])

		// An interrupt through the AI SDK route ends the stream with abort.
		hold := make(chan struct{})
		defer close(hold)
		slow := llmtest.Join(llmtest.TextChunks("Begun"), llmtest.Pause(hold))
		r.llm.Enqueue(slow)
		go func() {
			s, err := r.try(r.alice, http.MethodPost, "", submit("resumable", userMsg("m1", "go"), userMsg("m2", "more")), nil)
			posted <- result{s, err}
		}()
		<-slow.Started()
		stop := r.do(t, r.alice, http.MethodPost, "/resumable/interrupt", nil)
		require.Equal(t, http.StatusOK, stop.status, string(stop.body))
		p = (<-posted).get(t)
		require.Contains(t, p.types(), "abort")
		require.Equal(t, "interrupted", p.first("finish")["finishReason"])
		require.Equal(t, "Begun", p.text())
	})
}

// TestAISDKStreamOutlivesRequestTimeouts: an AI SDK stream is a plain HTTP
// response, not a hijacked connection, so the server's read and write
// timeouts must not end it.
func TestAISDKStreamOutlivesRequestTimeouts(t *testing.T) {
	t.Parallel()
	const timeout = 2 * time.Second
	addr := serve(t, config.Config{ReadTimeout: timeout, WriteTimeout: timeout, StreamPingInterval: timeout / 4, DemoTokenDelay: timeout / 4})
	r := &aisdkRig{url: "http://" + addr, alice: connToken}
	var cancel context.CancelFunc
	r.ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	interrupted := false
	var stop streamed
	s, err := r.try(r.alice, http.MethodPost, "", submit("slow", userMsg("m1", "a long answer, please")), func(c map[string]any) {
		// Past both timeouts several times over, interrupt: the stream
		// must still be there to say so.
		if !interrupted && time.Since(start) > 5*timeout/2 {
			interrupted = true
			stop, _ = r.try(r.alice, http.MethodPost, "/slow/interrupt", nil, nil)
		}
	})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, stop.status, string(stop.body))
	require.True(t, interrupted, "the stream ended after %v: %v", time.Since(start), s.types())
	require.True(t, s.done, "the stream ended with [DONE]")
	require.Equal(t, "interrupted", s.first("finish")["finishReason"])
}
