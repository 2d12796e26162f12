package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/llm/anthropic"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/llm/llmtest/providertest"
	"github.com/chatd/chatd/app/sdk"
)

// fixture is what a test needs: the adapter over a fake Anthropic server.
type fixture struct {
	p   *anthropic.Provider
	srv *llmtest.Server
}

func setup(t *testing.T, replies ...llmtest.Reply) fixture {
	t.Helper()
	srv := llmtest.NewAnthropic(t, replies...)
	return fixture{p: anthropic.New(anthropic.Config{APIKey: "sk-ant-test", BaseURL: srv.URL}), srv: srv}
}

func userRequest(text string) llm.Request { return providertest.UserRequest("claude-test", text) }

// TestConformance runs the scenarios every provider adapter shares
// (streaming, tool calls, usage, errors, cancellation) against the fake
// Anthropic server; the tests below are this adapter's own wire mapping.
func TestConformance(t *testing.T) {
	t.Parallel()
	providertest.Run(t, providertest.Adapter{
		Name:      "anthropic",
		Model:     "claude-test",
		NewServer: llmtest.NewAnthropic,
		New: func(url string) llm.Provider {
			return anthropic.New(anthropic.Config{APIKey: "sk-ant-test", BaseURL: url})
		},
		GeneratedCallID: func(n int) string { return fmt.Sprintf("toolu_llmtest_%02d", n) },
		CacheCreation:   true,
		StreamError:     providertest.StreamError{Status: 529, Message: "Overloaded", Kind: sdk.ChatErrorOverloaded},
	})
}

