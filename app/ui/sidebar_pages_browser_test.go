package ui_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
)

// TestBrowserSidebarPages: past the first 200 chats the sidebar loads the
// next page when its end scrolls into view (GET /chats?after_id), each
// chat once, and says nothing more once the list is whole.
func TestBrowserSidebarPages(t *testing.T) {
	b := startBrowserWith(t, func(cfg *config.Config) { cfg.Limits.WritesPerMinute = 0 })
	const n = 215
	for i := range n {
		_, err := b.api.CreateChat(b.ctx, sdk.CreateChatRequest{Title: fmt.Sprintf("Paged chat %03d", i)})
		require.NoError(t, err)
	}
	items := `document.querySelectorAll('.chat-list .chat-item')`
	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the first page", items+`.length === 200 && document.querySelector('.chat-list .side-more')`)
	require.False(t, eval[bool](b, `[...`+items+`].some(e => e.textContent.includes('Paged chat 000'))`), "the oldest chat is on the next page")
	b.at(phoneDark)
	b.click(".sidebar-toggle")
	b.waitJS("the open drawer", `document.body.classList.contains('drawer-open')`)

	// Scrolling to the end loads the rest.
	eval[chromedp.Void](b, `(() => { const l = document.querySelector('.chat-list'); l.scrollTop = l.scrollHeight; })()`)
	// Every chat once, the oldest and the newest among them, read in one
	// evaluation: the list may render again between two (a refresh).
	b.waitJS("the whole list, each chat once", `(() => {
		const titles = [...document.querySelectorAll('.chat-list .chat-title')].map(e => e.textContent);
		return titles.length === `+fmt.Sprint(n)+` && new Set(titles).size === titles.length
			&& titles.includes('Paged chat 000') && titles.includes('Paged chat 214')
			&& !document.querySelector('.chat-list .side-more');
	})()`)
	b.shot("74-sidebar-paged-end-phone-dark")
	b.do(chromedp.KeyEvent("\x1b"))
	b.desktop()

	// A refresh (a chat created elsewhere) keeps every chat shown.
	_, err := b.api.CreateChat(b.ctx, sdk.CreateChatRequest{Title: "Newest of all"})
	require.NoError(t, err)
	b.waitJS("the new chat on top, the rest kept", items+`.length === `+fmt.Sprint(n+1)+` && document.querySelector('.chat-list .chat-title').textContent === 'Newest of all'`)
	b.checkNoProblems()
}
