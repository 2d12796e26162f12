package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/llm/llmtest/providertest"
	"github.com/chatd/chatd/app/llm/openai"
	"github.com/chatd/chatd/app/sdk"
)

// fixture is what a test needs: the adapter over a fake OpenAI server.
type fixture struct {
	p   *openai.Provider
	srv *llmtest.Server
}

func setup(t *testing.T, replies ...llmtest.Reply) fixture {
	t.Helper()
	srv := llmtest.NewOpenAI(t, replies...)
	return fixture{p: openai.New(openai.Config{APIKey: "sk-test", BaseURL: srv.URL, UseResponsesAPI: ptr(false)}), srv: srv}
}

// setupResponses is setup over the Responses API.
func setupResponses(t *testing.T, replies ...llmtest.Reply) fixture {
	t.Helper()
	srv := llmtest.NewOpenAIResponses(t, replies...)
	return fixture{p: openai.New(openai.Config{APIKey: "sk-test", BaseURL: srv.URL, UseResponsesAPI: ptr(true)}), srv: srv}
}

func userRequest(text string) llm.Request { return providertest.UserRequest("gpt-test", text) }

// TestConformance runs the scenarios every provider adapter shares
// (streaming, tool calls, usage, errors, cancellation) against the fake
// OpenAI server; the tests below are this adapter's own wire mapping.
func TestConformance(t *testing.T) {
	t.Parallel()
	providertest.Run(t, providertest.Adapter{
		Name:      "openai",
		Model:     "gpt-test",
		NewServer: llmtest.NewOpenAI,
		New: func(url string) llm.Provider {
			return openai.New(openai.Config{APIKey: "sk-test", BaseURL: url})
		},
		GeneratedCallID: func(n int) string { return fmt.Sprintf("call_llmtest_%d", n) },
		CacheCreation:   false,
		StreamError:     providertest.StreamError{Status: http.StatusTooManyRequests, Message: "slow down", Kind: sdk.ChatErrorRateLimit},
	})
}

// TestConformanceResponses runs the same scenarios over the Responses API
// against the fake Responses server.
func TestConformanceResponses(t *testing.T) {
	t.Parallel()
	providertest.Run(t, providertest.Adapter{
		Name:      "openai",
		Model:     "gpt-test",
		NewServer: llmtest.NewOpenAIResponses,
		New: func(url string) llm.Provider {
			return openai.New(openai.Config{APIKey: "sk-test", BaseURL: url, UseResponsesAPI: ptr(true)})
		},
		GeneratedCallID: func(n int) string { return fmt.Sprintf("call_llmtest_%d", n) },
		CacheCreation:   false,
		StreamError:     providertest.StreamError{Status: http.StatusTooManyRequests, Message: "slow down", Kind: sdk.ChatErrorRateLimit},
	})
}

func ptr[T any](v T) *T { return &v }

// mappingRequest exercises every part of the request mapping: system
// text, parallel tool calls and their results, an error result, a
// reasoning-only assistant turn, tools with and without a schema.
func mappingRequest() llm.Request {
	return llm.Request{
		Model:           "gpt-4.1-mini",
		ReasoningEffort: "low",
		MaxOutputTokens: 256,
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Parts: []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "Be brief."}}},
			{Role: llm.RoleUser, Parts: []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "Weather in Paris and Rome?"}}},
			{Role: llm.RoleAssistant, Parts: []sdk.ChatMessagePart{
				{Type: sdk.PartReasoning, Text: "two calls"},
				{Type: sdk.PartText, Text: "Looking."},
				{Type: sdk.PartToolCall, ToolCallID: "call_1", ToolName: "weather", Args: json.RawMessage(`{"city":"Paris"}`)},
				{Type: sdk.PartToolCall, ToolCallID: "call_2", ToolName: "weather", Args: json.RawMessage(`{"city":"Rome"}`)},
			}},
			{Role: llm.RoleTool, Parts: []sdk.ChatMessagePart{
				{Type: sdk.PartToolResult, ToolCallID: "call_1", ToolName: "weather", Result: json.RawMessage(`{"temp":21}`)},
				{Type: sdk.PartToolResult, ToolCallID: "call_2", ToolName: "weather", Result: json.RawMessage(`"station offline"`), IsError: true},
			}},
			{Role: llm.RoleAssistant, Parts: []sdk.ChatMessagePart{{Type: sdk.PartReasoning, Text: "only thoughts"}}},
			{Role: llm.RoleUser, Parts: []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "Thanks"}}},
		},
		Tools: []llm.Tool{
			{Name: "weather", Description: "Current weather", InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
			{Name: "now"},
		},
	}
}

