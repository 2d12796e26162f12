package ui_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/sdk"
)

// TestBrowserSearchJumps searches message text from the sidebar: the result
// shows the snippet under the title, and opening it scrolls to the matching
// message (far above the bottom) and highlights it. Desktop and phone
// widths, light and dark.
func TestBrowserSearchJumps(t *testing.T) {
	b := startBrowser(t)
	filler := strings.Repeat("Just some filler line for height.\n\n", 25)
	chat, err := b.api.CreateChat(b.ctx, sdk.CreateChatRequest{Title: "Kitchen notes", Content: sdk.Text(filler + "Where did I put the marmalade recipe?")})
	require.NoError(t, err)
	for i := range 4 {
		_, err := b.api.SendMessage(b.ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text(fmt.Sprintf("more %d\n\n%s", i, filler))})
		require.NoError(t, err)
	}
	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)
	b.do(chromedp.Navigate(b.base + "/chats/" + chat.ID.String()))
	b.waitJS("every turn answered", `document.querySelectorAll('.msg-user').length === 5 && !document.querySelector('.typing')
		&& document.querySelectorAll('.msg-assistant').length >= 5`)
	msgs, err := b.api.ChatMessages(b.ctx, chat.ID, sdk.MessagesOptions{})
	require.NoError(t, err)
	var target int64
	for _, m := range msgs.Messages {
		if m.Role == "user" {
			target = m.ID
			break
		}
	}

	for _, tc := range everyView {
		{ // the browser helpers fail the whole test
			b.at(tc)
			b.do(chromedp.Navigate(b.base + "/"))
			b.waitJS("the new-chat page", `document.querySelector('.hero')`)
			if tc.width < 600 {
				eval[chromedp.Void](b, `document.dispatchEvent(new KeyboardEvent('keydown', {key: 'k', ctrlKey: true, bubbles: true}))`)
				b.waitJS("the drawer", `document.body.classList.contains('drawer-open')`)
			}
			b.setValue(".search-input", "MARMALADE")
			hit := `document.querySelector('.chat-list a[href="/chats/` + chat.ID.String() + `?message=` + fmt.Sprint(target) + `&q=MARMALADE"]')`
			b.waitJS("the result with its snippet", hit+`?.querySelector('.chat-snippet')?.textContent === '…e did I put the marmalade recipe?'`)
			require.Equal(t, "marmalade", eval[string](b, hit+`.querySelector('.chat-snippet mark').textContent`))
			require.Equal(t, "Kitchen notes", eval[string](b, hit+`.querySelector('.chat-title').textContent`))
			// The results are reachable with the arrow keys: Down from the
			// box to the hit, Up back to the box.
			b.do(chromedp.Focus(chromedp.CSS(".search-input")), chromedp.KeyEvent(kb.ArrowDown))
			require.True(t, eval[bool](b, `document.activeElement === `+hit), "Down from the search box focuses the first result (%s)", tc.name)
			b.do(chromedp.KeyEvent(kb.ArrowUp))
			require.True(t, eval[bool](b, `document.activeElement === document.querySelector('.search-input')`), "Up from the first result goes back to the box (%s)", tc.name)
			b.checkLayout(tc, ".search-input", `.chat-list a[href*="?message="]`, `.chat-list a[href*="?message="] .chat-title`,
				`.chat-list a[href*="?message="] .chat-snippet`, `.chat-list a[href*="?message="] .chat-snippet mark`)
			b.shot("70-search-" + tc.name)
			b.click(`.chat-list a[href*="?message="]`)
			b.waitJS("the highlighted message", `document.querySelector('.msg-user.search-hit')?.dataset.id === '`+fmt.Sprint(target)+`'`)
			// The term is marked once the message's text has rendered.
			b.waitJS("the marked term", `document.querySelector('.search-hit .search-mark')`)
			require.Equal(t, "marmalade", eval[string](b, `document.querySelector('.search-hit .search-mark').textContent`))
			b.waitJS("the match in view, the bottom not", `(() => {
				const s = document.querySelector('.scroller'), r = document.querySelector('.search-hit .search-mark').getBoundingClientRect(), v = s.getBoundingClientRect();
				return r.bottom > v.top && r.top < v.bottom && s.scrollHeight - s.scrollTop - s.clientHeight > 200; })()`)
			require.Equal(t, "/chats/"+chat.ID.String(), eval[string](b, `location.pathname + location.search`), "the jump parameter is dropped (%s)", tc.name)
			b.checkLayout(tc, ".search-hit .search-mark", ".chat-header .chat-title-h")
			b.shot("71-search-jump-" + tc.name)
			if tc.name == everyView[0].name {
				// A turn rebuilds the chat's messages (their actions follow
				// whether it runs): the hit keeps its highlight and mark.
				_, err := b.api.SendMessage(b.ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("one more")})
				require.NoError(t, err)
				b.waitJS("the new turn answered", `document.querySelectorAll('.msg-user').length === 6 && `+jsIdle)
				require.Equal(t, "marmalade", eval[string](b, `document.querySelector('.search-hit .search-mark')?.textContent ?? 'no mark'`))
			}
		}
	}
	b.desktop()
	b.checkNoProblems()
}
