package llmtest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/llm/llmtest"
)

type event struct {
	name string
	data map[string]any
	raw  string
}

// post sends body and returns the status, content type and, for event
// streams, the parsed events.
func post(t *testing.T, url string, body string) (int, string, []event, []byte) {
	t.Helper()
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var events []event
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(bytes.NewReader(raw))
		var cur event
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				cur.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				cur.raw = strings.TrimPrefix(line, "data: ")
				if cur.raw != "[DONE]" {
					require.NoError(t, json.Unmarshal([]byte(cur.raw), &cur.data), cur.raw)
				}
			case line == "":
				events = append(events, cur)
				cur = event{}
			}
		}
	}
	return res.StatusCode, res.Header.Get("Content-Type"), events, raw
}

const openAIBody = `{"model":"gpt-test","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`

func TestOpenAIStream(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewOpenAI(t, llmtest.Join(
		llmtest.TextChunks("Hel", "lo"),
		llmtest.ToolCall("call_a", "search", `{"q":"é✓ go"}`),
		llmtest.ToolCall("", "now", ""),
	).WithUsage(llmtest.Usage{InputTokens: 3, OutputTokens: 4, ReasoningTokens: 1, CacheReadTokens: 2}))

	status, ctype, events, _ := post(t, srv.URL+"/chat/completions", openAIBody)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, ctype, "text/event-stream")
	require.Equal(t, "[DONE]", events[len(events)-1].raw)

	delta := func(e event) map[string]any {
		return e.data["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
	}
	require.Equal(t, "chat.completion.chunk", events[0].data["object"])
	require.Equal(t, "gpt-test", events[0].data["model"])
	require.Equal(t, "assistant", delta(events[0])["role"])
	require.Equal(t, "Hel", delta(events[1])["content"])
	require.Equal(t, "lo", delta(events[2])["content"])

	// Tool calls: a start with index, id, type and name, then argument pieces.
	args := map[float64]string{}
	ids := map[float64]string{}
	for _, e := range events[3 : len(events)-3] {
		tc := delta(e)["tool_calls"].([]any)[0].(map[string]any)
		idx := tc["index"].(float64)
		if id, ok := tc["id"].(string); ok {
			ids[idx] = id
			require.Equal(t, "function", tc["type"])
		}
		args[idx] += tc["function"].(map[string]any)["arguments"].(string)
	}
	require.Equal(t, map[float64]string{0: "call_a", 1: "call_llmtest_1"}, ids)
	require.Equal(t, map[float64]string{0: `{"q":"é✓ go"}`, 1: ""}, args)

	finish := events[len(events)-3].data["choices"].([]any)[0].(map[string]any)
	require.Equal(t, "tool_calls", finish["finish_reason"])
	usage := events[len(events)-2].data
	require.Empty(t, usage["choices"])
	require.Equal(t, map[string]any{
		"prompt_tokens": 3.0, "completion_tokens": 4.0, "total_tokens": 7.0,
		"prompt_tokens_details":     map[string]any{"cached_tokens": 2.0},
		"completion_tokens_details": map[string]any{"reasoning_tokens": 1.0},
	}, usage["usage"])
}

func TestOpenAIUsageOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewOpenAI(t)
	_, _, events, _ := post(t, srv.URL+"/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	for _, e := range events {
		require.NotContains(t, e.data, "usage")
	}
}