func TestRequestMapping(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.p.Stream(context.Background(), mappingRequest(), nil)
	require.NoError(t, err)

	reqs := b.srv.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "/v1/chat/completions", reqs[0].Path)
	require.Equal(t, "Bearer sk-test", reqs[0].Header.Get("Authorization"))
	body := reqs[0].JSON(t)
	require.Equal(t, "gpt-4.1-mini", body["model"])
	require.Equal(t, true, body["stream"])
	require.Equal(t, map[string]any{"include_usage": true}, body["stream_options"])
	require.Equal(t, "low", body["reasoning_effort"])
	require.EqualValues(t, 256, body["max_completion_tokens"])
	require.JSONEq(t, `[
		{"role":"system","content":"Be brief."},
		{"role":"user","content":"Weather in Paris and Rome?"},
		{"role":"assistant","content":"Looking.","tool_calls":[
			{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}},
			{"id":"call_2","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Rome\"}"}}
		]},
		{"role":"tool","tool_call_id":"call_1","content":"{\"temp\":21}"},
		{"role":"tool","tool_call_id":"call_2","content":"error: station offline"},
		{"role":"user","content":"Thanks"}
	]`, marshal(t, body["messages"]))
	require.JSONEq(t, `[
		{"type":"function","function":{"name":"weather","description":"Current weather",
			"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},
		{"type":"function","function":{"name":"now","parameters":{"type":"object","properties":{}}}}
	]`, marshal(t, body["tools"]))
}

func TestRequestMappingMinimal(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.p.Stream(context.Background(), userRequest("hi"), nil)
	require.NoError(t, err)
	body := b.srv.Requests()[0].JSON(t)
	for _, key := range []string{"tools", "reasoning_effort", "max_completion_tokens", "max_tokens"} {
		require.NotContains(t, body, key)
	}
}

func TestResponsesRequestMapping(t *testing.T) {
	t.Parallel()
	b := setupResponses(t)
	_, err := b.p.Stream(context.Background(), mappingRequest(), nil)
	require.NoError(t, err)

	reqs := b.srv.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "/v1/responses", reqs[0].Path)
	require.Equal(t, "Bearer sk-test", reqs[0].Header.Get("Authorization"))
	body := reqs[0].JSON(t)
	require.Equal(t, "gpt-4.1-mini", body["model"])
	require.Equal(t, true, body["stream"])
	require.Equal(t, false, body["store"], "chatd keeps the conversation; nothing is stored at OpenAI")
	require.Equal(t, map[string]any{"effort": "low", "summary": "auto"}, body["reasoning"])
	require.EqualValues(t, 256, body["max_output_tokens"])
	require.JSONEq(t, `[
		{"role":"system","content":"Be brief."},
		{"role":"user","content":"Weather in Paris and Rome?"},
		{"role":"assistant","content":"Looking."},
		{"type":"function_call","call_id":"call_1","name":"weather","arguments":"{\"city\":\"Paris\"}"},
		{"type":"function_call","call_id":"call_2","name":"weather","arguments":"{\"city\":\"Rome\"}"},
		{"type":"function_call_output","call_id":"call_1","output":"{\"temp\":21}"},
		{"type":"function_call_output","call_id":"call_2","output":"error: station offline"},
		{"role":"user","content":"Thanks"}
	]`, marshal(t, body["input"]))
	require.JSONEq(t, `[
		{"type":"function","name":"weather","description":"Current weather","strict":false,
			"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},
		{"type":"function","name":"now","strict":false,"parameters":{"type":"object","properties":{}}}
	]`, marshal(t, body["tools"]))
}

