package ui_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/app/worker"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// The console rules of spec/durable-messages.txt in the UI: a send whose
// answer was lost is cleared only by its looked-up outcome, shown as a
// saved answer; "Retry same request" appears only after a lookup found no
// admission.

// failPosts makes the page's POSTs to URLs ending in suffix fail with a
// reset connection at stage: RequestStageRequest before the server sees
// them, RequestStageResponse after it answered. The returned func stops it.
func (b *browser) failPosts(suffix string, stage fetch.RequestStage) func() {
	b.t.Helper()
	fctx, stop := context.WithCancel(b.ctx)
	paused := chromedp.Events(fctx, fetch.RequestPaused)
	_, err := chromedp.Call(b.ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{
		{URLPattern: "*/api/v2/*", RequestStage: stage},
	}})
	require.NoError(b.t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev, err := range paused {
			if err != nil {
				return
			}
			if ev.Request.Method == http.MethodPost && strings.HasSuffix(ev.Request.URL, suffix) {
				_, _ = chromedp.Call(b.ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonConnectionReset})
			} else {
				_, _ = chromedp.Call(b.ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
			}
		}
	}()
	return func() {
		_, err := chromedp.Call(b.ctx, fetch.Disable, cdp.Empty{})
		require.NoError(b.t, err)
		stop()
		<-done
	}
}

// watchRetry records in window.__retrySeen whether a "Retry same request"
// button is ever shown on this page.
func (b *browser) watchRetry() {
	b.t.Helper()
	eval[chromedp.Void](b, `(() => { window.__retrySeen = false;
		const check = () => { if ([...document.querySelectorAll('button')].some(e => e.textContent === 'Retry same request')) window.__retrySeen = true; };
		new MutationObserver(check).observe(document.body, {childList: true, subtree: true}); check(); })()`)
}

const jsGhostButtons = `[...document.querySelectorAll('.thread .ghost .ghost-actions .btn')].map(e => e.textContent)`

