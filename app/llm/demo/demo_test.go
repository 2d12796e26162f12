package demo_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/llm/demo"
	"github.com/chatd/chatd/app/sdk"
)

func newDemo() *demo.Provider { return demo.New(demo.Config{TokenDelay: demo.NoDelay}) }

func user(text string) llm.Message {
	return llm.Message{Role: llm.RoleUser, Parts: []sdk.ChatMessagePart{{Type: sdk.PartText, Text: text}}}
}

var weather = llm.Tool{
	Name:        "get_weather",
	Description: "Current weather of a city",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}`),
}

func stream(t *testing.T, p *demo.Provider, req llm.Request) (llm.Response, []sdk.ChatMessagePart) {
	t.Helper()
	var parts []sdk.ChatMessagePart
	resp, err := p.Stream(context.Background(), req, func(part sdk.ChatMessagePart) { parts = append(parts, part) })
	require.NoError(t, err)
	return resp, parts
}

func text(resp llm.Response) string {
	var b strings.Builder
	for _, p := range resp.Parts {
		if p.Type == sdk.PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func TestDeterministic(t *testing.T) {
	t.Parallel()
	req := llm.Request{Model: "demo", Messages: []llm.Message{user("Explain goroutines, please.")}}
	r1, d1 := stream(t, newDemo(), req)
	r2, d2 := stream(t, newDemo(), req)
	require.Equal(t, r1, r2)
	require.Equal(t, d1, d2)

	r3, _ := stream(t, newDemo(), llm.Request{Model: "demo", Messages: []llm.Message{user("Something else entirely")}})
	require.NotEqual(t, text(r1), text(r3))
	require.Equal(t, "demo", newDemo().Name())
}

func TestStreamsMarkdownTokenByToken(t *testing.T) {
	t.Parallel()
	prompt := "How do I reverse a slice in Go?"
	resp, deltas := stream(t, newDemo(), llm.Request{Messages: []llm.Message{user(prompt)}})

	require.Greater(t, len(deltas), 20, "streamed word by word")
	var joined strings.Builder
	for _, d := range deltas {
		require.Equal(t, sdk.PartText, d.Type)
		require.NotEmpty(t, d.Text)
		joined.WriteString(d.Text)
	}
	require.Len(t, resp.Parts, 1)
	out := text(resp)
	require.Equal(t, out, joined.String())
	require.Contains(t, out, "> "+prompt)
	require.Contains(t, out, "\n- ")
	require.Contains(t, out, "\n```")
	require.Equal(t, "stop", resp.FinishReason)
	require.Empty(t, resp.ToolCalls())

	require.EqualValues(t, 8, resp.Usage.InputTokens)
	require.EqualValues(t, len(strings.Fields(out)), resp.Usage.OutputTokens)
}

func TestEmptyPrompt(t *testing.T) {
	t.Parallel()
	resp, _ := stream(t, newDemo(), llm.Request{Messages: []llm.Message{user("  ")}})
	require.Contains(t, text(resp), "demo model")
}

func TestReasoningWithEffort(t *testing.T) {
	t.Parallel()
	resp, deltas := stream(t, newDemo(), llm.Request{ReasoningEffort: "high", Messages: []llm.Message{user("hi there")}})
	require.Equal(t, sdk.PartReasoning, deltas[0].Type)
	require.Equal(t, sdk.PartReasoning, resp.Parts[0].Type)
	require.Equal(t, sdk.PartText, resp.Parts[1].Type)
}