// TestRequestNoReasoningWithoutEffort: a request without an effort sends
// no reasoning field on either transport, since non-reasoning models
// reject it with a 400.
func TestRequestNoReasoningWithoutEffort(t *testing.T) {
	t.Parallel()
	for name, b := range map[string]fixture{"chat completions": setup(t), "responses": setupResponses(t)} {
		_, err := b.p.Stream(context.Background(), userRequest("hi"), nil)
		require.NoError(t, err, name)
		body := b.srv.Requests()[0].JSON(t)
		for _, key := range []string{"reasoning_effort", "reasoning", "tools", "max_output_tokens", "max_completion_tokens"} {
			require.NotContains(t, body, key, name)
		}
	}
}

// TestChatChunkShapes: chunks compatible servers send beside OpenAI's own
// are read: Ollama's "reasoning" field, a refusal, a tool call split over
// chunks, usage with its details, and a chunk whose id is a number (the
// plain decoder refuses it; the SDK's lenient one reads it, as before).
func TestChatChunkShapes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.SetDefault(llmtest.Raw(
		`{"id":"c1","object":"chat.completion.chunk","model":"m1","choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning":"Hmm, "},"finish_reason":null}]}`,
		`{"id":7,"object":"chat.completion.chunk","model":"m1","choices":[{"index":0,"delta":{"reasoning_content":"yes."},"finish_reason":null}]}`,
		`{"id":"c1","object":"chat.completion.chunk","model":"m1","choices":[{"index":1,"delta":{"content":"another choice"},"finish_reason":null},{"index":0,"delta":{"content":"Hi","refusal":null},"finish_reason":null}]}`,
		`{"id":7,"object":"chat.completion.chunk","model":"m1","choices":[{"index":0,"delta":{"content":" there"},"finish_reason":null}]}`,
		`{"id":"c1","object":"chat.completion.chunk","model":"m1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"lookup","arguments":"{\"q\":"}}]},"finish_reason":null}]}`,
		`{"id":"c1","object":"chat.completion.chunk","model":"m1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]},"finish_reason":"tool_calls"}],"usage":null}`,
		`{"id":"c1","object":"chat.completion.chunk","model":"m1","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":3,"cache_write_tokens":2},"completion_tokens_details":{"reasoning_tokens":1}}}`,
	))
	var streamed []sdk.ChatMessagePart
	resp, err := b.p.Stream(context.Background(), userRequest("hi"), func(p sdk.ChatMessagePart) { streamed = append(streamed, p) })
	require.NoError(t, err)
	require.Equal(t, []sdk.ChatMessagePart{
		{Type: sdk.PartReasoning, Text: "Hmm, "},
		{Type: sdk.PartReasoning, Text: "yes."},
		{Type: sdk.PartText, Text: "Hi"},
		{Type: sdk.PartText, Text: " there"},
		{Type: sdk.PartToolCall, ToolCallID: "call_a", ToolName: "lookup"},
		{Type: sdk.PartToolCall, ToolCallID: "call_a", ArgsDelta: `{"q":`},
		{Type: sdk.PartToolCall, ToolCallID: "call_a", ArgsDelta: "1}"},
	}, streamed)
	require.Equal(t, "c1", resp.ID)
	require.Equal(t, "m1", resp.Model)
	require.Equal(t, "tool_calls", resp.FinishReason)
	require.Equal(t, llm.Usage{InputTokens: 9, OutputTokens: 4, ReasoningTokens: 1, CacheReadTokens: 3, CacheCreationTokens: 2}, resp.Usage)
	require.Len(t, resp.ToolCalls(), 1)
}

// TestResponsesStreamEvents: the parts of one summary arrive as
// paragraphs; raw reasoning_text deltas (gpt-oss on Ollama, vLLM) are
// reasoning too.
func TestResponsesStreamEvents(t *testing.T) {
	t.Parallel()
	b := setupResponses(t)
	b.srv.SetDefault(llmtest.Raw(
		`{"type":"response.created","sequence_number":0,"response":{"id":"r","status":"in_progress","output":[]}}`,
		`{"type":"response.reasoning_summary_text.delta","sequence_number":1,"item_id":"rs_1","output_index":0,"summary_index":0,"delta":"First."}`,
		`{"type":"response.reasoning_summary_text.delta","sequence_number":2,"item_id":"rs_1","output_index":0,"summary_index":1,"delta":"Second."}`,
		`{"type":"response.reasoning_text.delta","sequence_number":3,"item_id":"rs_2","output_index":1,"content_index":0,"delta":" Raw."}`,
		`{"type":"response.refusal.delta","sequence_number":4,"item_id":"msg_1","output_index":2,"content_index":0,"delta":"No."}`,
		`{"type":"response.completed","sequence_number":5,"response":{"id":"r","status":"completed","output":[],"usage":{"input_tokens":1,"output_tokens":2,"output_tokens_details":{"reasoning_tokens":1},"input_tokens_details":{"cached_tokens":0},"total_tokens":3}}}`,
	))
	resp, err := b.p.Stream(context.Background(), userRequest("hi"), nil)
	require.NoError(t, err)
	require.Equal(t, []sdk.ChatMessagePart{
		{Type: sdk.PartReasoning, Text: "First.\n\nSecond. Raw."},
		{Type: sdk.PartText, Text: "No."},
	}, resp.Parts)
	require.Equal(t, llm.Usage{InputTokens: 1, OutputTokens: 2, ReasoningTokens: 1}, resp.Usage)
}

