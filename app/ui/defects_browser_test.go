package ui_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
)

const jsToasts = `[...document.querySelectorAll('.toast')].map(e => e.textContent)`

// TestBrowserScreens runs the scenarios that need nothing but a signed-in
// admin on a default chatd in one app and one tab, one after the other
// (each used to start its own): the order matters where one counts chats.
func TestBrowserScreens(t *testing.T) {
	b := startBrowser(t)
	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)
	for _, sc := range []struct {
		name string
		run  func(*testing.T, *browser)
	}{
		{"live sidebar", browserLiveSidebar}, // first: it starts from an empty list
		{"archive toasts and composer", browserArchiveToastsAndComposer},
		{"theme switch", browserThemeSwitch},
		{"new-chat options layout", browserNewChatOptionsLayout},
		{"cosmetics", browserCosmetics},
		{"turn notes", browserTurnNotes},
		{"layout checks", browserLayoutChecks}, // last: it replaces the page's body
	} {
		t.Run(sc.name, func(t *testing.T) {
			b.t = t
			sc.run(t, b)
		})
		b.t = t
	}
}

// Archive and unarchive say what they did, and only when the server took
// it; an archived chat's composer takes no input until it is unarchived.
func browserArchiveToastsAndComposer(t *testing.T, b *browser) {
	b.do(chromedp.Navigate(b.base + "/"))
	b.waitJS("the new-chat page", `document.querySelector('.hero')`)
	b.typeAndSend("Archive me later")
	b.waitJS("the reply", jsIdle+` && document.querySelector('.thread .msg-assistant')`)
	composer := `document.querySelector('#composer-input')`

	b.chatMenu("Archive me later")
	b.clickText(".menu .menu-item", "Archive")
	b.waitJS("the archived toast", jsToasts+`.some(t => t.includes('Chat archived.'))`)
	require.False(t, eval[bool](b, jsToasts+`.some(t => t.includes('restored'))`), "not the opposite toast")
	b.waitJS("the archived banner", `document.querySelector('.info-banner')?.textContent.includes('archived')`)
	require.True(t, eval[bool](b, composer+`.disabled`), "the composer of an archived chat is disabled")
	require.Contains(t, eval[string](b, composer+`.placeholder`), "Unarchive")
	require.True(t, eval[bool](b, `document.querySelector('.send-btn').disabled`))
	b.checkViews(everyView, "", ".toast", ".info-banner span", ".info-banner button", "#composer-input")
	b.shot("60-archived-composer")

	eval[chromedp.Void](b, `document.querySelectorAll('.toast').forEach(e => e.remove())`)
	b.clickText(".side-btn", "Archived")
	b.chatMenu("Archive me later")
	b.clickText(".menu .menu-item", "Unarchive")
	b.waitJS("the restored toast", jsToasts+`.some(t => t.includes('Chat restored from the archive.'))`)
	require.False(t, eval[bool](b, jsToasts+`.some(t => t.includes('Chat archived.'))`))
	b.waitJS("the composer enabled again", `!`+composer+`.disabled && !document.querySelector('.info-banner')`)

	// A patch the server refuses (the chat is gone) shows the error only.
	eval[chromedp.Void](b, `document.querySelectorAll('.toast').forEach(e => e.remove())`)
	b.clickText(".side-btn", "Back to chats")
	chats, err := b.api.ListChats(b.ctx, sdk.ListChatsOptions{Archived: "all"})
	require.NoError(t, err)
	require.Len(t, chats, 1)
	b.chatMenu("Archive me later")
	require.NoError(t, b.api.DeleteChat(b.ctx, chats[0].ID))
	b.clickText(".menu .menu-item", "Archive")
	b.waitJS("the error toast", jsToasts+`.some(t => t.includes('Could not update the chat'))`)
	require.False(t, eval[bool](b, jsToasts+`.some(t => t.includes('Chat archived.'))`), "no success toast after a failed patch")
	b.checkNoProblems()
}

