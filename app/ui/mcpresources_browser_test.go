package ui_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/mcp/mcptest"
	"github.com/chatd/chatd/app/sdk"
)

// "From MCP server…" against the reference server-everything (npm, over
// stdio): the panel lists its resources, templates and prompts; picking a
// static document attaches it as a file, a template asks for its variable
// and attaches the resource it names, and a prompt asks for its arguments
// (a missing required one shows the server's refusal) and puts its text in
// the composer. The sent message holds both files and the prompt's text.
// At desktop and phone widths, in both themes.
func TestBrowserMCPResourcesAndPrompts(t *testing.T) {
	everything := mcptest.NPMServer(t, "server-everything")
	mcpConfig, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": "node", "args": []string{everything, "stdio"}},
	}})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(path, mcpConfig, 0o600))
	b := startBrowserWith(t, func(cfg *config.Config) { cfg.MCPConfig = path })

	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)
	open := func() {
		b.t.Helper()
		b.waitJS("the MCP button", `document.querySelector('.mcp-pick-btn') && !document.querySelector('.mcp-pick-btn').hidden`)
		b.click(".mcp-pick-btn")
		b.waitJS("the resources and prompts", `document.querySelectorAll('.mcp-picker:not([hidden]) .mcp-pick-item.resource').length > 0 &&
			document.querySelectorAll('.mcp-picker:not([hidden]) .mcp-pick-item.prompt').length > 0`)
	}

	// A static document: attached as a file.
	open()
	for _, v := range everyView {
		b.at(v)
		b.checkLayout(v, ".mcp-picker .mcp-pick-item.resource .mcp-pick-name", ".mcp-picker .mcp-pick-item.prompt .mcp-pick-name")
		b.shot("80-mcp-picker-" + v.name)
	}
	b.desktop()
	b.clickText(".mcp-picker .mcp-pick-item.resource", "architecture.md")
	b.waitJS("the document attached", `[...document.querySelectorAll('.attach-tray .attach-item.done .attach-name')].some(e => e.textContent === 'architecture.md')`)
	require.True(t, eval[bool](b, `document.querySelector('.mcp-picker').hidden`), "the panel closes")

	// A template: its variable in a form, then the resource it names.
	open()
	b.clickText(".mcp-picker .mcp-pick-item.template", "demo://resource/dynamic/text/{resourceId}")
	b.waitJS("the template's form", `document.querySelector('.mcp-picker .mcp-pick-form input[name="resourceId"]')`)
	b.setValue(`.mcp-picker input[name="resourceId"]`, "5")
	b.click(".mcp-picker .mcp-pick-submit")
	b.waitJS("resource 5 attached", `[...document.querySelectorAll('.attach-tray .attach-item.done .attach-name')].some(e => e.textContent === '5')`)

	// A prompt: a missing required argument is refused in the form, then
	// its text goes in the composer.
	open()
	b.clickText(".mcp-picker .mcp-pick-item.prompt", "args-prompt")
	b.waitJS("the prompt's form", `document.querySelector('.mcp-picker .mcp-pick-form input[name="city"]')`)
	for _, v := range everyView {
		b.at(v)
		b.checkLayout(v, `.mcp-picker input[name="city"]`, `.mcp-picker input[name="state"]`, ".mcp-picker .mcp-pick-submit")
		b.shot("81-mcp-prompt-form-" + v.name)
	}
	b.desktop()
	b.click(".mcp-picker .mcp-pick-submit")
	b.waitJS("the refusal", `document.querySelector('.mcp-picker .mcp-pick-error:not([hidden])')?.textContent.includes('city')`)
	b.setValue(`.mcp-picker input[name="city"]`, "Lyon")
	b.click(".mcp-picker .mcp-pick-submit")
	b.waitJS("the prompt's text in the composer", `document.querySelector('#composer-input').value === "What's weather in Lyon?"`)
	require.True(t, eval[bool](b, `document.querySelector('.mcp-picker').hidden`), "the panel closes")

	for _, v := range everyView {
		b.at(v)
		require.Empty(t, eval[[]string](b, jsComposerOffscreen), "composer controls outside the window at %s", v.name)
		b.checkLayout(v, ".mcp-pick-btn", ".attach-btn", ".attach-tray .attach-item.done .attach-name", "#composer-input")
		b.shot("82-mcp-composer-" + v.name)
	}
	b.desktop()

	b.do(pressEnter)
	b.waitJS("the chat with the reply", `location.pathname.startsWith('/chats/') && `+jsIdle+` && document.querySelector('.thread .msg-assistant')`)
	chats, err := b.api.ListChats(b.ctx, sdk.ListChatsOptions{})
	require.NoError(t, err)
	require.Len(t, chats, 1)
	page, err := b.api.ChatMessages(b.ctx, chats[0].ID, sdk.MessagesOptions{})
	require.NoError(t, err)
	var user *sdk.ChatMessage
	for i := range page.Messages {
		if page.Messages[i].Role == "user" {
			user = &page.Messages[i]
		}
	}
	require.NotNil(t, user)
	var files, texts []string
	for _, p := range user.Content {
		switch p.Type {
		case sdk.PartFile:
			files = append(files, p.Name+" "+p.MediaType)
		case sdk.PartText:
			texts = append(texts, p.Text)
		}
	}
	require.ElementsMatch(t, []string{"architecture.md text/markdown", "5 text/plain"}, files)
	require.Equal(t, "What's weather in Lyon?", strings.Join(texts, ""))
	b.checkNoProblems()
}
