package ui_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/config"
)

// The approval card against a real MCP server whose config asks before
// every call ("approval": "always"): the card shows what would run, Approve
// runs it, Deny (with a reason) answers the model "denied: <reason>",
// Approve all answers several at once, and the sidebar dot says the chat
// needs action.
func TestBrowserApproval(t *testing.T) {
	mcpConfig, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"url": mcpEverything(t), "approval": "always"},
	}})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(path, mcpConfig, 0o600))
	b := startBrowserWith(t, func(cfg *config.Config) { cfg.MCPConfig = path })

	const card = `document.querySelector('.approval-card')`
	calls := func() string { return `[...document.querySelectorAll('.approval-card .approval-call')]` }
	newChat := func(text string) string {
		b.t.Helper()
		b.do(chromedp.Navigate(b.base + "/"))
		b.waitJS("the new-chat page", `location.pathname === '/' && document.querySelector('.hero')`)
		// The tools are known (the card names the tool by them).
		b.waitJS("the MCP server connected", `document.querySelector('.tools-btn') && !document.querySelector('.tools-btn').hidden`)
		b.typeAndSend(text)
		b.waitJS("a chat page", `/^\/chats\/[0-9a-f-]{36}$/.test(location.pathname)`)
		return eval[string](b, `location.pathname.slice('/chats/'.length)`)
	}
	dot := func(id string) string {
		return `document.querySelector('.chat-list .chat-item[data-id="` + id + `"] .dot')`
	}

	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)

	t.Run("approve runs the call", func(t *testing.T) {
		b.t = t
		id := newChat(`/tool everything__note {"note": "buy milk"}`)
		b.waitJS("the approval card", card+` && `+calls()+`.length === 1`)
		require.Equal(t, "everything", eval[string](b, card+`.querySelector('.approval-server').textContent`))
		require.Equal(t, "note", eval[string](b, card+`.querySelector('.approval-tool').textContent`), "the tool's own name")
		require.Equal(t, "effectful", eval[string](b, card+`.querySelector('.effect').textContent`))
		require.Contains(t, eval[string](b, card+`.querySelector('.effect').title`), "never run again")
		require.Equal(t, "{\n  \"note\": \"buy milk\"\n}", eval[string](b, card+`.querySelector('.approval-args').textContent`),
			"the arguments pretty-printed")
		require.False(t, eval[bool](b, card+`.querySelector('.approval-all') !== null`), "no Approve all for one call")
		require.False(t, eval[bool](b, `document.querySelector('.action-card:not(.approval-card)') !== null`),
			"no tool-results card for a call awaiting approval")
		b.waitJS("the sidebar dot", dot(id)+`?.classList.contains('dot-requires_action')`)
		require.Equal(t, "Needs your action", eval[string](b, dot(id)+`.getAttribute('aria-label')`))
		require.Equal(t, "Waiting for your approval", eval[string](b, `document.querySelector('.status-line').textContent`))
		b.waitJS("the call's tool card says it awaits approval", `document.querySelector('.tool-state.state-approval')?.textContent === 'Awaiting approval'`)
		b.shot("40-approval-card")

		// From the keyboard: focus Approve, press Enter.
		eval[chromedp.Void](b, card+`.querySelector('.approval-approve').focus()`)
		b.do(chromedp.KeyEvent("\r"))
		b.waitJS("the result, the card gone", jsIdle+` && !`+card+` && [...document.querySelectorAll('.thread .msg-assistant')].some(e => e.textContent.includes('filed'))`)
		b.waitJS("the sidebar dot no longer asking", `!`+dot(id)+`?.classList.contains('dot-requires_action')`)
		b.shot("41-approval-approved")
	})

	t.Run("deny with a reason, then approve the rest", func(t *testing.T) {
		b.t = t
		id := newChat(`/tool everything__note {"note": "sell the car"} /tool everything__echo {"text": "hi"}`)
		b.waitJS("the approval card with both calls", card+` && `+calls()+`.length === 2 && `+card+`.querySelector('.approval-all')`)
		require.Equal(t, []string{"note", "echo"}, eval[[]string](b, calls()+`.map(e => e.querySelector('.approval-tool').textContent)`))
		require.Equal(t, []string{"effectful", "pure"}, eval[[]string](b, calls()+`.map(e => e.querySelector('.effect').textContent)`))

		// A reload: the list gives the dot, the stream the card again.
		b.do(chromedp.Reload())
		b.waitJS("the card after a reload", card+` && `+calls()+`.length === 2`)
		b.waitJS("the sidebar dot from the list", dot(id)+`?.classList.contains('dot-requires_action')`)

		note := calls() + `[0]`
		b.click(`.approval-call .approval-deny`)
		b.waitJS("the reason field, focused", `document.activeElement === `+note+`.querySelector('.approval-reason')`)
		b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
		b.waitJS("the card within a phone screen", `(() => { const r = `+card+`.getBoundingClientRect(); return r.left >= 0 && r.right <= innerWidth; })()`)
		b.shot("42-approval-deny-narrow")
		b.scheme("dark")
		b.shot("43-approval-deny-narrow-dark")
		b.scheme("light")
		b.do(chromedp.EmulateViewport(1280, 860))
		// The server list changing (another server added) rebuilds the card
		// with the new names; the open form, the reason typed so far and the
		// focus stay.
		b.setValue(`.approval-call .approval-reason`, "half typ")
		var spare struct{ ID string }
		require.NoError(t, b.api.Do(b.ctx, http.MethodPost, "/chats/mcp-servers",
			map[string]any{"name": "spare", "command": "true", "enabled": false}, &spare))
		eval[chromedp.Void](b, card+`.dataset.before = '1'`)
		// (the page's own module: the UI loads from a versioned prefix)
		eval[chromedp.Void](b, `(async () => { const src = document.querySelector('script[type="module"]').src;
			await (await import(new URL('mcp.js', src).href)).refreshMCP(); })()`)
		b.waitJS("the card rebuilt", card+` && !`+card+`.dataset.before`)
		require.True(t, eval[bool](b, `!`+note+`.querySelector('.approval-deny-form').hidden && `+note+`.querySelector('.approval-deny').hidden &&
			`+note+`.querySelector('.approval-reason').value === 'half typ' && document.activeElement === `+note+`.querySelector('.approval-reason')`),
			"the deny form as it was, after a rebuild")
		require.NoError(t, b.api.Do(b.ctx, http.MethodDelete, "/chats/mcp-servers/"+spare.ID, nil, nil))
		// A reason over the server's 2,000 characters (typed past
		// maxlength by script): the 400 shows in the card and the buttons
		// come back.
		b.setValue(`.approval-call .approval-reason`, strings.Repeat("x", 2001))
		b.do(pressEnter)
		b.waitJS("the error in the card", card+`.querySelector('.approval-error').textContent.includes('Could not send the answer') && !`+card+`.querySelector('.approval-deny-confirm').disabled`)
		require.Equal(t, 2, eval[int](b, calls()+`.length`), "nothing was answered")
		b.setValue(`.approval-call .approval-reason`, "not today")
		b.do(pressEnter)
		b.waitJS("the card with the one call left", calls()+`.length === 1 && `+calls()+`[0].querySelector('.approval-tool').textContent === 'echo' && !`+card+`.querySelector('.approval-all')`)
		b.click(`.approval-card .approval-approve`)
		b.waitJS("both results", jsIdle+` && !`+card+` && [...document.querySelectorAll('.thread .msg-assistant')].some(e => e.textContent.includes('denied: not today') && e.textContent.includes('echo: hi'))`)
		// The denied call's card says so: a denial is no failure of the tool.
		require.Equal(t, []string{"Denied", "Done"}, eval[[]string](b, `[...document.querySelectorAll('.thread .tool-card .tool-state')].slice(-2).map(e => e.textContent)`))
	})

	t.Run("approve all", func(t *testing.T) {
		b.t = t
		newChat(`/tool everything__echo {"text": "one"} /tool everything__echo {"text": "two"}`)
		b.waitJS("the approval card with Approve all", card+` && `+calls()+`.length === 2 && `+card+`.querySelector('.approval-all')`)
		b.click(`.approval-card .approval-all`)
		b.waitJS("both results", jsIdle+` && !`+card+` && [...document.querySelectorAll('.thread .msg-assistant')].some(e => e.textContent.includes('echo: one') && e.textContent.includes('echo: two'))`)
	})

	b.t = t
	b.checkNoProblems()
}