// The theme switch pins Light or Dark over the system's preference,
// remembered across reloads; System follows the system again.
func browserThemeSwitch(t *testing.T, b *browser) {
	b.scheme("dark")
	b.do(chromedp.Navigate(b.base + "/"))
	b.waitJS("the new-chat page", `document.querySelector('.hero')`)
	bg := func() string { return eval[string](b, `getComputedStyle(document.body).backgroundColor`) }
	btn := `document.querySelector('.theme-btn')`
	const light, dark = "rgb(255, 255, 255)", "rgb(22, 23, 27)"

	require.Equal(t, "Theme: System", eval[string](b, btn+`.getAttribute('aria-label')`))
	require.Equal(t, dark, bg(), "System follows the (emulated) dark preference")

	b.click(".theme-btn")
	require.Equal(t, "Theme: Light", eval[string](b, btn+`.getAttribute('aria-label')`))
	require.Equal(t, light, bg(), "Light over a dark system")
	b.shot("61-theme-light-on-dark-system")

	b.do(chromedp.Reload())
	b.waitJS("the app again", `document.querySelector('.theme-btn')`)
	require.Equal(t, "light", eval[string](b, `document.documentElement.dataset.theme`), "remembered")
	require.Equal(t, light, bg())

	b.click(".theme-btn")
	require.Equal(t, "Theme: Dark", eval[string](b, btn+`.getAttribute('aria-label')`))
	b.scheme("light")
	require.Equal(t, dark, bg(), "Dark over a light system")

	b.click(".theme-btn")
	require.Equal(t, "Theme: System", eval[string](b, btn+`.getAttribute('aria-label')`))
	require.False(t, eval[bool](b, `'theme' in document.documentElement.dataset`))
	require.Equal(t, light, bg(), "System follows the light preference")

	// At each size and system theme: the switch is reachable (on a phone,
	// in the drawer), readable and large enough, and the page follows.
	for _, v := range everyView {
		b.at(v)
		if v.phone() {
			b.click(".sidebar-toggle")
			b.waitJS("the open drawer", `document.body.classList.contains('drawer-open')`)
		}
		b.checkLayout(v, ".theme-btn", ".sidebar .search-input")
		require.Equal(t, map[string]string{"light": light, "dark": dark}[v.scheme], bg(), "the page follows the system at %s", v.name)
		b.shot("61-theme-switch-" + v.name)
		if v.phone() {
			b.do(chromedp.KeyEvent("\x1b"))
			b.waitJS("the closed drawer", `!document.body.classList.contains('drawer-open')`)
		}
	}
	b.desktop()
	b.checkNoProblems()
}

// The new-chat Options panel never covers the heading: on short windows
// the panel scrolls and the heading moves up, fully visible above the
// composer.
func browserNewChatOptionsLayout(t *testing.T, b *browser) {
	b.do(chromedp.Navigate(b.base + "/"))
	b.waitJS("the new-chat page", `document.querySelector('.hero')`)
	short := view{"desktop-short-dark", 1280, 680, "dark"}
	for _, v := range []view{desktopLight, short, phoneLight, phoneDark} {
		size := [2]int64{v.width, v.height}
		b.at(v)
		for _, open := range []bool{false, true} {
			if open {
				eval[chromedp.Void](b, `document.querySelector('.new-options').open = true`)
			} else {
				eval[chromedp.Void](b, `document.querySelector('.new-options').open = false`)
			}
			b.waitJS("layout", `document.querySelector('.new-options').open === `+map[bool]string{true: "true", false: "false"}[open])
			visible := eval[bool](b, `(() => {
				const h = document.querySelector('.hero h2').getBoundingClientRect();
				const s = document.querySelector('.new-chat-view .scroller').getBoundingClientRect();
				const d = document.querySelector('.new-chat-view .dock').getBoundingClientRect();
				return h.top >= s.top && h.bottom <= s.bottom && h.bottom <= d.top;
			})()`)
			require.True(t, visible, "the heading is fully visible at %dx%d with Options open=%v", size[0], size[1], open)
			b.checkLayout(v, ".hero h2", ".new-options summary", "#composer-input", ".composer .picker")
		}
		b.shot("62-new-chat-options-" + v.name)
	}
	b.desktop()
	b.checkNoProblems()
}