func TestRequestMapping(t *testing.T) {
	t.Parallel()
	b := setup(t)
	req := llm.Request{
		Model: "claude-sonnet-4-5",
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Parts: []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "Be brief."}}},
			{Role: llm.RoleUser, Parts: []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "Weather in Paris and Rome?"}}},
			{Role: llm.RoleAssistant, Parts: []sdk.ChatMessagePart{
				{Type: sdk.PartReasoning, Text: "two calls"},
				{Type: sdk.PartText, Text: "Looking."},
				{Type: sdk.PartToolCall, ToolCallID: "toolu_1", ToolName: "weather", Args: json.RawMessage(`{"city":"Paris"}`)},
				{Type: sdk.PartToolCall, ToolCallID: "toolu_2", ToolName: "weather", Args: json.RawMessage(`{"city":"Rome"}`)},
			}},
			{Role: llm.RoleTool, Parts: []sdk.ChatMessagePart{
				{Type: sdk.PartToolResult, ToolCallID: "toolu_1", ToolName: "weather", Result: json.RawMessage(`{"temp":21}`)},
			}},
			{Role: llm.RoleTool, Parts: []sdk.ChatMessagePart{
				{Type: sdk.PartToolResult, ToolCallID: "toolu_2", ToolName: "weather", Result: json.RawMessage(`"station offline"`), IsError: true},
			}},
			{Role: llm.RoleUser, Parts: []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "And tomorrow?"}}},
		},
		Tools: []llm.Tool{
			{Name: "weather", Description: "Current weather", InputSchema: json.RawMessage(
				`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)},
			{Name: "now"},
		},
	}
	_, err := b.p.Stream(context.Background(), req, nil)
	require.NoError(t, err)

	reqs := b.srv.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "/v1/messages", reqs[0].Path)
	require.Equal(t, "sk-ant-test", reqs[0].Header.Get("X-Api-Key"))
	require.Equal(t, "Bearer sk-ant-test", reqs[0].Header.Get("Authorization"))
	require.NotEmpty(t, reqs[0].Header.Get("Anthropic-Version"))
	body := reqs[0].JSON(t)
	require.Equal(t, "claude-sonnet-4-5", body["model"])
	require.Equal(t, true, body["stream"])
	require.EqualValues(t, anthropic.DefaultMaxTokens, body["max_tokens"])
	require.NotContains(t, body, "thinking")
	require.JSONEq(t, `[{"type":"text","text":"Be brief."}]`, marshal(t, body["system"]))
	require.JSONEq(t, `[
		{"role":"user","content":[{"type":"text","text":"Weather in Paris and Rome?"}]},
		{"role":"assistant","content":[
			{"type":"text","text":"Looking."},
			{"type":"tool_use","id":"toolu_1","name":"weather","input":{"city":"Paris"}},
			{"type":"tool_use","id":"toolu_2","name":"weather","input":{"city":"Rome"}}
		]},
		{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"{\"temp\":21}"}]},
			{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"station offline"}],"is_error":true},
			{"type":"text","text":"And tomorrow?"}
		]}
	]`, marshal(t, body["messages"]))
	require.JSONEq(t, `[
		{"name":"weather","description":"Current weather","input_schema":{
			"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}},
		{"name":"now","input_schema":{"type":"object","properties":{}}}
	]`, marshal(t, body["tools"]))
}

func TestRequestReasoningEffort(t *testing.T) {
	t.Parallel()
	user := []llm.Message{{Role: llm.RoleUser, Parts: []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "hi"}}}}
	toolLoop := append(append([]llm.Message(nil), user...),
		llm.Message{Role: llm.RoleAssistant, Parts: []sdk.ChatMessagePart{{Type: sdk.PartToolCall, ToolCallID: "toolu_1", ToolName: "now"}}},
		llm.Message{Role: llm.RoleTool, Parts: []sdk.ChatMessagePart{{Type: sdk.PartToolResult, ToolCallID: "toolu_1", Result: json.RawMessage(`"noon"`)}}},
	)
	cases := []struct {
		name, model, effort string
		msgs                []llm.Message
		maxOutput           int
		thinking            string // JSON, "" = absent
		outputConfig        string // JSON, "" = absent
		maxTokens           int
	}{
		{name: "budget low", model: "claude-sonnet-4-5-20250929", effort: "low", msgs: user,
			thinking: `{"type":"enabled","budget_tokens":2048}`, maxTokens: 8192},
		{name: "budget high raises max_tokens", model: "claude-3-7-sonnet-20250219", effort: "high", msgs: user,
			thinking: `{"type":"enabled","budget_tokens":16384}`, maxTokens: 16384 + 8192},
		{name: "budget with own cap", model: "claude-sonnet-4-20250514", effort: "minimal", msgs: user, maxOutput: 4000,
			thinking: `{"type":"enabled","budget_tokens":1024}`, maxTokens: 4000},
		{name: "adaptive", model: "claude-opus-4-6", effort: "high", msgs: user,
			thinking: `{"type":"adaptive","display":"summarized"}`, outputConfig: `{"effort":"high"}`, maxTokens: 8192},
		{name: "adaptive minimal is low", model: "claude-sonnet-5", effort: "minimal", msgs: user,
			thinking: `{"type":"adaptive","display":"summarized"}`, outputConfig: `{"effort":"low"}`, maxTokens: 8192},
		{name: "none", model: "claude-opus-4-6", effort: "none", msgs: user, maxTokens: 8192},
		{name: "tool loop continuation", model: "claude-sonnet-4-5", effort: "high", msgs: toolLoop, maxTokens: 8192},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			_, err := b.p.Stream(context.Background(), llm.Request{
				Model: tc.model, ReasoningEffort: tc.effort, Messages: tc.msgs, MaxOutputTokens: tc.maxOutput,
			}, nil)
			require.NoError(t, err)
			body := b.srv.Requests()[0].JSON(t)
			require.EqualValues(t, tc.maxTokens, body["max_tokens"])
			if tc.thinking == "" {
				require.NotContains(t, body, "thinking")
			} else {
				require.JSONEq(t, tc.thinking, marshal(t, body["thinking"]))
			}
			if tc.outputConfig == "" {
				require.NotContains(t, body, "output_config")
			} else {
				require.JSONEq(t, tc.outputConfig, marshal(t, body["output_config"]))
			}
		})
	}
}

func TestConfigMaxTokens(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewAnthropic(t)
	p := anthropic.New(anthropic.Config{BaseURL: srv.URL, MaxTokens: 1000})
	_, err := p.Stream(context.Background(), userRequest("hi"), nil)
	require.NoError(t, err)
	require.EqualValues(t, 1000, srv.Requests()[0].JSON(t)["max_tokens"])
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
