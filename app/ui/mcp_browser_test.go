package ui_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
)

// mcpEverything serves an in-process MCP server over Streamable HTTP with
// one tool per effect class, each told by its annotations: echo reads only
// (pure), add is idempotent, note has no hints (effectful).
func mcpEverything(t *testing.T) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "everything", Version: "1.0.0"}, nil)
	type echoIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echoes the text back", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	type addIn struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "add", Description: "Adds two numbers", Annotations: &mcp.ToolAnnotations{IdempotentHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sum"}}}, nil, nil
		})
	type noteIn struct {
		Note string `json:"note"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "note", Description: "Files a note"},
		func(_ context.Context, _ *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "filed"}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	return hs.URL
}

// closedPortURL is the address of a port nothing listens on: a server
// there fails to connect.
func closedPortURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return "http://" + addr + "/mcp"
}

// The MCP side of the UI against real MCP servers: an in-process go-sdk
// server ("everything"), one that cannot be reached ("offline") and one
// the configuration disables ("archive").
func TestBrowserMCP(t *testing.T) {
	mcpConfig, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"url": mcpEverything(t)},
		"offline":    map[string]any{"url": closedPortURL(t)},
		"archive":    map[string]any{"url": closedPortURL(t), "disabled": true},
	}})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(path, mcpConfig, 0o600))
	b := startBrowserWith(t, func(cfg *config.Config) { cfg.MCPConfig = path })

	servers, err := b.api.MCPServers(b.ctx)
	require.NoError(t, err)
	ids := map[string]uuid.UUID{}
	for _, s := range servers {
		ids[s.Name] = s.ID
	}
	require.Len(t, ids, 3)

	// server is the popover's section of the named server.
	server := func(name string) string {
		return `document.querySelector('.tools-popover:not([hidden]) .mcp-server[data-server="` + name + `"]')`
	}
	switchOf := func(name string) string { return server(name) + `?.querySelector('.switch')` }
	checked := func(name string, on bool) string {
		want := "false"
		if on {
			want = "true"
		}
		// aria-disabled is set while the change is in flight.
		return switchOf(name) + `?.getAttribute('aria-checked') === '` + want + `' && !` + switchOf(name) + `.hasAttribute('aria-disabled')`
	}
	click := func(css string) {
		b.t.Helper()
		b.click(css)
	}
	openTools := func() {
		b.t.Helper()
		b.waitJS("the tools button", `document.querySelector('.tools-btn') && !document.querySelector('.tools-btn').hidden`)
		click(".tools-btn")
		b.waitJS("the tools popover", `document.querySelector('.tools-popover:not([hidden]) .mcp-server')`)
	}
	chatServers := func(id uuid.UUID) []uuid.UUID {
		b.t.Helper()
		c, err := b.api.Chat(b.ctx, id)
		require.NoError(b.t, err)
		return c.MCPServerIDs
	}
	chatID := func() uuid.UUID {
		b.t.Helper()
		b.waitJS("a chat page", `/^\/chats\/[0-9a-f-]{36}$/.test(location.pathname)`)
		return uuid.MustParse(eval[string](b, `location.pathname.slice('/chats/'.length)`))
	}

	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)

	t.Run("the tools popover lists the servers and their tools", func(t *testing.T) {
		b.t = t
		openTools()
		b.waitJS("everything connected with its three tools", server("everything")+`?.querySelector('.mcp-state').textContent === 'Connected' && `+
			server("everything")+`.querySelectorAll('.mcp-tool').length === 3`)
		require.Equal(t, []string{"add idempotent", "echo pure", "note effectful"}, eval[[]string](b,
			`[...`+server("everything")+`.querySelectorAll('.mcp-tool-head')].map(e => e.querySelector('.mcp-tool-name').textContent + ' ' + e.querySelector('.effect').textContent).sort()`))
		require.Contains(t, eval[string](b, server("everything")+`.textContent`), "Echoes the text back", "descriptions are shown")
		require.Contains(t, eval[string](b, `[...`+server("everything")+`.querySelectorAll('.effect-effectful')][0].title`), "never run again",
			"the badge says what the class means after a crash")
		b.waitJS("offline failed, with its error", server("offline")+`?.querySelector('.mcp-state').textContent === 'Failed' && `+
			server("offline")+`.querySelector('.mcp-error')?.textContent.length > 0`)
		b.waitJS("archive disabled", server("archive")+`?.querySelector('.mcp-state').textContent === 'Disabled' && `+
			server("archive")+`.querySelector('.mcp-note')?.textContent.includes('Turned off')`)
		b.waitJS("every server on for a new chat", checked("everything", true)+` && `+checked("offline", true)+` && `+checked("archive", true))
		b.shot("30-mcp-popover")

		// The keyboard: focus starts on the first switch, Escape closes and
		// gives the focus back to the button, Enter opens it again.
		require.True(t, eval[bool](b, `document.activeElement === document.querySelector('.tools-popover .switch')`))
		b.do(chromedp.KeyEvent("\x1b"))
		b.waitJS("the closed popover, focus on its button", `document.querySelector('.tools-popover').hidden && document.activeElement === document.querySelector('.tools-btn')`)
		require.Equal(t, "false", eval[string](b, `document.querySelector('.tools-btn').getAttribute('aria-expanded')`))
		b.do(chromedp.KeyEvent("\r"))
		b.waitJS("the popover opened from the keyboard", `!document.querySelector('.tools-popover').hidden`)
		// A click elsewhere closes it.
		click(".chat-header .chat-title-h")
		b.waitJS("the popover closed by an outside click", `document.querySelector('.tools-popover').hidden`)
	})

	t.Run("a new chat without one server calls an MCP tool", func(t *testing.T) {
		b.t = t
		openTools()
		click(`.mcp-server[data-server="offline"] .switch`)
		b.waitJS("offline switched off", checked("offline", false)+` && `+checked("everything", true))
		click(".chat-header .chat-title-h")
		b.typeAndSend(`/tool everything__echo {"text": "hello from MCP"}`)
		id := chatID()
		b.waitJS("the MCP tool card", jsIdle+` && document.querySelector('.tool-card .state-ok') && [...document.querySelectorAll('.thread .msg-assistant')].some(e => e.textContent.includes('echo: hello from MCP'))`)
		require.Equal(t, "everything · echo", eval[string](b, `(() => { const l = document.querySelector('.tool-card .tool-label');
			return l.querySelector('.tool-server').textContent + l.querySelector('.tool-sep').textContent + l.querySelector('.tool-name').textContent; })()`))
		require.Equal(t, "pure", eval[string](b, `document.querySelector('.tool-card .effect').textContent`))
		require.Contains(t, eval[string](b, `document.querySelector('.tool-card .effect').title`), "runs again")
		require.ElementsMatch(t, []uuid.UUID{ids["everything"], ids["archive"]}, chatServers(id), "the create carried the servers left on")
		require.False(t, eval[bool](b, `!!document.querySelector('.mcp-notice')`), "offline is not this chat's server")
		b.click(".tool-card .tool-section summary")
		b.shot("31-mcp-tool-card")
	})

	t.Run("a failed server's notice; a switch survives a reload", func(t *testing.T) {
		b.t = t
		chat, err := b.api.CreateChat(b.ctx, sdk.CreateChatRequest{Title: "Every MCP server"})
		require.NoError(t, err)
		require.Nil(t, chat.MCPServerIDs, "a chat created without mcp_server_ids uses every server")
		b.do(chromedp.Navigate(b.base + "/chats/" + chat.ID.String()))
		b.waitJS("the notice of the failed server", `document.querySelector('.mcp-notice[data-server="offline"]')?.textContent.includes('MCP server offline is unavailable: its tools are left out.')`)
		require.NotEmpty(t, eval[string](b, `document.querySelector('.mcp-notice .banner-detail').textContent`), "the notice carries the last error")
		require.Equal(t, 1, eval[int](b, `document.querySelectorAll('.mcp-notice').length`), "a disabled server is no failure")
		b.shot("32-mcp-notice")

		// The notice does not block the composer.
		b.typeAndSend("Still works without the offline server")
		b.waitJS("the reply", jsIdle+` && document.querySelectorAll('.thread .msg-assistant').length === 1`)

		openTools()
		click(`.mcp-server[data-server="everything"] .switch`)
		b.waitJS("everything switched off", checked("everything", false))
		require.ElementsMatch(t, []uuid.UUID{ids["offline"], ids["archive"]}, chatServers(chat.ID), "the PATCH sent the others")
		b.do(chromedp.Reload())
		openTools()
		b.waitJS("everything still off after the reload", checked("everything", false)+` && `+checked("offline", true))
		b.waitJS("the notice still there", `document.querySelector('.mcp-notice[data-server="offline"]')`)

		click(`.mcp-server[data-server="everything"] .switch`)
		b.waitJS("everything on again", checked("everything", true))
		require.Nil(t, chatServers(chat.ID), "every server on again is null: every server")
		click(`.mcp-server[data-server="offline"] .switch`)
		b.waitJS("offline off", checked("offline", false))
		b.waitJS("the notice gone with its server", `!document.querySelector('.mcp-notice')`)
		require.ElementsMatch(t, []uuid.UUID{ids["everything"], ids["archive"]}, chatServers(chat.ID))

		// A phone-width screen.
		b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
		b.waitJS("the popover within the screen", `(() => { const r = document.querySelector('.tools-popover').getBoundingClientRect(); return r.left >= 0 && r.right <= innerWidth && r.top >= 0; })()`)
		b.shot("33-mcp-popover-narrow")
		b.scheme("dark")
		b.shot("34-mcp-popover-narrow-dark")
		b.scheme("light")
		b.do(chromedp.KeyEvent("\x1b"))
		b.waitJS("the closed popover", `document.querySelector('.tools-popover').hidden`)
		b.do(chromedp.EmulateViewport(1280, 860))
	})

	b.t = t
	b.checkNoProblems()
}