// Cosmetics: queue chips that wrap line up under the first chip, not under
// the label; the not-found page's button is not underlined and its header
// has no chat menu; toasts keep clear of code blocks' Copy buttons.
func browserCosmetics(t *testing.T, b *browser) {
	b.do(chromedp.Navigate(b.base + "/"))
	b.waitJS("the new-chat page", `document.querySelector('.hero')`)

	// The Settings link beside the theme button draws a cog: its old
	// rays read as a sun, the theme's own icon.
	settingsIcon := eval[string](b, `document.querySelector('.settings-link path').getAttribute('d')`)
	require.True(t, strings.HasPrefix(settingsIcon, "M18.6 9.8"), "the Settings link draws the cog, got %q", settingsIcon)
	// Each sidebar link draws its own icon (Usage drew the cog, Projects
	// the brand's bubble).
	icons := eval[map[string]string](b, `Object.fromEntries(['.brand-mark', '.projects-link', '.usage-link', '.settings-link']
		.map(sel => [sel, document.querySelector('.sidebar ' + sel + ' path').getAttribute('d')]))`)
	seen := map[string]string{}
	for sel, d := range icons {
		require.Empty(t, seen[d], "%s draws the same icon as %s", sel, seen[d])
		seen[d] = sel
	}
	require.Len(t, seen, 4)
	require.Equal(t, []string{"none", "none"}, eval[[]string](b, `['.projects-link', '.usage-link']
		.map(sel => getComputedStyle(document.querySelector('.sidebar ' + sel)).textDecorationLine)`), "the sidebar's links are not underlined")

	// A chat waiting for a dynamic tool's result is busy: sends queue.
	chat, err := b.api.CreateChat(b.ctx, sdk.CreateChatRequest{
		Content:            []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "/tool lookup {}"}},
		UnsafeDynamicTools: []sdk.DynamicTool{{Name: "lookup", Description: "Look up", InputSchema: json.RawMessage(`{"type":"object"}`)}},
	})
	require.NoError(t, err)
	b.do(chromedp.Navigate(b.base + "/chats/" + chat.ID.String()))
	b.waitJS("the action card", `document.querySelector('.action-card')`)
	for i, text := range []string{"First queued question", "Second queued question", "Third queued question, a longer one"} {
		b.typeAndSend(text)
		b.waitJS("the chip", fmt.Sprintf(`document.querySelectorAll('.queue-chip').length === %d && !document.querySelector('.thread .ghost')`, i+1))
	}
	for _, v := range everyView {
		b.at(v)
		under := eval[bool](b, `(() => {
			const label = document.querySelector('.queue-label').getBoundingClientRect();
			return [...document.querySelectorAll('.queue-chip')].every(c => c.getBoundingClientRect().left >= label.right);
		})()`)
		require.True(t, under, "every chip right of the label at %s", v.name)
		b.checkLayout(v, ".queue-label", ".queue-chip", ".queue-chip:last-child", ".action-card")
		b.shot("63-queue-chips-" + v.name)
	}
	b.desktop()

	// A toast stays left of the column's right edge, where code blocks
	// have their Copy button.
	eval[chromedp.Void](b, `import('/js/widgets.js').then(m => m.toast('A toast with a fairly long message in it', 'info'))`)
	b.waitJS("the toast", `document.querySelector('.toast')`)
	clear := eval[bool](b, `(() => {
		const t = document.querySelector('.toast').getBoundingClientRect();
		const col = document.querySelector('.thread').getBoundingClientRect();
		return t.right < col.right - 80;
	})()`)
	require.True(t, clear, "the toast keeps clear of the top-right of the column")
	b.checkViews(everyView, "", ".toast", ".toast button")
	b.checkNoProblems() // the not-found page's stream attempt logs its 404

	b.do(chromedp.Navigate(b.base + "/chats/00000000-0000-4000-8000-0000000000ff"))
	b.waitJS("the not-found page", `document.querySelector('.empty-state a.btn')`)
	require.Equal(t, "none", eval[string](b, `getComputedStyle(document.querySelector('.empty-state a.btn')).textDecorationLine`))
	require.True(t, eval[bool](b, `document.querySelector('.chat-header [aria-label="Chat options"]').hidden`), "no chat menu on the not-found page")
	b.checkViews(everyView, "64-not-found", ".empty-state h2", ".empty-state p", ".empty-state a.btn")
	b.forgetProblems() // the not-found page's stream attempt logged its 404
}