func TestBrowserConsoleRules(t *testing.T) {
	b := startBrowser(t)
	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)

	t.Run("a send whose answer is lost is settled by its lookup, as a saved answer", func(t *testing.T) {
		b.t = t
		chat, err := b.api.CreateChat(b.ctx, sdk.CreateChatRequest{Title: "Lost answers"})
		require.NoError(t, err)
		b.do(chromedp.Navigate(b.base + "/chats/" + chat.ID.String()))
		b.waitJS("the empty chat", `document.querySelector('.thread .empty-state')`)
		b.watchRetry()

		// The server admits the send; its answer never reaches the page.
		stop := b.failPosts("/messages", fetch.RequestStageResponse)
		b.typeAndSend("Answer lost on the way back")
		b.waitJS("the reply, labelled as a saved answer", jsIdle+` && document.querySelector('.thread .msg-assistant .saved-label')?.textContent === 'Saved answer'`)
		stop()
		b.shot("30-saved-answer")
		require.Equal(t, []string{"Answer lost on the way back"}, eval[[]string](b, jsUserTexts), "one message, sent once")
		require.False(t, eval[bool](b, `window.__retrySeen`), "an admitted request is never offered for retry")
		require.Nil(t, eval[any](b, `sessionStorage.getItem('chatd.pending.`+chat.ID.String()+`')`), "the looked-up outcome cleared the pending send")

		// The label stays across a reload (for this tab).
		b.do(chromedp.Reload())
		b.waitJS("the saved answer after a reload", jsIdle+` && document.querySelectorAll('.thread .msg-assistant .saved-label').length === 1`)
	})

	t.Run("retry same request appears only after the lookup found no admission", func(t *testing.T) {
		b.t = t
		b.watchRetry()
		stop := b.failPosts("/messages", fetch.RequestStageRequest)
		b.typeAndSend("Lost before the server saw it")
		b.waitJS("the unconfirmed message", `document.querySelector('.thread .ghost.unconfirmed')?.textContent.includes('Not confirmed')`)
		stop()
		require.Equal(t, []string{"Check outcome", "Discard"}, eval[[]string](b, jsGhostButtons), "no retry before a lookup")
		b.do(chromedp.Reload())
		b.waitJS("the unconfirmed message after reload", `document.querySelector('.thread .ghost.unconfirmed .bubble')?.textContent === 'Lost before the server saw it'`)
		b.watchRetry()
		require.Equal(t, []string{"Check outcome", "Discard"}, eval[[]string](b, jsGhostButtons), "no retry after a reload either")

		b.clickText(".thread .ghost .btn", "Check outcome")
		b.waitJS("the lookup's answer", `/never received it/.test(document.querySelector('.thread .ghost.unconfirmed')?.textContent)`)
		require.Equal(t, []string{"Check outcome", "Retry same request", "Discard"}, eval[[]string](b, jsGhostButtons))
		b.clickText(".thread .ghost .btn", "Retry same request")
		b.waitJS("the delivered message and its reply", jsIdle+` && document.querySelectorAll('.thread .msg-assistant').length === 2`)
		require.Equal(t, []string{"Answer lost on the way back", "Lost before the server saw it"}, eval[[]string](b, jsUserTexts))
		require.Equal(t, 1, eval[int](b, `document.querySelectorAll('.thread .saved-label').length`), "a fresh answer is not labelled saved")
	})

	t.Run("the new-chat view checks the outcome before offering a retry", func(t *testing.T) {
		b.t = t
		b.do(chromedp.Navigate(b.base + "/"))
		b.waitJS("the new chat page", `document.querySelector('.hero')`)
		stop := b.failPosts("/api/v2/chats", fetch.RequestStageRequest)
		b.typeAndSend("A chat created after a lookup")
		b.waitJS("the unconfirmed new chat", `document.querySelector('.new-status .ghost-status')?.textContent.includes('Not confirmed')`)
		stop()
		buttons := `[...document.querySelectorAll('.new-status .btn')].map(e => e.textContent)`
		require.Equal(t, []string{"Check outcome", "Discard"}, eval[[]string](b, buttons))
		b.clickText(".new-status .btn", "Check outcome")
		b.waitJS("the lookup's answer", `/never received it/.test(document.querySelector('.new-status')?.textContent)`)
		require.Equal(t, []string{"Check outcome", "Retry same request", "Discard"}, eval[[]string](b, buttons))
		b.clickText(".new-status .btn", "Retry same request")
		b.waitJS("the created chat and its reply", `/^\/chats\/[0-9a-f-]{36}$/.test(location.pathname) && `+jsIdle+` && document.querySelectorAll('.thread .msg-assistant').length === 1`)
		require.Equal(t, []string{"A chat created after a lookup"}, eval[[]string](b, jsUserTexts))
	})

	t.Run("a new chat whose answer is lost opens with its saved answer", func(t *testing.T) {
		b.t = t
		b.do(chromedp.Navigate(b.base + "/"))
		b.waitJS("the new chat page", `document.querySelector('.hero')`)
		stop := b.failPosts("/api/v2/chats", fetch.RequestStageResponse)
		b.typeAndSend("A created chat whose answer is lost, " + strings.Repeat("with a long reply ", 20))
		b.waitJS("the unconfirmed new chat", `document.querySelector('.new-status .ghost-status')?.textContent.includes('Not confirmed')`)
		stop()
		buttons := `[...document.querySelectorAll('.new-status .btn')].map(e => e.textContent)`
		require.Equal(t, []string{"Check outcome", "Discard"}, eval[[]string](b, buttons))
		b.clickText(".new-status .btn", "Check outcome")
		b.waitJS("the lookup's answer", `location.pathname !== '/' || document.querySelector('.new-status .in-progress')`)
		if eval[bool](b, `location.pathname === '/'`) {
			// INVOCATION_IN_PROGRESS: the send stays pending and shows
			// progress, with the chat it runs in; no retry.
			require.Equal(t, []string{"Check outcome", "Open chat", "Discard"}, eval[[]string](b, buttons))
			require.Contains(t, eval[string](b, `document.querySelector('.new-status').textContent`), "still working on it")
			chatID := eval[string](b, `JSON.parse(sessionStorage.getItem('chatd.pending.new')).chatId`)
			require.NotEmpty(t, chatID, "the in-progress answer names the chat")
			b.waitJS("the chat to finish", `(() => { const w = window.__idle ||= {}; if (w.done) return true;
				if (!w.busy) { w.busy = true; fetch('/api/v2/chats/`+chatID+`').then(r => r.json()).then(c => { w.done = c.status === 'waiting'; }).finally(() => { w.busy = false; }); }
				return false; })()`)
			b.clickText(".new-status .btn", "Check outcome")
		} else {
			t.Log("the turn was done before the first lookup: no in-progress answer to see")
		}
		b.waitJS("the chat with its saved answer", `/^\/chats\/[0-9a-f-]{36}$/.test(location.pathname) && `+jsIdle+` && document.querySelector('.thread .msg-assistant .saved-label')`)
		require.Len(t, eval[[]string](b, jsUserTexts), 1)
		require.Nil(t, eval[any](b, `sessionStorage.getItem('chatd.pending.new')`))
	})

	b.t = t
	b.checkNoProblems()
}

