package ui_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/config"
)

// mcpAsker is an in-process MCP server whose "ask" tool asks the person
// for a form (a name with a default, a required age) and returns the
// answer it got.
func mcpAsker(t *testing.T) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1.0.0"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{
		"name":{"type":"string","title":"Name","default":"Ann"},
		"age":{"type":"integer","title":"Age","description":"In years"}},"required":["age"]}`)
	srv.AddTool(&mcp.Tool{Name: "ask", Description: "Asks who you are", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Who are you?", RequestedSchema: schema})
			if err != nil {
				return nil, err
			}
			out, _ := json.Marshal(map[string]any{"action": res.Action, "content": res.Content})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "answer " + string(out)}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(func() {
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
		hs.CloseClientConnections()
		hs.Close()
	})
	return hs.URL
}

// The question card: a server's question shows as a form the moment it is
// asked and again after a reload, both from the chat's stream (the page
// never polls GET /elicitations); a missing required field is refused in
// the card; Submit sends the answer (the left-out name gets its default)
// and the card goes; Decline answers "decline".
func TestBrowserElicitation(t *testing.T) {
	mcpConfig, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"asker": map[string]any{"url": mcpAsker(t)}}})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(path, mcpConfig, 0o600))
	b := startBrowserWith(t, func(cfg *config.Config) { cfg.MCPConfig = path })

	const card = `document.querySelector('.elicitation-card')`
	field := func(title string) string {
		return `[...` + card + `.querySelectorAll('.elicitation-field')].find(l => l.querySelector('.elicitation-label').textContent.startsWith('` + title + `')).querySelector('input')`
	}
	const polled = `performance.getEntriesByType('resource').some(e => e.name.includes('/elicitations'))`
	newChat := func() {
		b.t.Helper()
		b.do(chromedp.Navigate(b.base + "/"))
		b.waitJS("the new-chat page", `location.pathname === '/' && document.querySelector('.hero')`)
		b.waitJS("the MCP server connected", `document.querySelector('.tools-btn') && !document.querySelector('.tools-btn').hidden`)
		b.typeAndSend(`/tool asker__ask {}`)
		b.waitJS("a chat page", `/^\/chats\/[0-9a-f-]{36}$/.test(location.pathname)`)
	}

	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)

	t.Run("submit", func(t *testing.T) {
		b.t = t
		newChat()
		b.waitJS("the question card", card+` && `+card+`.querySelectorAll('.elicitation-field').length === 2`)
		require.Equal(t, "Who are you?", eval[string](b, card+`.querySelector('.elicitation-message').textContent`))
		require.Equal(t, "asker asks", eval[string](b, card+`.querySelector('.action-head').textContent`))
		require.Equal(t, "default: Ann", eval[string](b, field("Name")+`.placeholder`))
		require.Equal(t, "Waiting for your answer", eval[string](b, `document.querySelector('.status-line').textContent`))
		b.shot("50-elicitation-card")

		b.do(chromedp.Reload())
		b.waitJS("the card after a reload", card+` && `+card+`.querySelectorAll('.elicitation-field').length === 2`)
		require.False(t, eval[bool](b, polled), "the card comes from the stream, not a poll")

		b.click(`.elicitation-card .elicitation-accept`)
		b.waitJS("the refusal in the card", card+`.querySelector('.elicitation-error').textContent === 'Age is required.'`)
		eval[chromedp.Void](b, `(() => { const el = `+field("Age")+`; el.value = '41'; el.dispatchEvent(new Event('input', {bubbles: true})); })()`)
		b.click(`.elicitation-card .elicitation-accept`)
		b.waitJS("the answer reached the server, the card gone", jsIdle+` && !`+card+
			` && [...document.querySelectorAll('.thread .msg-assistant')].some(e => e.textContent.includes('"age":41') && e.textContent.includes('"name":"Ann"'))`)
		require.False(t, eval[bool](b, polled), "no poll")
	})

	t.Run("decline", func(t *testing.T) {
		b.t = t
		newChat()
		b.waitJS("the question card", card)
		b.click(`.elicitation-card .elicitation-decline`)
		b.waitJS("declined, the card gone", jsIdle+` && !`+card+
			` && [...document.querySelectorAll('.thread .msg-assistant')].some(e => e.textContent.includes('"action":"decline"'))`)
	})

	b.t = t
	b.checkNoProblems()
}