// A stopped reply says "Stopped" with Continue (also after a reload); the
// latest reply has Regenerate; a failed turn keeps its error on its user
// message after the chat moved on.
func browserTurnNotes(t *testing.T, b *browser) {
	b.do(chromedp.Navigate(b.base + "/"))
	b.waitJS("the new-chat page", `document.querySelector('.hero')`)
	const replies = `document.querySelectorAll('.thread .msg-assistant:not(.streaming):not(.typing)')`
	lastReply := replies + `[` + replies + `.length - 1]`

	// Stop mid-reply.
	b.typeAndSend(strings.Repeat("Please write a long answer about streaming. ", 6))
	b.waitJS("a streaming preview", jsPreviewLen+` > 40`)
	b.click(".stop-btn")
	b.waitJS("the stopped note with Continue", jsIdle+` && `+lastReply+`?.querySelector('.msg-note.stopped button')?.textContent === 'Continue'`)
	require.Equal(t, 1, eval[int](b, replies+`.length`))
	b.checkViews(everyView, "65-stopped", ".msg-note.stopped span", ".msg-note.stopped button",
		// and the chat screen around it
		".chat-header .chat-title-h", `.chat-header [aria-label="Chat options"]`, ".composer .attach-btn", ".composer .picker", ".send-btn", "#composer-input")
	b.at(phoneLight)
	b.checkLayout(phoneLight, ".chat-header .sidebar-toggle")
	b.desktop()

	b.do(chromedp.Reload())
	b.waitJS("the stopped note after a reload", lastReply+`?.querySelector('.msg-note.stopped button')`)
	require.Contains(t, eval[string](b, lastReply+`.querySelector('.msg-note').textContent`), "Stopped")

	// Continue sends "Continue" as a new turn; the old reply stays Stopped
	// without the button.
	b.setValue("#composer-input", "my draft")
	b.click(".msg-note.stopped button")
	b.waitJS("the continued reply", jsIdle+` && `+replies+`.length === 2`)
	require.Equal(t, "Continue", eval[[]string](b, jsUserTexts)[1])
	require.Equal(t, "my draft", eval[string](b, `document.querySelector('#composer-input').value`), "Continue leaves the draft alone")
	require.True(t, eval[bool](b, replies+`[0].querySelector('.msg-note.stopped') && !`+replies+`[0].querySelector('.msg-note button')`))
	require.False(t, eval[bool](b, lastReply+`.querySelector('.msg-note') !== null`), "a completed reply has no note")
	b.setValue("#composer-input", "")

	// Regenerate re-runs the latest reply: a new message in its place.
	require.False(t, eval[bool](b, replies+`[0].querySelector('[aria-label="Regenerate"]') !== null`), "only the latest reply")
	before := eval[string](b, lastReply+`.dataset.id`)
	for _, v := range everyView {
		b.at(v)
		// Actions show on hover or focus (always on touch screens).
		eval[chromedp.Void](b, `document.querySelector('.msg-assistant [aria-label="Regenerate"]').focus()`)
		b.checkLayout(v, `.msg-assistant [aria-label="Regenerate"]`, `.msg-assistant [aria-label="Copy message"]`)
	}
	b.desktop()
	b.click(`.msg-assistant [aria-label="Regenerate"]`)
	b.waitJS("the regenerated reply", jsIdle+` && `+replies+`.length === 2 && `+lastReply+`.dataset.id !== '`+before+`'`)
	require.Len(t, eval[[]string](b, jsUserTexts), 2)

	// A failed turn, then another message: the error stays on the failed one.
	b.typeAndSend("/error auth")
	b.waitJS("the error banner", `document.querySelector('.error-banner')`)
	failed := `[...document.querySelectorAll('.thread .msg-user')].find(e => e.textContent.includes('/error auth'))`
	require.False(t, eval[bool](b, failed+`.querySelector('.msg-note') !== null`), "the banner shows the current error")
	b.typeAndSend("And now?")
	b.waitJS("the next reply", jsIdle+` && `+replies+`.length === 3`)
	b.waitJS("the failed turn's note", failed+`?.querySelector('.msg-note.failed')`)
	require.Contains(t, eval[string](b, failed+`.querySelector('.msg-note.failed').textContent`), "This turn failed")
	b.checkViews(everyView, "66-failed-turn-note", ".msg-note.failed span")
	b.checkNoProblems()
}