func TestToolCallRoundTrip(t *testing.T) {
	t.Parallel()
	p := newDemo()
	req := llm.Request{
		Tools:    []llm.Tool{weather},
		Messages: []llm.Message{user(`/tool get_weather {"city": "Paris"}`)},
	}
	resp, deltas := stream(t, p, req)
	require.Equal(t, "tool_calls", resp.FinishReason)
	calls := resp.ToolCalls()
	require.Len(t, calls, 1)
	require.Equal(t, "get_weather", calls[0].ToolName)
	require.JSONEq(t, `{"city":"Paris"}`, string(calls[0].Args))
	require.True(t, strings.HasPrefix(calls[0].ToolCallID, "call_demo_"))

	// The call streams like a real model's: a start with id and name, then
	// argument pieces.
	var start int
	for i, d := range deltas {
		if d.Type == sdk.PartToolCall {
			start = i
			break
		}
	}
	require.Equal(t, sdk.ChatMessagePart{Type: sdk.PartToolCall, ToolCallID: calls[0].ToolCallID, ToolName: "get_weather"}, deltas[start])
	var args strings.Builder
	for _, d := range deltas[start+1:] {
		require.Equal(t, calls[0].ToolCallID, d.ToolCallID)
		args.WriteString(d.ArgsDelta)
	}
	require.Greater(t, len(deltas)-start-1, 1, "args arrive in pieces")
	require.JSONEq(t, `{"city":"Paris"}`, args.String())

	// Same request, same call id: retries stay idempotent.
	again, _ := stream(t, p, req)
	require.Equal(t, calls[0].ToolCallID, again.ToolCalls()[0].ToolCallID)

	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, Parts: resp.Parts},
		llm.Message{Role: llm.RoleTool, Parts: []sdk.ChatMessagePart{{
			Type: sdk.PartToolResult, ToolCallID: calls[0].ToolCallID, ToolName: "get_weather",
			Result: json.RawMessage(`{"temp_c":21,"sky":"clear"}`),
		}}},
	)
	final, _ := stream(t, p, req)
	require.Equal(t, "stop", final.FinishReason)
	require.Empty(t, final.ToolCalls())
	out := text(final)
	require.Contains(t, out, "`get_weather` returned")
	require.Contains(t, out, `"temp_c": 21`)
}

func TestToolErrorResult(t *testing.T) {
	t.Parallel()
	resp, _ := stream(t, newDemo(), llm.Request{Messages: []llm.Message{
		user("/tool get_weather {}"),
		{Role: llm.RoleAssistant, Parts: []sdk.ChatMessagePart{{Type: sdk.PartToolCall, ToolCallID: "c1", ToolName: "get_weather"}}},
		{Role: llm.RoleTool, Parts: []sdk.ChatMessagePart{{Type: sdk.PartToolResult, ToolCallID: "c1", ToolName: "get_weather", Result: json.RawMessage(`"no such city"`), IsError: true}}},
	}})
	require.Contains(t, text(resp), "`get_weather` failed")
	require.Contains(t, text(resp), "no such city")
}

func TestParallelToolDirectives(t *testing.T) {
	t.Parallel()
	now := llm.Tool{Name: "now"}
	resp, _ := stream(t, newDemo(), llm.Request{
		Tools:    []llm.Tool{weather, now},
		Messages: []llm.Message{user("/tool get_weather {\"city\":\"Oslo\"} and /tool now")},
	})
	calls := resp.ToolCalls()
	require.Len(t, calls, 2)
	require.Equal(t, "get_weather", calls[0].ToolName)
	require.JSONEq(t, `{"city":"Oslo"}`, string(calls[0].Args))
	require.Equal(t, "now", calls[1].ToolName)
	require.JSONEq(t, `{}`, string(calls[1].Args))
	require.NotEqual(t, calls[0].ToolCallID, calls[1].ToolCallID)
}

func TestToolMention(t *testing.T) {
	t.Parallel()
	prompt := "Could you use GET_WEATHER for Rome?"
	resp, _ := stream(t, newDemo(), llm.Request{Tools: []llm.Tool{weather}, Messages: []llm.Message{user(prompt)}})
	calls := resp.ToolCalls()
	require.Len(t, calls, 1)
	require.Equal(t, "get_weather", calls[0].ToolName)
	require.JSONEq(t, `{"city":"`+prompt+`"}`, string(calls[0].Args))

	// Part of a longer word is no mention.
	resp, _ = stream(t, newDemo(), llm.Request{Tools: []llm.Tool{weather}, Messages: []llm.Message{user("my get_weathers helper")}})
	require.Empty(t, resp.ToolCalls())
}

