package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/tools"
)

// elicitFunc is an Elicitor whose answers a test scripts.
type elicitFunc func(ctx context.Context, q Elicitation) (ElicitationAnswer, error)

func (f elicitFunc) Elicit(ctx context.Context, q Elicitation) (ElicitationAnswer, error) {
	return f(ctx, q)
}

// askingServer is a Streamable HTTP MCP server whose "ask" tool asks the
// client a form question with defaults (SEP-1034) and returns the answer
// it got, and whose "visit" tool asks a URL question.
func askingServer(t *testing.T) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "asking", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{
		"name":{"type":"string","default":"Ann"},
		"age":{"type":"integer","default":30},
		"tier":{"type":"string","enum":["free","pro"],"default":"pro"}}}`)
	srv.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Who are you?", RequestedSchema: schema})
			if err != nil {
				return nil, err
			}
			out, _ := json.Marshal(map[string]any{"action": res.Action, "content": res.Content})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "visit", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "url", Message: "Sign in", URL: "https://example.com/sign-in", ElicitationID: "e1"})
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

func newElicitingManager(t *testing.T, url string, e Elicitor) *Manager {
	t.Helper()
	m := NewManager(Config{Servers: []Server{{Name: "ask", ID: ServerID("ask"), URL: url, Timeout: DefaultTimeout}}}, Options{Elicitor: e})
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	return m
}

// A form question reaches the Elicitor for the chat and call that ran the
// tool; an accepted answer that leaves fields out gets the schema's
// defaults on the way back to the server.
func TestElicitationFormGoesToTheCallingChat(t *testing.T) {
	t.Parallel()
	chat := uuid.New()
	asked := make(chan Elicitation, 1)
	m := newElicitingManager(t, askingServer(t), elicitFunc(func(_ context.Context, q Elicitation) (ElicitationAnswer, error) {
		asked <- q
		return ElicitationAnswer{Action: "accept", Content: map[string]any{"name": "Bo"}}, nil
	}))
	ctx := tools.WithCall(t.Context(), tools.Call{ChatID: chat, ToolCallID: "call-7"})
	out, err := find(t, m.Tools(ctx, anAdmin, nil), "ask__ask").Run(ctx, json.RawMessage(`{}`))
	require.NoError(t, err)
	q := <-asked
	require.Equal(t, chat, q.ChatID)
	require.Equal(t, "call-7", q.ToolCallID)
	require.Equal(t, "ask", q.Server)
	require.Equal(t, "form", q.Mode)
	require.Equal(t, "Who are you?", q.Message)
	require.Contains(t, string(q.Schema), `"default":"pro"`)
	var got struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	var text string
	require.NoError(t, json.Unmarshal(out, &text))
	require.NoError(t, json.Unmarshal([]byte(text), &got))
	require.Equal(t, "accept", got.Action)
	require.Equal(t, map[string]any{"name": "Bo", "age": float64(30), "tier": "pro"}, got.Content)
}

// A URL question carries its URL; a declined answer reaches the server.
func TestElicitationURLDeclined(t *testing.T) {
	t.Parallel()
	m := newElicitingManager(t, askingServer(t), elicitFunc(func(_ context.Context, q Elicitation) (ElicitationAnswer, error) {
		if q.Mode != "url" || q.URL != "https://example.com/sign-in" {
			return ElicitationAnswer{}, fmt.Errorf("unexpected question %+v", q)
		}
		return ElicitationAnswer{Action: "decline"}, nil
	}))
	ctx := tools.WithCall(t.Context(), tools.Call{ChatID: uuid.New(), ToolCallID: "c"})
	out, err := find(t, m.Tools(ctx, anAdmin, nil), "ask__visit").Run(ctx, json.RawMessage(`{}`))
	require.NoError(t, err)
	require.JSONEq(t, `"decline"`, string(out))
}

// A question that comes with no chat call running (here: a call without
// a chat) is cancelled without asking anyone.
func TestElicitationWithoutAChatIsCancelled(t *testing.T) {
	t.Parallel()
	m := newElicitingManager(t, askingServer(t), elicitFunc(func(context.Context, Elicitation) (ElicitationAnswer, error) {
		return ElicitationAnswer{}, fmt.Errorf("nobody should be asked")
	}))
	out, err := find(t, m.Tools(t.Context(), anAdmin, nil), "ask__ask").Run(t.Context(), json.RawMessage(`{}`))
	require.NoError(t, err)
	require.Contains(t, string(out), `cancel`)
}
