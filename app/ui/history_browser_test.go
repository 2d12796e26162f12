package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/demo"
	"github.com/chatd/chatd/app/sdk"
)

// jsRenderedIDs is the ids of the messages in the thread, in page order.
const jsRenderedIDs = `[...document.querySelectorAll('.thread > [data-id]')].map(e => Number(e.dataset.id))`

// seedTurns makes a chat of n turns (a user message and the demo's reply
// each) through the API and returns it with the ids of its messages,
// oldest first. The messages go in batches that wait in the chat's queue
// (each still its own turn), so the test waits for the chat to be idle
// once a batch rather than once a turn.
func seedTurns(t *testing.T, b *browser, n int) (uuid.UUID, []int64) {
	t.Helper()
	ctx := b.ctx
	chat, err := b.api.CreateChat(ctx, sdk.CreateChatRequest{Title: "A long chat", Content: sdk.Text("Question 000 about topic000")})
	require.NoError(t, err)
	idle := func() bool {
		c, err := b.api.Chat(ctx, chat.ID)
		return err == nil && c.Status == sdk.ChatStatusWaiting
	}
	const batch = 15 // under the queue's limit (20)
	for i := 1; i < n; i++ {
		if i%batch == 0 {
			require.Eventually(t, idle, 20*time.Second, 10*time.Millisecond, "the batch before turn %d ends", i)
		}
		_, err := b.api.SendMessage(ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text(fmt.Sprintf("Question %03d about topic%03d", i, i))})
		require.NoError(t, err)
	}
	require.Eventually(t, idle, 20*time.Second, 10*time.Millisecond, "the last turn ends")
	msgs, err := b.api.ChatMessages(ctx, chat.ID, sdk.MessagesOptions{Limit: 500})
	require.NoError(t, err)
	require.False(t, msgs.HasMore)
	ids := make([]int64, 0, len(msgs.Messages))
	for _, m := range msgs.Messages {
		ids = append(ids, m.ID)
	}
	require.Len(t, ids, 2*n)
	return chat.ID, ids
}