func TestToolDirectiveProblems(t *testing.T) {
	t.Parallel()
	resp, _ := stream(t, newDemo(), llm.Request{Tools: []llm.Tool{weather}, Messages: []llm.Message{user("/tool nope {}")}})
	require.Empty(t, resp.ToolCalls())
	require.Contains(t, text(resp), "no tool named `nope`")
	require.Contains(t, text(resp), "`get_weather`")

	resp, _ = stream(t, newDemo(), llm.Request{Tools: []llm.Tool{weather}, Messages: []llm.Message{user("/tool get_weather {broken")}})
	require.Empty(t, resp.ToolCalls())
	require.Contains(t, text(resp), "not a JSON object")
}

func TestErrorTrigger(t *testing.T) {
	t.Parallel()
	cases := []struct {
		kind      sdk.ChatErrorKind
		retryable bool
		status    int
	}{
		{sdk.ChatErrorRateLimit, true, 429},
		{sdk.ChatErrorOverloaded, true, 529},
		{sdk.ChatErrorTimeout, true, 504},
		{sdk.ChatErrorGeneric, true, 500},
		{sdk.ChatErrorAuth, false, 401},
		{sdk.ChatErrorConfig, false, 400},
		{sdk.ChatErrorContentFilter, false, 0},
	}
	for _, tc := range cases {
		t.Run(string(tc.kind), func(t *testing.T) {
			t.Parallel()
			var parts []sdk.ChatMessagePart
			_, err := newDemo().Stream(context.Background(), llm.Request{Messages: []llm.Message{user("please /error " + string(tc.kind))}},
				func(p sdk.ChatMessagePart) { parts = append(parts, p) })
			var e *llm.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, tc.kind, e.Kind)
			require.Equal(t, tc.retryable, e.Retryable)
			require.Equal(t, tc.status, e.StatusCode)
			require.Equal(t, "demo", e.Provider)
			require.Empty(t, parts)
		})
	}
}

func TestErrorTriggerRecovers(t *testing.T) {
	t.Parallel()
	p := newDemo()
	req := llm.Request{Messages: []llm.Message{user("/error overloaded 2")}}
	for range 2 {
		_, err := p.Stream(context.Background(), req, nil)
		var e *llm.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, sdk.ChatErrorOverloaded, e.Kind)
	}
	resp, err := p.Stream(context.Background(), req, nil)
	require.NoError(t, err)
	require.Contains(t, text(resp), "failed 2 times on purpose")
}

func TestCancelWhileStreaming(t *testing.T) {
	t.Parallel()
	p := demo.New(demo.Config{}) // default per-token delay
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var n int
	resp, err := p.Stream(ctx, llm.Request{Messages: []llm.Message{user("a long enough prompt")}}, func(sdk.ChatMessagePart) {
		n++
		cancel()
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 1, n)
	require.Len(t, resp.Parts, 1, "what streamed before the cancel is kept")
}

// TestToolImageResult: the demo answer shows a tool's image block without
// its base64 data, and says it was given one.
func TestToolImageResult(t *testing.T) {
	t.Parallel()
	resp, _ := stream(t, newDemo(), llm.Request{Messages: []llm.Message{
		user("/tool snap {}"),
		{Role: llm.RoleAssistant, Parts: []sdk.ChatMessagePart{{Type: sdk.PartToolCall, ToolCallID: "c1", ToolName: "snap"}}},
		{Role: llm.RoleTool, Parts: []sdk.ChatMessagePart{{Type: sdk.PartToolResult, ToolCallID: "c1", ToolName: "snap",
			Result: json.RawMessage(`{"content":[{"type":"text","text":"a pixel"},{"type":"image","mimeType":"image/png","bytes":3,"data":"UE5HZGF0YQ=="}]}`)}}},
	}})
	out := text(resp)
	require.Contains(t, out, "a pixel")
	require.NotContains(t, out, "UE5HZGF0YQ==")
	require.Contains(t, out, "an image block (image/png, 12 bytes of base64)")
}
