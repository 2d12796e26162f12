package worker_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/worker"
	"github.com/chatd/chatd/store"
)

// The end-to-end tests run the whole server (app.NewWithStore, the real
// worker, the real providers) over HTTP with the sdk client, against the
// fake OpenAI and Anthropic servers of llmtest, on both stores.

// fastWorker is a worker config whose waits are short enough for tests.
func fastWorker() worker.Config {
	return worker.Config{
		BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond,
		SyncInterval: 50 * time.Millisecond, AcquireInterval: 100 * time.Millisecond,
	}
}

// provider is one LLM wire protocol the app can be pointed at.
type provider struct {
	name      string
	newServer func(t testing.TB, replies ...llmtest.Reply) *llmtest.Server
	// configure points cfg at a server whose root is base.
	configure func(cfg *config.Config, base string)
}

var providers = []provider{
	{
		name:      "openai",
		newServer: llmtest.NewOpenAI,
		configure: func(cfg *config.Config, base string) {
			cfg.OpenAIBaseURL, cfg.OpenAIAPIKey, cfg.DefaultModel = base+"/v1", "test-key", "openai/test-model"
		},
	},
	{
		name:      "anthropic",
		newServer: llmtest.NewAnthropic,
		configure: func(cfg *config.Config, base string) {
			cfg.AnthropicBaseURL, cfg.AnthropicAPIKey, cfg.DefaultModel = base, "test-key", "anthropic/test-model"
		},
	},
}

// fixture is one running chatd over an isolated store, with the chat model's
// fake server (llm) and a separate fake server for title generation
// (titles), so background title calls never consume the chat's script.
type fixture struct {
	t      testing.TB
	ctx    context.Context
	prov   provider
	app    *app.App
	srv    *httptest.Server
	c      *sdk.Client
	llm    *llmtest.Server
	titles *llmtest.Server
	router *router
}

// setup starts chatd on s with the provider's fake servers scripted with
// replies. configure adjusts the config before the app is built.
func setup(t testing.TB, s store.Store, prov provider, replies []llmtest.Reply, configure ...func(*config.Config)) *fixture {
	t.Helper()
	e := &fixture{t: t, ctx: context.Background(), prov: prov}
	e.llm = prov.newServer(t, replies...)
	e.titles = prov.newServer(t)
	e.router = newRouter(t, e.llm, e.titles)
	token := auth.NewToken()
	cfg := config.Config{BootstrapToken: token, Worker: fastWorker()}
	prov.configure(&cfg, e.router.URL)
	for _, fn := range configure {
		fn(&cfg)
	}
	e.start(t, s, cfg)
	e.c = &sdk.Client{BaseURL: e.srv.URL, Token: token, HTTP: e.srv.Client()}
	return e
}

// start builds and starts the app; cleanups stop the server, then the
// worker, then close the app.
func (e *fixture) start(t testing.TB, s store.Store, cfg config.Config) {
	t.Helper()
	a, err := app.NewWithStore(e.ctx, cfg, s, io.Discard)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, a.Close()) })
	require.NoError(t, a.Start(e.ctx))
	t.Cleanup(a.Stop)
	e.app = a
	e.srv = httptest.NewServer(a.Handler())
	t.Cleanup(e.srv.Close)
}

// create starts a chat with one user message and a title (so no title is
// generated unless a test asks for it).
func (e *fixture) create(req sdk.CreateChatRequest) sdk.Chat {
	e.t.Helper()
	if req.Title == "" {
		req.Title = "e2e"
	}
	c, err := e.c.CreateChat(e.ctx, req)
	require.NoError(e.t, err)
	return c
}

func (e *fixture) chat(id uuid.UUID) sdk.Chat {
	e.t.Helper()
	c, err := e.c.Chat(e.ctx, id)
	require.NoError(e.t, err)
	return c
}