func TestAnthropicStream(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewAnthropic(t, llmtest.Join(
		llmtest.Reasoning("hmm"),
		llmtest.TextChunks("Hel", "lo"),
		llmtest.ToolCallChunks("toolu_a", "search", `{"q":`, `"go"}`),
	))
	body := `{"model":"claude-test","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	status, _, events, _ := post(t, srv.URL+"/v1/messages", body)
	require.Equal(t, http.StatusOK, status)

	var names []string
	for _, e := range events {
		names = append(names, e.name)
		require.Equal(t, e.name, e.data["type"], "event name and data type agree")
	}
	require.Equal(t, []string{
		"message_start", "ping",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_stop", // thinking + signature
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_stop", // text
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_stop", // tool_use
		"message_delta", "message_stop",
	}, names)
	require.Equal(t, "claude-test", events[0].data["message"].(map[string]any)["model"])
	require.Equal(t, "thinking", events[2].data["content_block"].(map[string]any)["type"])
	require.Equal(t, "thinking_delta", events[3].data["delta"].(map[string]any)["type"])
	require.Equal(t, "signature_delta", events[4].data["delta"].(map[string]any)["type"])
	require.Equal(t, "text_delta", events[7].data["delta"].(map[string]any)["type"])
	tool := events[10].data["content_block"].(map[string]any)
	require.Equal(t, map[string]any{"type": "tool_use", "id": "toolu_a", "name": "search", "input": map[string]any{}}, tool)
	require.EqualValues(t, 2, events[10].data["index"])
	require.Equal(t, map[string]any{"type": "input_json_delta", "partial_json": `"go"}`}, events[12].data["delta"])
	md := events[14].data
	require.Equal(t, "tool_use", md["delta"].(map[string]any)["stop_reason"])
	require.EqualValues(t, llmtest.DefaultUsage.OutputTokens, md["usage"].(map[string]any)["output_tokens"])
}

func TestErrorBodies(t *testing.T) {
	t.Parallel()
	oa := llmtest.NewOpenAI(t, llmtest.HTTPError(http.StatusTooManyRequests, "slow down"))
	status, _, _, raw := post(t, oa.URL+"/chat/completions", openAIBody)
	require.Equal(t, http.StatusTooManyRequests, status)
	require.JSONEq(t, `{"error":{"message":"slow down","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, string(raw))

	an := llmtest.NewAnthropic(t, llmtest.HTTPError(529, "Overloaded"))
	status, _, _, raw = post(t, an.URL+"/v1/messages", `{"model":"c","max_tokens":1,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, 529, status)
	require.JSONEq(t, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_llmtest"}`, string(raw))
}

func TestProtocolChecks(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewOpenAI(t)
	status, _, _, _ := post(t, srv.URL+"/completions", openAIBody)
	require.Equal(t, http.StatusNotFound, status)
	status, _, _, raw := post(t, srv.URL+"/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, string(raw), "stream")

	an := llmtest.NewAnthropic(t)
	status, _, _, raw = post(t, an.URL+"/v1/messages", `{"model":"c","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, string(raw), "max_tokens")
}

func TestScriptOrderAndRecording(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewOpenAI(t, llmtest.TextChunks("one"))
	srv.Enqueue(llmtest.TextChunks("two"))
	require.Equal(t, 2, srv.Pending())
	srv.SetDefault(llmtest.TextChunks("default"))

	var got []string
	for range 3 {
		_, _, events, _ := post(t, srv.URL+"/chat/completions", openAIBody)
		got = append(got, events[1].data["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)["content"].(string))
	}
	require.Equal(t, []string{"one", "two", "default"}, got)
	require.Zero(t, srv.Pending())

	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	require.Equal(t, http.MethodPost, reqs[0].Method)
	require.Equal(t, "/v1/chat/completions", reqs[0].Path)
	require.Equal(t, "gpt-test", reqs[0].JSON(t)["model"])
}

func TestHangReleasedByClose(t *testing.T) {
	t.Parallel()
	hang := llmtest.Join(llmtest.TextChunks("par"), llmtest.Hang())
	srv := llmtest.NewOpenAI(t, hang)
	done := make(chan error, 1)
	go func() {
		res, err := http.Post(srv.URL+"/chat/completions", "application/json", strings.NewReader(openAIBody))
		if err == nil {
			_, err = io.ReadAll(res.Body)
			res.Body.Close()
		}
		done <- err
	}()
	<-hang.Started()
	srv.Close()
	<-done // the request ends; no leaked handler blocks Close
}

// TestPauseGoesOnWhenReleased: a Pause holds the stream mid-answer until
// the test releases it, and the rest of the reply follows.
func TestPauseGoesOnWhenReleased(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	slow := llmtest.Join(llmtest.TextChunks("Half"), llmtest.Pause(release), llmtest.TextChunks(" whole"))
	srv := llmtest.NewOpenAI(t, slow)
	done := make(chan []event, 1)
	go func() {
		_, _, events, _ := post(t, srv.URL+"/chat/completions", openAIBody)
		done <- events
	}()
	<-slow.Started()
	select {
	case <-done:
		t.Fatal("the stream ended before the pause was released")
	default:
	}
	close(release)
	var text string
	for _, e := range <-done {
		choices, _ := e.data["choices"].([]any)
		for _, c := range choices {
			delta, _ := c.(map[string]any)["delta"].(map[string]any)
			s, _ := delta["content"].(string)
			text += s
		}
	}
	require.Equal(t, "Half whole", text)
}

const responsesBody = `{"model":"gpt-test","stream":true,"input":[{"role":"user","content":"hi"}]}`

func TestOpenAIResponsesStream(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewOpenAIResponses(t, llmtest.Join(
		llmtest.Reasoning("hm", "m"),
		llmtest.TextChunks("Hel", "lo"),
		llmtest.ToolCallChunks("call_a", "search", `{"q":`, `"go"}`),
		llmtest.ToolCall("", "now", ""),
	).WithUsage(llmtest.Usage{InputTokens: 3, OutputTokens: 4, ReasoningTokens: 1, CacheReadTokens: 2}))

	status, ctype, events, _ := post(t, srv.URL+"/responses", responsesBody)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, ctype, "text/event-stream")
	var names []string
	for i, e := range events {
		names = append(names, e.name)
		require.Equal(t, e.name, e.data["type"], "event name and data type agree")
		require.EqualValues(t, i, e.data["sequence_number"])
	}
	require.Equal(t, []string{
		"response.created", "response.in_progress",
		"response.output_item.added", "response.reasoning_summary_part.added",
		"response.reasoning_summary_text.delta", "response.reasoning_summary_text.delta",
		"response.reasoning_summary_text.done", "response.reasoning_summary_part.done", "response.output_item.done",
		"response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added",
		"response.function_call_arguments.delta", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.done", "response.output_item.done",
		"response.completed",
	}, names)
	require.Equal(t, "reasoning", events[2].data["item"].(map[string]any)["type"])
	require.Equal(t, "hm", events[4].data["delta"])
	require.Equal(t, "Hel", events[11].data["delta"])
	require.EqualValues(t, 1, events[11].data["output_index"])
	require.Equal(t, map[string]any{
		"id": "fc_llmtest_0", "type": "function_call", "status": "in_progress",
		"arguments": "", "call_id": "call_a", "name": "search",
	}, events[16].data["item"])
	require.Equal(t, "fc_llmtest_0", events[17].data["item_id"])
	require.Equal(t, `{"q":"go"}`, events[19].data["arguments"])
	require.Equal(t, "call_llmtest_1", events[21].data["item"].(map[string]any)["call_id"])

	done := events[len(events)-1].data["response"].(map[string]any)
	require.Equal(t, "completed", done["status"])
	require.Len(t, done["output"], 4)
	require.Equal(t, map[string]any{
		"input_tokens": 3.0, "input_tokens_details": map[string]any{"cached_tokens": 2.0},
		"output_tokens": 4.0, "output_tokens_details": map[string]any{"reasoning_tokens": 1.0},
		"total_tokens": 7.0,
	}, done["usage"])
}

func TestOpenAIResponsesEndings(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewOpenAIResponses(t,
		llmtest.TextChunks("cut").WithFinish("length"),
		llmtest.TextChunks("bad").WithFinish("content_filter"),
		llmtest.Join(llmtest.TextChunks("par"), llmtest.StreamError(http.StatusTooManyRequests, "slow down")),
		llmtest.HTTPError(http.StatusUnauthorized, "Incorrect API key provided"),
	)
	_, _, events, _ := post(t, srv.URL+"/responses", responsesBody)
	last := events[len(events)-1].data
	require.Equal(t, "response.incomplete", last["type"])
	require.Equal(t, map[string]any{"reason": "max_output_tokens"}, last["response"].(map[string]any)["incomplete_details"])

	_, _, events, _ = post(t, srv.URL+"/responses", responsesBody)
	last = events[len(events)-1].data
	require.Equal(t, map[string]any{"reason": "content_filter"}, last["response"].(map[string]any)["incomplete_details"])

	_, _, events, _ = post(t, srv.URL+"/responses", responsesBody)
	last = events[len(events)-1].data
	require.Equal(t, "error", events[len(events)-1].name)
	require.Equal(t, "rate_limit_exceeded", last["code"])
	require.Equal(t, "slow down", last["message"])

	status, _, _, raw := post(t, srv.URL+"/responses", responsesBody)
	require.Equal(t, http.StatusUnauthorized, status)
	require.JSONEq(t, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, string(raw))

	status, _, _, raw = post(t, srv.URL+"/responses", `{"model":"m","stream":true}`)
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, string(raw), "input")
}

func TestRawReply(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewOpenAIResponses(t, llmtest.Raw(`{"type":"response.created","x":1}`, `{"plain":true}`))
	_, _, events, _ := post(t, srv.URL+"/responses", responsesBody)
	require.Len(t, events, 2)
	require.Equal(t, "response.created", events[0].name)
	require.Equal(t, "", events[1].name)
	require.Equal(t, true, events[1].data["plain"])
}

func TestModelsAndOllamaShow(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewOpenAI(t, llmtest.TextChunks("scripted"))
	srv.SetModels(llmtest.ListedModel{ID: "m1", Fields: map[string]any{"max_model_len": 4096}})
	res, err := http.Get(srv.URL + "/models")
	require.NoError(t, err)
	raw, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	require.JSONEq(t, `{"object":"list","data":[{"id":"m1","object":"model","created":1700000000,"owned_by":"llmtest","max_model_len":4096}]}`, string(raw))

	// Without SetOllamaShow, /api/show is no route.
	status, _, _, _ := post(t, strings.TrimSuffix(srv.URL, "/v1")+"/api/show", `{"model":"m1"}`)
	require.Equal(t, http.StatusNotFound, status)

	srv.SetOllamaShow("m1", llmtest.OllamaShow{ModelInfo: map[string]any{"llama.context_length": 8192}, Parameters: "num_ctx 2048"})
	status, _, _, raw = post(t, strings.TrimSuffix(srv.URL, "/v1")+"/api/show", `{"model":"m1"}`)
	require.Equal(t, http.StatusOK, status)
	var show map[string]any
	require.NoError(t, json.Unmarshal(raw, &show))
	require.Equal(t, map[string]any{"llama.context_length": 8192.0}, show["model_info"])
	require.Equal(t, "num_ctx 2048", show["parameters"])
	status, _, _, _ = post(t, strings.TrimSuffix(srv.URL, "/v1")+"/api/show", `{"model":"other"}`)
	require.Equal(t, http.StatusNotFound, status)

	// Listing, showing and unrouted requests use no scripted reply.
	require.Len(t, srv.Requests(), 4)
	require.Equal(t, 1, srv.Pending())
}
