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
	return fixture{p: openai.New(openai.Config{APIKey: "sk-test", BaseURL: srv.URL}), srv: srv}
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

func TestRequestMapping(t *testing.T) {
	t.Parallel()
	b := setup(t)
	req := llm.Request{
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
	_, err := b.p.Stream(context.Background(), req, nil)
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