// waitStatus polls the chat until it has status.
func (e *fixture) waitStatus(id uuid.UUID, status sdk.ChatStatus) sdk.Chat {
	e.t.Helper()
	var last sdk.Chat
	require.Eventually(e.t, func() bool {
		c, err := e.c.Chat(e.ctx, id)
		if err != nil {
			return false
		}
		last = c
		return c.Status == status
	}, 15*time.Second, 5*time.Millisecond, "chat %s never reached %s", id, status)
	return last
}

// waitUnowned waits until no worker owns the chat (the runner abandoned it).
func (e *fixture) waitUnowned(id uuid.UUID) {
	e.t.Helper()
	require.Eventually(e.t, func() bool { c, ok := peekChat(e.app.Internals().Store, id); return ok && !c.WorkerID.Valid },
		15*time.Second, 5*time.Millisecond, "chat %s stays owned", id)
}

func (e *fixture) messages(id uuid.UUID) []sdk.ChatMessage {
	e.t.Helper()
	resp, err := e.c.ChatMessages(e.ctx, id, sdk.MessagesOptions{Limit: 200})
	require.NoError(e.t, err)
	return resp.Messages
}

// peekChat reads a chat for a polled condition, which runs on another
// goroutine and must not fail the test.
func peekChat(s store.Store, id uuid.UUID) (store.Chat, bool) {
	var c store.Chat
	err := s.ReadTx(context.Background(), func(tx store.Reader) error {
		var err error
		c, err = tx.ChatGet(context.Background(), id)
		return err
	})
	return c, err == nil
}

// peek reads a chat over HTTP for a polled condition.
func (e *fixture) peek(id uuid.UUID) sdk.Chat {
	c, _ := e.c.Chat(e.ctx, id)
	return c
}

func storeChat(t testing.TB, s store.Store, id uuid.UUID) store.Chat {
	t.Helper()
	var c store.Chat
	require.NoError(t, s.ReadTx(context.Background(), func(tx store.Reader) error {
		var err error
		c, err = tx.ChatGet(context.Background(), id)
		return err
	}))
	return c
}

// text joins a message's text parts.
func text(m sdk.ChatMessage) string {
	var b strings.Builder
	for _, p := range m.Content {
		if p.Type == sdk.PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// transcript is the role and text of every message, for comparisons.
func transcript(ms []sdk.ChatMessage) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Role + ": " + text(m)
	}
	return out
}

// waitClosed waits for ch to be closed.
func waitClosed(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(15 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// --- provider requests, decoded in one shape for both wire protocols ---

// wireMsg is one prompt message of a provider request. Anthropic's system
// prompt becomes a leading "system" message.
type wireMsg struct {
	Role        string
	Text        string
	ToolCalls   []string          // ids of tool calls
	ToolResults map[string]string // tool call id -> result text
}

// wireRequest is a decoded provider request.
type wireRequest struct {
	Model    string
	Messages []wireMsg
	Tools    []string
}

func decodeRequest(t testing.TB, r llmtest.Request) wireRequest {
	t.Helper()
	body := r.JSON(t)
	var out wireRequest
	out.Model, _ = body["model"].(string)
	for _, tool := range asList(body["tools"]) {
		m := asMap(tool)
		if fn := asMap(m["function"]); fn != nil {
			m = fn
		}
		name, _ := m["name"].(string)
		out.Tools = append(out.Tools, name)
	}
	if sys := contentText(body["system"]); sys != "" {
		out.Messages = append(out.Messages, wireMsg{Role: "system", Text: sys})
	}
	for _, raw := range asList(body["messages"]) {
		m := asMap(raw)
		w := wireMsg{ToolResults: map[string]string{}}
		w.Role, _ = m["role"].(string)
		w.Text = contentText(m["content"])
		for _, tc := range asList(m["tool_calls"]) { // OpenAI
			id, _ := asMap(tc)["id"].(string)
			w.ToolCalls = append(w.ToolCalls, id)
		}
		if id, ok := m["tool_call_id"].(string); ok { // OpenAI tool message
			w.ToolResults[id] = w.Text
		}
		for _, block := range asList(m["content"]) { // Anthropic blocks
			b := asMap(block)
			switch b["type"] {
			case "tool_use":
				id, _ := b["id"].(string)
				w.ToolCalls = append(w.ToolCalls, id)
			case "tool_result":
				id, _ := b["tool_use_id"].(string)
				w.ToolResults[id] = contentText(b["content"])
			}
		}
		out.Messages = append(out.Messages, w)
	}
	return out
}

// userTexts are the texts of the user messages (tool results excluded).
func (r wireRequest) userTexts() []string {
	var out []string
	for _, m := range r.Messages {
		if m.Role == "user" && m.Text != "" {
			out = append(out, m.Text)
		}
	}
	return out
}

// toolResult finds the result the request carries for a tool call.
func (r wireRequest) toolResult(id string) (string, bool) {
	for _, m := range r.Messages {
		if s, ok := m.ToolResults[id]; ok {
			return s, true
		}
	}
	return "", false
}

func asList(v any) []any         { l, _ := v.([]any); return l }
func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }
func contentText(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, block := range c {
			if m := asMap(block); m["type"] == "text" {
				s, _ := m["text"].(string)
				b.WriteString(s)
			}
		}
		return b.String()
	}
	return ""
}