// A long chat opens with its newest 100 messages (the stream's
// ?history_limit); scrolling up pages the older ones in from GET
// /messages, in order, each once, with the view kept where it was and
// new messages arriving meanwhile; a search hit older than the window
// loads pages until it is shown; a reload starts over and still pages
// (by the button, from the keyboard).
func TestBrowserHistoryPages(t *testing.T) {
	b := startBrowserWith(t, func(cfg *config.Config) {
		cfg.DemoTokenDelay = demo.NoDelay
		cfg.Worker.CompactThresholdPercent = 100 // no automatic compaction: every message is a turn's
	})
	chatID, ids := seedTurns(t, b, 125) // 250 messages
	chatPath := "/chats/" + chatID.String()
	shown := func() []int64 { return eval[[]int64](b, jsRenderedIDs) }
	button := `document.querySelector('.thread .older-bar button')`

	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)
	b.do(chromedp.Navigate(b.base + chatPath))
	b.waitJS("the newest 100 messages", jsRenderedIDs+`.length === 100 && `+jsIdle)
	require.Equal(t, ids[150:], shown(), "only the stream's window, in order")
	require.True(t, b.conns.upgraded("/api/v2/chats/"+chatID.String()+"/stream"))
	b.waitJS("the view at the bottom", `(() => { const s = document.querySelector('.scroller'); return s.scrollHeight - s.scrollTop - s.clientHeight < 60; })()`)
	require.Equal(t, "Load older messages", eval[string](b, button+`.textContent`))

	// The next page's request is held, so what happens meanwhile can be seen.
	fctx, stopHolding := context.WithCancel(b.ctx)
	defer stopHolding()
	paused := chromedp.Events(fctx, fetch.RequestPaused)
	_, err := chromedp.Call(b.ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{
		{URLPattern: "*/api/v2/chats/*/messages?before_id=*", RequestStage: fetch.RequestStageRequest},
	}})
	require.NoError(t, err)
	// Scrolling to the top asks for the page before the window's first message.
	anchorTop := `document.querySelector('.thread > [data-id="` + fmt.Sprint(ids[150]) + `"]').getBoundingClientRect().top`
	eval[chromedp.Void](b, `document.querySelector('.scroller').scrollTop = 0`)
	var held fetch.EventRequestPaused
	for ev, err := range paused {
		require.NoError(t, err)
		held = ev
		break
	}
	require.Contains(t, held.Request.URL, fmt.Sprintf("before_id=%d&", ids[150]), "the page ends right before the window")
	b.waitJS("the loading indicator", `document.querySelector('.thread .older-bar[role="status"]')?.textContent === 'Loading older messages…'`)
	// The indicator at every size and theme (the held page cannot land
	// meanwhile); the view is back at the top of the desktop layout after.
	b.checkViews(everyView, "80-history-loading", ".thread .older-bar span:not(.spinner)")
	require.Zero(t, eval[float64](b, `document.querySelector('.scroller').scrollTop`))
	before := eval[float64](b, anchorTop)

	// A turn meanwhile streams in at the bottom as usual.
	_, err = b.api.SendMessage(b.ctx, chatID, sdk.CreateChatMessageRequest{Content: sdk.Text("A question while paging")})
	require.NoError(t, err)
	b.waitJS("the new turn", jsRenderedIDs+`.length === 102 && `+jsIdle)
	latest, err := b.api.ChatMessages(b.ctx, chatID, sdk.MessagesOptions{Limit: 2})
	require.NoError(t, err)
	require.Len(t, latest.Messages, 2)
	ids = append(ids, latest.Messages[0].ID, latest.Messages[1].ID)
	require.Equal(t, ids[150:], shown())

	_, err = chromedp.Call(b.ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: held.RequestID})
	require.NoError(t, err)
	_, err = chromedp.Call(b.ctx, fetch.Disable, cdp.Empty{})
	require.NoError(t, err)
	stopHolding()
	b.waitJS("the older page", jsRenderedIDs+`.length === 202`)
	require.Equal(t, ids[50:], shown(), "the page joins the window without a gap or a duplicate")
	require.InDelta(t, before, eval[float64](b, anchorTop), 2, "the message at the top stays where it was")
	require.Greater(t, eval[float64](b, `document.querySelector('.scroller').scrollTop`), 1000.0, "the view did not jump to the new top")

	// Up again: the rest, and nothing more to load.
	eval[chromedp.Void](b, `document.querySelector('.scroller').scrollTop = 0`)
	b.waitJS("the whole chat", jsRenderedIDs+`.length === 252 && !document.querySelector('.thread .older-bar')`)
	require.Equal(t, ids, shown(), "every message once, in order")
	b.shot("81-history-all")

	// A search hit older than the window: pages load until it is in view.
	b.do(chromedp.Navigate(b.base + "/"))
	b.waitJS("the new-chat page", `document.querySelector('.hero')`)
	b.setValue(".search-input", "topic007")
	hit := `document.querySelector('.chat-list a[href="` + chatPath + `?message=` + fmt.Sprint(ids[14]) + `&q=topic007"]')`
	b.waitJS("the search result", hit)
	b.click(`.chat-list a[href*="?message="]`)
	b.waitJS("the highlighted old message", `document.querySelector('.msg-user.search-hit')?.dataset.id === '`+fmt.Sprint(ids[14])+`'`)
	b.waitJS("the match in view", `(() => {
		const s = document.querySelector('.scroller').getBoundingClientRect(), r = document.querySelector('.search-hit .search-mark').getBoundingClientRect();
		return r.bottom > s.top && r.top < s.bottom; })()`)
	got := shown()
	require.Equal(t, ids[len(ids)-len(got):], got, "a contiguous run up to the newest message")
	require.Contains(t, got, ids[14])
	b.shot("82-history-search-jump")

	// A reload starts from the window again; the button (from the
	// keyboard) pages as scrolling does.
	b.do(chromedp.Reload())
	b.waitJS("the newest 100 messages after a reload", jsRenderedIDs+`.length === 100 && `+jsIdle)
	require.Equal(t, ids[152:], shown())
	eval[chromedp.Void](b, button+`.focus()`)
	b.do(chromedp.KeyEvent("\r"))
	b.waitJS("the older page", jsRenderedIDs+`.length === 200`)
	require.Equal(t, ids[52:], shown())
	require.Equal(t, "Load older messages", eval[string](b, `document.activeElement.textContent`), "the focus stays on the button")

	// The button at every size and theme, each on a freshly opened chat
	// (the check scrolls it into view, which then loads the page).
	for _, v := range everyView {
		b.at(v)
		b.do(chromedp.Navigate(b.base + chatPath))
		b.waitJS("the newest 100 messages", jsRenderedIDs+`.length === 100 && `+jsIdle)
		b.checkLayout(v, ".thread .older-bar button")
		b.shot("83-history-top-" + v.name) // the check scrolled there: the page is loading
	}
	b.desktop()

	// Every page in, then a reconnect whose window moved up (two turns
	// while the page was offline): the messages between the old window
	// and the new one are fetched again, nothing is lost or doubled.
	b.do(chromedp.Navigate(b.base + chatPath))
	b.waitJS("the newest 100 messages", jsRenderedIDs+`.length === 100 && `+jsIdle)
	eval[chromedp.Void](b, `document.querySelector('.scroller').scrollTop = 0`)
	b.waitJS("the second page", jsRenderedIDs+`.length === 200 && !document.querySelector('.older-bar[role="status"]')`)
	eval[chromedp.Void](b, `document.querySelector('.scroller').scrollTop = 0`)
	b.waitJS("the whole chat", jsRenderedIDs+`.length === 252 && !document.querySelector('.thread .older-bar')`)
	b.checkNoProblems() // the outage's failed connections are logged from here on
	b.conns.outage(true)
	b.waitJS("the offline status", `!document.querySelector('.conn-pill').hidden`)
	for _, text := range []string{"First while offline", "Second while offline"} {
		_, err := b.api.SendMessage(b.ctx, chatID, sdk.CreateChatMessageRequest{Content: sdk.Text(text)})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			c, err := b.api.Chat(b.ctx, chatID)
			return err == nil && c.Status == sdk.ChatStatusWaiting
		}, 10*time.Second, 2*time.Millisecond)
	}
	b.conns.outage(false)
	// The network is back, as the browser would say, instead of waiting out the back-off.
	eval[chromedp.Void](b, `window.dispatchEvent(new Event('online'))`)
	all := func() []int64 {
		msgs, err := b.api.ChatMessages(b.ctx, chatID, sdk.MessagesOptions{Limit: 500})
		require.NoError(t, err)
		out := make([]int64, 0, len(msgs.Messages))
		for _, m := range msgs.Messages {
			out = append(out, m.ID)
		}
		return out
	}
	ids = all()
	require.Len(t, ids, 256)
	b.waitJS("the reconnected chat, whole", `document.querySelector('.conn-pill').hidden && `+jsIdle+` && `+jsRenderedIDs+`.length === 256`)
	require.Equal(t, ids, shown(), "every message once, in order, after the reconnect")

	// An edit of an old message resets the history: what is shown is the
	// server's history again.
	_, err = b.api.EditMessage(b.ctx, chatID, ids[20], sdk.EditChatMessageRequest{Content: sdk.Text("An edited old question")})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		c, err := b.api.Chat(b.ctx, chatID)
		return err == nil && c.Status == sdk.ChatStatusWaiting
	}, 10*time.Second, 2*time.Millisecond)
	ids = all()
	require.Len(t, ids, 22)
	want, _ := json.Marshal(ids)
	b.waitJS("the history after the edit", `JSON.stringify(`+jsRenderedIDs+`) === '`+string(want)+`' && `+jsIdle)
	require.False(t, eval[bool](b, `!!document.querySelector('.thread .older-bar')`), "nothing older to load")
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		require.Contains(t, p, "WebSocket connection to", "only the outage's failed connections")
	}
}