// TestResponsesCallArgumentsWithoutDeltas: servers that send a function
// call's arguments only in its done events (or only in output_item.done)
// still give complete calls, and arguments are never doubled.
func TestResponsesCallArgumentsWithoutDeltas(t *testing.T) {
	t.Parallel()
	b := setupResponses(t)
	b.srv.SetDefault(llmtest.Raw(
		`{"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"call_a","name":"a","arguments":""}}`,
		`{"type":"response.function_call_arguments.done","item_id":"fc_1","output_index":0,"arguments":"{\"x\":1}"}`,
		`{"type":"response.output_item.done","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"call_a","name":"a","arguments":"{\"x\":1}"}}`,
		`{"type":"response.output_item.done","output_index":1,"item":{"id":"fc_2","type":"function_call","call_id":"call_b","name":"b","arguments":"{\"y\":2}"}}`,
		`{"type":"response.output_item.added","output_index":2,"item":{"id":"fc_3","type":"function_call","call_id":"call_c","name":"c","arguments":""}}`,
		`{"type":"response.function_call_arguments.delta","item_id":"fc_3","output_index":2,"delta":"{\"z\":"}`,
		`{"type":"response.function_call_arguments.delta","item_id":"fc_3","output_index":2,"delta":"3}"}`,
		`{"type":"response.function_call_arguments.done","item_id":"fc_3","output_index":2,"arguments":"{\"z\":3}"}`,
		`{"type":"response.output_item.done","output_index":2,"item":{"id":"fc_3","type":"function_call","call_id":"call_c","name":"c","arguments":"{\"z\":3}"}}`,
		`{"type":"response.completed","response":{"id":"r","status":"completed","output":[],"usage":{"input_tokens":1,"output_tokens":1}}}`,
	))
	resp, err := b.p.Stream(context.Background(), userRequest("hi"), nil)
	require.NoError(t, err)
	require.Equal(t, "tool_calls", resp.FinishReason)
	calls := resp.ToolCalls()
	require.Len(t, calls, 3)
	for i, want := range []struct{ id, name, args string }{
		{"call_a", "a", `{"x":1}`}, {"call_b", "b", `{"y":2}`}, {"call_c", "c", `{"z":3}`},
	} {
		require.Equal(t, want.id, calls[i].ToolCallID)
		require.Equal(t, want.name, calls[i].ToolName)
		require.JSONEq(t, want.args, string(calls[i].Args))
	}
}

func TestResponsesFailed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		code      string
		kind      sdk.ChatErrorKind
		retryable bool
	}{
		{"server_error", sdk.ChatErrorGeneric, true},
		{"rate_limit_exceeded", sdk.ChatErrorRateLimit, true},
		{"invalid_prompt", sdk.ChatErrorConfig, false},
	}
	for _, tc := range cases {
		t.Run(tc.code, func(t *testing.T) {
			t.Parallel()
			b := setupResponses(t)
			b.srv.SetDefault(llmtest.Raw(
				`{"type":"response.created","sequence_number":0,"response":{"id":"r","status":"in_progress","output":[]}}`,
				`{"type":"response.failed","sequence_number":1,"response":{"id":"r","status":"failed","output":[],"error":{"code":"`+tc.code+`","message":"it broke"}}}`,
			))
			_, err := b.p.Stream(context.Background(), userRequest("hi"), nil)
			var e *llm.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, tc.kind, e.Kind)
			require.Equal(t, tc.retryable, e.Retryable)
			require.Equal(t, "it broke", e.Message)
			require.Equal(t, "openai", e.Provider)
		})
	}
}

