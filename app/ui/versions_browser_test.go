package ui_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/demo"
	"github.com/chatd/chatd/app/sdk"
)

// jsVersionCounts is every switcher's "n/m", in page order.
const jsVersionCounts = `[...document.querySelectorAll('.thread .versions .version-count')].map(e => e.textContent)`

// TestBrowserVersions: an edit adds a version with a ‹ n/m › switcher,
// the switcher works from the keyboard, Regenerate adds a version of the
// reply, a branch switch made elsewhere (another tab, here the API) shows
// live, and "Fork from here" opens a new chat with the branch.
func TestBrowserVersions(t *testing.T) {
	b := startBrowserWith(t, func(cfg *config.Config) { cfg.DemoTokenDelay = demo.NoDelay })
	chat, err := b.api.CreateChat(b.ctx, sdk.CreateChatRequest{Title: "Versions", Content: sdk.Text("First question")})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		c, err := b.api.Chat(b.ctx, chat.ID)
		return err == nil && c.Status == sdk.ChatStatusWaiting
	}, 10*time.Second, 5*time.Millisecond)

	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)
	b.do(chromedp.Navigate(b.base + "/chats/" + chat.ID.String()))
	b.waitJS("the chat, idle", jsIdle+` && document.querySelectorAll('.thread .msg-assistant').length === 1`)
	require.Empty(t, eval[[]string](b, jsVersionCounts), "one version: no switcher")

	// Edit: a second version of the question.
	b.click(`.thread .msg-user button[aria-label="Edit message"]`)
	b.waitJS("the editor", `document.querySelector('.edit-input')`)
	b.setValue(".edit-input", "Second question")
	b.do(pressEnter)
	b.waitJS("the new version, idle", jsIdle+` && JSON.stringify(`+jsUserTexts+`) === '["Second question"]' && JSON.stringify(`+jsVersionCounts+`) === '["2/2"]'`)

	// The switcher from the keyboard: focus ‹ and press Enter.
	b.do(chromedp.Focus(`.thread .msg-user button[aria-label="Previous version"]`), chromedp.KeyEvent("\r"))
	b.waitJS("the first version", `JSON.stringify(`+jsUserTexts+`) === '["First question"]' && JSON.stringify(`+jsVersionCounts+`) === '["1/2"]'`)
	b.waitJS("the focus on the switcher", `document.activeElement?.closest('.versions') && document.activeElement.closest('[data-id]')?.textContent.includes('First question')`)
	b.shot("80-versions-switched")

	// Regenerate the reply: a second version of it.
	b.click(`.thread .msg-assistant button[aria-label="Regenerate"]`)
	b.waitJS("the new reply, idle", jsIdle+` && JSON.stringify(`+jsVersionCounts+`) === '["1/2","2/2"]'`)

	// Another viewer switches to the edited branch: this tab follows live.
	page, err := b.api.ChatMessages(b.ctx, chat.ID, sdk.MessagesOptions{})
	require.NoError(t, err)
	_, err = b.api.SwitchBranch(b.ctx, chat.ID, page.Messages[0].SiblingIDs[1])
	require.NoError(t, err)
	b.waitJS("the other branch, live", `JSON.stringify(`+jsUserTexts+`) === '["Second question"]' && JSON.stringify(`+jsVersionCounts+`) === '["2/2"]'`)

	// Fork from the reply: a new chat with the branch.
	b.click(`.thread .msg-assistant button[aria-label="Fork from here"]`)
	b.waitJS("the fork", `location.pathname !== '/chats/`+chat.ID.String()+`' && /^\/chats\/[0-9a-f-]{36}$/.test(location.pathname)`)
	b.waitJS("its branch", jsIdle+` && JSON.stringify(`+jsUserTexts+`) === '["Second question"]' && document.querySelectorAll('.thread .msg-assistant').length === 1`)
	b.checkNoProblems()
}