// --- a router in front of the fake servers ---

// router forwards provider requests to the chat server, and title
// generation requests (recognised by the title instruction) to the titles
// server. A test can hold the next request of either kind at the router
// until it releases it.
type router struct {
	URL string

	chat, titles *url.URL
	mu           sync.Mutex
	holds        map[bool][]*hold // by "is a title request"
}

// hold is one held request.
type hold struct {
	arrived, release, cancelled chan struct{}
	once                        sync.Once
}

// Arrived is closed when the held request reaches the router.
func (h *hold) Arrived() <-chan struct{} { return h.arrived }

// Cancelled is closed when the caller gives up on the held request.
func (h *hold) Cancelled() <-chan struct{} { return h.cancelled }

// Release lets the request through.
func (h *hold) Release() { h.once.Do(func() { close(h.release) }) }

func newRouter(t testing.TB, chat, titles *llmtest.Server) *router {
	t.Helper()
	root := func(s *llmtest.Server) *url.URL {
		u, err := url.Parse(s.URL)
		require.NoError(t, err)
		return &url.URL{Scheme: u.Scheme, Host: u.Host}
	}
	r := &router{chat: root(chat), titles: root(titles), holds: map[bool][]*hold{}}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// Hold holds the next chat-model request.
func (r *router) Hold() *hold { return r.hold(false) }

// HoldTitle holds the next title request.
func (r *router) HoldTitle() *hold { return r.hold(true) }

func (r *router) hold(title bool) *hold {
	h := &hold{arrived: make(chan struct{}), release: make(chan struct{}), cancelled: make(chan struct{})}
	r.mu.Lock()
	r.holds[title] = append(r.holds[title], h)
	r.mu.Unlock()
	return h
}

func (r *router) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	title := bytes.Contains(body, []byte("Write a short title"))
	r.mu.Lock()
	var h *hold
	if q := r.holds[title]; len(q) > 0 {
		h, r.holds[title] = q[0], q[1:]
	}
	r.mu.Unlock()
	if h != nil {
		close(h.arrived)
		select {
		case <-h.release:
		case <-req.Context().Done():
			close(h.cancelled)
			return
		}
	}
	target := r.chat
	if title {
		target = r.titles
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		FlushInterval: -1,
		// A cancelled upstream call (an interrupt) is expected; stay quiet.
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) },
	}
	proxy.ServeHTTP(w, req)
}

// serveApp starts a (as app.New returned it, with err) on runCtx, serves
// its handler and returns a client with token; the test's cleanup stops,
// closes and unserves it.
func serveApp(t *testing.T, runCtx context.Context, token string, a *app.App, err error) *sdk.Client {
	t.Helper()
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, a.Close()) })
	require.NoError(t, a.Start(runCtx))
	t.Cleanup(a.Stop)
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	return &sdk.Client{BaseURL: srv.URL, Token: token, HTTP: srv.Client()}
}