// switchHandler serves whichever app is current: a restarted chatd on the
// same address and database.
type switchHandler struct{ h atomic.Pointer[http.Handler] }

func (s *switchHandler) set(h http.Handler) { s.h.Store(&h) }
func (s *switchHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	(*s.h.Load()).ServeHTTP(w, r)
}

// A server-side effectful tool call cut short by a crash stops its chat
// for review. The owner sees that the chat waits for an operator review
// (no result editor); an admin records the review from the chat view,
// through the request's reconcile for a durable turn and the tool call's
// for a turn sent without a request id, and the chat continues. The call
// never runs again.
func TestBrowserReviewCard(t *testing.T) {
	chromiumPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := dbtest.NewSQLite(t)
	llm := llmtest.NewOpenAI(t)
	llm.Enqueue(llmtest.ToolCall("call_1", "charge_card", `{"amount":5}`), llmtest.ToolCall("call_1", "charge_card", `{"amount":7}`),
		llmtest.TextChunks("Continued after the review."), llmtest.TextChunks("Continued after the review."))
	var runs atomic.Int32
	started := make(chan struct{}, 4)
	tool := &tools.Func{ToolName: "charge_card", Desc: "Charge a card", EffectClass: store.EffectEffectful,
		Fn: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			runs.Add(1)
			started <- struct{}{}
			<-ctx.Done() // every run is cut short by the crash
			return nil, ctx.Err()
		}}
	conns := &streamConns{}
	front := &switchHandler{}
	var (
		mu         sync.Mutex
		reconciles []string // the reconcile endpoints the page posted to
	)
	srv := httptest.NewServer(conns.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/reconcile") {
			mu.Lock()
			reconciles = append(reconciles, r.URL.Path)
			mu.Unlock()
		}
		front.ServeHTTP(w, r)
	})))
	defer srv.Close()
	start := func() *app.App {
		a, err := app.NewWithStore(ctx, config.Config{
			BootstrapToken: browserToken, OpenAIBaseURL: llm.URL, DefaultModel: "openai/test-model",
			Tools: []tools.Tool{tool},
			Worker: worker.Config{
				BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond, SyncInterval: 50 * time.Millisecond,
				AcquireInterval: 50 * time.Millisecond, HeartbeatInterval: 50 * time.Millisecond, LeaseTimeout: 300 * time.Millisecond,
			},
		}, s, io.Discard)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, a.Close()) }) // the pubsub; the store closes twice harmlessly
		a.SetAdvertiseURL(srv.URL)
		front.set(a.Handler())
		require.NoError(t, a.Start(ctx))
		return a
	}
	first := start()
	ownerToken, _, err := auth.CreateToken(ctx, first.Internals().Store, "olive", false, "test", time.Now())
	require.NoError(t, err)
	owner := sdk.New(srv.URL, ownerToken)

	// Two turns whose tool call runs when the server dies: one durable
	// (request_id), one sent without.
	requestID := uuid.New()
	var durable sdk.CreateChatResponse
	require.NoError(t, owner.Do(ctx, http.MethodPost, "/chats",
		map[string]any{"content": sdk.Text("charge 5"), "request_id": requestID, "title": "Durable charge"}, &durable))
	<-started
	plain, err := owner.CreateChat(ctx, sdk.CreateChatRequest{Title: "Plain charge", Content: sdk.Text("charge 7")})
	require.NoError(t, err)
	<-started
	first.Stop() // the crash: nothing is committed or abandoned
	second := start()
	defer second.Stop()
	conns.cut() // the old server's streams

	b := openTab(t, srv.URL, conns)
	b.do(chromedp.Navigate(b.base + "/login#token=" + ownerToken))
	b.waitJS("the owner signed in", `location.pathname === '/' && document.querySelector('.hero')`)
	review := `document.querySelector('.review-card')`

	t.Run("the owner waits for an operator review", func(t *testing.T) {
		b.t = t
		b.do(chromedp.Navigate(b.base + "/chats/" + durable.ID.String()))
		b.waitJS("the review card", review+`?.textContent.includes('Waiting for an operator review') && document.querySelector('.status-line').textContent === 'Waiting for an operator review'`)
		require.False(t, eval[bool](b, `!!document.querySelector('.review-form, .action-card .json-editor')`), "the owner cannot answer the call")
		require.Contains(t, eval[string](b, review+`.textContent`), "charge_card")
		b.shot("31-review-owner")
	})

	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the admin signed in", `location.pathname === '/' && document.querySelector('.hero')`)
	for _, c := range []struct {
		name, endpoint string
		chatID         uuid.UUID
	}{
		{"a durable turn is reconciled with its request", "/api/v2/requests/" + requestID.String() + "/reconcile", durable.ID},
		{"a turn without a request id is reconciled by its tool call", "/api/v2/chats/" + plain.ID.String() + "/tool-calls/call_1/reconcile", plain.ID},
	} {
		t.Run(c.name, func(t *testing.T) {
			b.t = t
			b.do(chromedp.Navigate(b.base + "/chats/" + c.chatID.String()))
			b.waitJS("the reconcile form", review+`?.querySelector('.review-form') && document.querySelector('.action-slot').childElementCount === 0`)
			b.shot("32-review-admin")
			b.clickText(".review-card .btn", "Record review")
			b.waitJS("the missing assessment", `document.querySelector('.review-card .json-error').textContent.includes('assessment')`)
			b.setValue(".review-assessment", "Charged once; checked with the card processor")
			b.setValue(".review-result", `{"charged": true}`)
			b.clickText(".review-card .btn", "Record review")
			b.waitJS("the chat continued", `!`+review+` && `+jsIdle+` && [...document.querySelectorAll('.thread .msg-assistant')].some(e => e.textContent.includes('Continued after the review.'))`)
			require.Contains(t, eval[string](b, `document.querySelector('.tool-card').textContent`), "charged", "the reviewed result is the call's result")
			mu.Lock()
			posted := reconciles
			reconciles = nil
			mu.Unlock()
			require.Equal(t, []string{c.endpoint}, posted, "the review went to its endpoint, once")
		})
	}
	b.t = t

	var e *sdk.Error
	require.ErrorAs(t, owner.Do(ctx, http.MethodGet, "/requests/"+requestID.String(), nil, nil), &e)
	require.Equal(t, sdk.CodeInvocationReconciled, e.Code, "the request is closed by the review")
	require.Equal(t, int32(2), runs.Load(), "no effectful call ran again")
	b.checkNoProblems()
}