// TestTransportDefault: with no override the known-model rule picks the
// wire: a known model goes to /v1/responses, any other to Chat
// Completions.
func TestTransportDefault(t *testing.T) {
	t.Parallel()
	resp := llmtest.NewOpenAIResponses(t)
	_, err := openai.New(openai.Config{BaseURL: resp.URL}).Stream(context.Background(), providertest.UserRequest("gpt-5-mini", "hi"), nil)
	require.NoError(t, err)
	require.Equal(t, "/v1/responses", resp.Requests()[0].Path)

	chat := llmtest.NewOpenAI(t)
	_, err = openai.New(openai.Config{BaseURL: chat.URL}).Stream(context.Background(), providertest.UserRequest("llama3.2:3b", "hi"), nil)
	require.NoError(t, err)
	require.Equal(t, "/v1/chat/completions", chat.Requests()[0].Path)
}

// TestWithResponsesAPI: per-model overrides over one provider's client.
func TestWithResponsesAPI(t *testing.T) {
	t.Parallel()
	chat, resp := llmtest.NewOpenAI(t), llmtest.NewOpenAIResponses(t)
	base := openai.New(openai.Config{Name: "acme", BaseURL: chat.URL})
	forced := base.WithResponsesAPI(ptr(true))
	require.False(t, base.UsesResponsesAPI("llama3.2:3b"))
	require.True(t, forced.UsesResponsesAPI("llama3.2:3b"))
	require.True(t, base.UsesResponsesAPI("gpt-5"))
	require.False(t, base.WithResponsesAPI(ptr(false)).UsesResponsesAPI("gpt-5"))
	require.Equal(t, "acme", forced.Name())

	// Both streams go to the base URL of the one client; only the path differs.
	_, err := base.Stream(context.Background(), providertest.UserRequest("llama3.2:3b", "hi"), nil)
	require.NoError(t, err)
	require.Equal(t, "/v1/chat/completions", chat.Requests()[0].Path)
	forcedResp := openai.New(openai.Config{BaseURL: resp.URL}).WithResponsesAPI(ptr(true))
	_, err = forcedResp.Stream(context.Background(), providertest.UserRequest("llama3.2:3b", "hi"), nil)
	require.NoError(t, err)
	require.Equal(t, "/v1/responses", resp.Requests()[0].Path)
}

func TestUsesResponsesAPI(t *testing.T) {
	t.Parallel()
	cases := []struct {
		model    string
		override *bool
		want     bool
	}{
		{"gpt-5", nil, true},
		{"gpt-4.1-mini", nil, true},
		{"o3", nil, true},
		{"o1-pro", nil, true},
		{"GPT-5-MINI", nil, true},
		{"gpt-6-astra", nil, true},
		{"gpt-6-astra-2027-01-15", nil, true}, // a dated snapshot absent from the list
		{"GPT-6-Astra-Preview", nil, true},
		{"gpt-5.9-new-release", nil, false}, // unknown: Chat Completions
		{"gpt-3.5-turbo", nil, false},
		{"gpt-4o-audio-preview", nil, false},
		{"llama3.2:3b", nil, false},
		{"", nil, false},
		{"llama3.2:3b", ptr(true), true},
		{"gpt-5", ptr(false), false},
		{"gpt-6-astra", ptr(false), false},
	}
	for _, tc := range cases {
		name := tc.model
		if tc.override != nil {
			name = fmt.Sprintf("%s override %v", tc.model, *tc.override)
		}
		require.Equal(t, tc.want, openai.UsesResponsesAPI(tc.model, tc.override), name)
	}
}

func TestEmptyAPIKeyIgnoresEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	srv := llmtest.NewOpenAI(t)
	p := openai.New(openai.Config{BaseURL: srv.URL, Name: "ollama"})
	_, err := p.Stream(context.Background(), userRequest("hi"), nil)
	require.NoError(t, err)
	require.NotContains(t, srv.Requests()[0].Header.Get("Authorization"), "sk-from-env")
	require.Equal(t, "ollama", p.Name())
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