// Offline: the status line says so (not "Streaming…"), a Stop pressed
// meanwhile is sent when the connection is back, and a send whose answer
// was lost is looked up on reconnect and offered as "Retry same request",
// never resent by itself.
func TestBrowserOffline(t *testing.T) {
	// A slow reply (about 15 s), so it still runs when the connection is back.
	b := startBrowserWith(t, func(cfg *config.Config) { cfg.DemoTokenDelay = 100 * time.Millisecond })
	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)
	const status = `document.querySelector('.status-line').textContent`

	// A long reply, then the network goes.
	b.typeAndSend(strings.Repeat("Please write a long answer about being offline. ", 8))
	b.waitJS("a streaming preview", jsPreviewLen+` > 20`)
	id := uuid.MustParse(eval[string](b, `location.pathname.slice('/chats/'.length)`))
	b.conns.outage(true)
	b.waitJS("the offline status line", status+`.startsWith('Offline')`)
	require.NotContains(t, eval[string](b, status), "Streaming")
	b.checkViews(everyView, "67-offline", ".status-line span", ".conn-pill", ".stop-btn")

	// Stop while offline waits for the connection.
	b.click(".stop-btn")
	b.waitJS("the queued stop", status+`.includes('Stop will be sent')`)
	b.checkViews(bothSizes, "", ".status-line span")
	chat, err := b.api.Chat(b.ctx, id)
	require.NoError(t, err)
	require.Equal(t, sdk.ChatStatusRunning, chat.Status, "nothing reached the server")

	b.conns.outage(false)
	b.waitJS("the stopped chat", jsIdle+` && document.querySelectorAll('.thread .msg-assistant').length === 1`)
	chat, err = b.api.Chat(b.ctx, id)
	require.NoError(t, err)
	require.Equal(t, sdk.ChatStatusWaiting, chat.Status)
	msgs, err := b.api.ChatMessages(b.ctx, id, sdk.MessagesOptions{})
	require.NoError(t, err)
	require.Len(t, msgs.Messages, 2)
	require.NotContains(t, msgs.Messages[1].Content[len(msgs.Messages[1].Content)-1].Text, "retried failure", "the reply was cut short by the Stop, not finished")

	// A send while offline: not confirmed; on reconnect it is looked up
	// and offered for retry, and only the click sends it.
	b.conns.outage(true)
	b.waitJS("offline again", status+`.startsWith('Offline')`)
	b.typeAndSend("Sent while offline")
	b.waitJS("the unconfirmed send", `document.querySelector('.thread .ghost.unconfirmed')`)
	b.conns.outage(false)
	b.waitJS("Retry same request offered", `[...document.querySelectorAll('.thread .ghost button')].some(e => e.textContent === 'Retry same request')`)
	b.checkViews(everyView, "68-retry-offered", ".thread .ghost .bubble", ".thread .ghost button")
	msgs, err = b.api.ChatMessages(b.ctx, id, sdk.MessagesOptions{})
	require.NoError(t, err)
	require.Len(t, msgs.Messages, 2, "never resent by itself")
	b.clickText(".thread .ghost button", "Retry same request")
	b.waitJS("the reply to the retried send", jsIdle+` && document.querySelectorAll('.thread .msg-assistant').length === 2`)
	require.Equal(t, "Sent while offline", eval[[]string](b, jsUserTexts)[1])
}

// The sidebar follows the chat-list watch: chats created, renamed, run and
// deleted by another client appear within moments, though the fallback
// poll runs only once a minute while the watch is up.
func browserLiveSidebar(t *testing.T, b *browser) {
	b.do(chromedp.Navigate(b.base + "/"))
	b.waitJS("the new-chat page", `document.querySelector('.hero')`)
	b.waitJS("the empty list", `document.querySelector('.chat-list .side-empty')`)
	require.Eventually(t, func() bool { return b.conns.upgraded("/api/v2/chats/watch") }, 10*time.Second, 20*time.Millisecond, "the watch is open")
	titles := `[...document.querySelectorAll('.chat-list .chat-title')].map(e => e.textContent)`

	chat, err := b.api.CreateChat(b.ctx, sdk.CreateChatRequest{Title: "From another client", Content: sdk.Text("hello")})
	require.NoError(t, err)
	b.waitJS("the new chat in the list", titles+`.includes('From another client')`)
	for _, v := range everyView {
		b.at(v)
		if v.phone() {
			b.click(".sidebar-toggle")
			b.waitJS("the open drawer", `document.body.classList.contains('drawer-open')`)
		}
		b.checkLayout(v, ".chat-list .chat-item .chat-title", ".chat-list .chat-item .chat-link")
		b.shot("69-live-sidebar-" + v.name)
		if v.phone() {
			b.do(chromedp.KeyEvent("\x1b"))
			b.waitJS("the closed drawer", `!document.body.classList.contains('drawer-open')`)
		}
	}
	b.desktop()
	title := "Renamed elsewhere"
	require.NoError(t, b.api.UpdateChat(b.ctx, chat.ID, sdk.UpdateChatRequest{Title: &title}))
	b.waitJS("the new title", titles+`.includes('Renamed elsewhere') && !`+titles+`.includes('From another client')`)
	// Pinning elsewhere (another tab, another client) is pushed too.
	pin := int64(1)
	require.NoError(t, b.api.UpdateChat(b.ctx, chat.ID, sdk.UpdateChatRequest{PinOrder: &pin}))
	b.waitJS("the chat pinned", `[...document.querySelectorAll('.chat-group')].some(g => g.querySelector('.group-title').textContent === 'Pinned' && g.textContent.includes('Renamed elsewhere'))`)
	require.NoError(t, b.api.DeleteChat(b.ctx, chat.ID))
	b.waitJS("the chat gone", `!`+titles+`.includes('Renamed elsewhere')`)
	b.checkNoProblems()
}
