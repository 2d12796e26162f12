package ui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store/dbtest"
)

// The browser suite drives the real UI in headless Chromium against an
// in-process chatd (SQLite, the demo model streaming a token every few
// milliseconds). One browser tab walks through the scenarios in order;
// each one starts from the page the previous one left. Screenshots go to
// $CHATD_TEST_ARTIFACTS (a temp dir when unset).

const (
	browserToken = "browser-test-token"
	tokenDelay   = 6 * time.Millisecond
	stepTimeout  = 20 * time.Second
)

// chromiumPath finds the browser; without one the suite skips, except
// under CI=true, where a skip would hide a broken setup.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found: the browser tests must run in CI (apt-get install chromium)")
	}
	t.Skip("chromium not found (apt-get install chromium): skipping the browser tests")
	return ""
}

// artifactsDir is where screenshots go: $CHATD_TEST_ARTIFACTS, relative
// paths taken from the module root, or a temp dir.
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("CHATD_TEST_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	if !filepath.IsAbs(dir) {
		root, err := moduleRoot()
		require.NoError(t, err)
		dir = filepath.Join(root, dir)
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// browser is one tab on a running chatd.
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string
	dir  string
	api  *sdk.Client
	// conns are the server side of the page's WebSockets, so a test can
	// cut them as a network failure would.
	conns *streamConns

	mu       sync.Mutex
	problems []string // uncaught exceptions and console errors
}

func startBrowser(t *testing.T) *browser {
	t.Helper()
	return startBrowserWith(t, nil)
}

// startBrowserWith is startBrowser with configure (when not nil) changing
// the app's configuration first.
func startBrowserWith(t *testing.T, configure func(*config.Config)) *browser {
	t.Helper()
	chromiumPath(t) // skip (or fail in CI) before starting anything
	ctx := context.Background()

	// The app: SQLite, the demo model, short retry back-off.
	cfg := config.Config{BootstrapToken: browserToken, DemoTokenDelay: tokenDelay}
	cfg.Worker.BackoffBase = 1500 * time.Millisecond
	if configure != nil {
		configure(&cfg)
	}
	a, err := app.NewWithStore(ctx, cfg, dbtest.NewSQLite(t), io.Discard)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, a.Close()) })
	conns := &streamConns{}
	srv := httptest.NewServer(conns.wrap(a.Handler()))
	t.Cleanup(srv.Close)
	a.SetAdvertiseURL(srv.URL)
	appCtx, stopApp := context.WithCancel(ctx)
	require.NoError(t, a.Start(appCtx))
	t.Cleanup(func() { stopApp(); a.Stop() })
	return openTab(t, srv.URL, conns)
}

// The package's tests share one Chromium: starting one costs seconds on a
// busy machine, and every test used to start its own. Each test gets a
// tab in a browser context of its own (cookies, storage and cache apart,
// as in a fresh profile), closed when the test ends; TestMain stops the
// browser after the last test.
var chromium struct {
	mu   sync.Mutex
	ctx  context.Context // the browser's first tab, never used for a page
	stop func()
	dir  string
}

// sharedChromium starts the package's Chromium on first use.
func sharedChromium(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	chromium.mu.Lock()
	defer chromium.mu.Unlock()
	if chromium.ctx != nil {
		return chromium.ctx
	}
	dir, err := os.MkdirTemp("", "chatd-ui-chromium-")
	require.NoError(t, err)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(1280, 860),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	if err := chromedp.Do(browserCtx); err != nil {
		cancelBrowser()
		cancelAlloc()
		_ = os.RemoveAll(dir)
		require.NoError(t, err, "start chromium")
	}
	chromium.ctx, chromium.dir = browserCtx, dir
	chromium.stop = func() { cancelBrowser(); cancelAlloc() }
	return browserCtx
}

// stopChromium ends the shared browser (TestMain, after the tests).
func stopChromium() {
	chromium.mu.Lock()
	defer chromium.mu.Unlock()
	if chromium.stop != nil {
		chromium.stop()
		_ = os.RemoveAll(chromium.dir)
		chromium.ctx, chromium.stop = nil, nil
	}
}

// openTab opens a tab, in a browser context of its own, on the chatd at
// base; conns records its server's WebSockets.
func openTab(t *testing.T, base string, conns *streamConns) *browser {
	t.Helper()
	tabCtx, cancelTab := chromedp.NewContext(sharedChromium(t), chromedp.WithNewBrowserContext())
	t.Cleanup(cancelTab)
	require.NoError(t, chromedp.Do(tabCtx), "open a tab")

	b := &browser{t: t, ctx: tabCtx, base: base, dir: artifactsDir(t), api: sdk.New(base, browserToken), conns: conns}
	messages := chromedp.Console(tabCtx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			// Chromium logs failed API requests; the UI handles them (a
			// signed-out visit's 401, a cut connection, a lookup's 404).
			// A missing asset still counts.
			expected := strings.Contains(m.String(), "Failed to load resource") && strings.Contains(m.URL, "/api/")
			if m.IsException() || m.Type == "error" && !expected {
				b.mu.Lock()
				b.problems = append(b.problems, fmt.Sprintf("%s:%d %s", m.URL, m.Line+1, m))
				b.mu.Unlock()
			}
		}
	}()
	b.do(chromedp.EmulateViewport(1280, 860))
	return b
}

// streamConns records hijacked (WebSocket) connections, and can make the
// server unreachable for the browser: while down, every request without an
// Authorization header (the page's: it signs in with its cookie; the
// test's SDK client sends a bearer token and still gets through) has its
// connection closed without an answer, as a network failure would.
type streamConns struct {
	mu    sync.Mutex
	conns []net.Conn
	paths []string // every WebSocket upgrade's path, in order
	down  atomic.Bool
}

func (s *streamConns) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.down.Load() && r.Header.Get("Authorization") == "" {
			if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
				_ = c.Close()
			}
			return
		}
		if r.Header.Get("Upgrade") != "" {
			s.mu.Lock()
			s.paths = append(s.paths, r.URL.Path)
			s.mu.Unlock()
		}
		next.ServeHTTP(&hijackRecorder{ResponseWriter: w, conns: s}, r)
	})
}

// upgraded reports whether a WebSocket was opened on path.
func (s *streamConns) upgraded(path string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.paths, path)
}

// outage makes the server unreachable (true) or reachable again (false);
// going down also cuts the open streams.
func (s *streamConns) outage(down bool) {
	s.down.Store(down)
	if down {
		s.cut()
	}
}

// cut closes every recorded connection.
func (s *streamConns) cut() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.conns)
	for _, c := range s.conns {
		_ = c.Close()
	}
	s.conns = nil
	return n
}

type hijackRecorder struct {
	http.ResponseWriter
	conns *streamConns
}

func (w *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.conns.mu.Lock()
		w.conns.conns = append(w.conns.conns, c)
		w.conns.mu.Unlock()
	}
	return c, rw, err
}

func (w *hijackRecorder) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

// do runs actions with the step timeout.
func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	require.NoError(b.t, chromedp.Do(ctx, actions...))
}

// eval evaluates a JS expression in the page and decodes its value.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	require.NoError(b.t, err, "evaluate %s", expr)
	return v
}

// waitJS waits until expr is truthy.
func (b *browser) waitJS(what, expr string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool]("!!("+expr+")", chromedp.WithPollingInterval(10*time.Millisecond)))
	if err != nil {
		b.shot("failed-" + strings.ReplaceAll(b.t.Name(), "/", "-"))
		require.NoError(b.t, err, "waiting for %s (%s)", what, expr)
	}
}

func (b *browser) shot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	path := filepath.Join(b.dir, name+".png")
	require.NoError(b.t, os.WriteFile(path, png, 0o644))
}

// scheme switches prefers-color-scheme.
func (b *browser) scheme(value string) {
	b.t.Helper()
	b.do(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: value}},
		})
		return err
	}))
}

// typeAndSend puts text in the composer as typing would and presses Enter.
func (b *browser) typeAndSend(text string) {
	b.t.Helper()
	b.waitJS("the composer", `document.querySelector('#composer-input')`)
	eval[chromedp.Void](b, `(() => { const ta = document.querySelector('#composer-input'); ta.focus();
		ta.value = `+jsString(text)+`; ta.dispatchEvent(new Event('input', {bubbles: true})); })()`)
	b.do(pressEnter)
}

// pressEnter is the Enter key without the extra char event of
// chromedp.KeyEvent (which a textarea would take as a second newline).
var pressEnter = chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
	for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeRawKeyDown, input.DispatchKeyEventTypeKeyUp} {
		_, err := cdp.Call(ctx, t, input.DispatchKeyEvent, input.DispatchKeyEventParams{
			Type: typ, Key: "Enter", Code: "Enter", WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13,
		})
		if err != nil {
			return err
		}
	}
	return nil
})

// clickText clicks the element matching css whose text contains text, with
// a real mouse click.
func (b *browser) clickText(css, text string) {
	b.t.Helper()
	b.clickJS("an element "+css+" with "+text,
		`[...document.querySelectorAll(`+jsString(css)+`)].find(e => e.textContent.includes(`+jsString(text)+`))`)
}

// click clicks the element css matches, with a real mouse click.
func (b *browser) click(css string) {
	b.t.Helper()
	b.clickJS("the element "+css, `document.querySelector(`+jsString(css)+`)`)
}

// clickJS clicks, with a real mouse click, the element the expression
// target finds, once the element can take a click: enabled, not in a
// settings section still loading, and where it was at the previous look
// (a load above it moves it, and a click aimed at the old place lands
// elsewhere). A render may replace the element between finding it and the
// click; the click then finds no mark and the element is looked for again.
func (b *browser) clickJS(what, target string) {
	b.t.Helper()
	deadline := time.Now().Add(stepTimeout)
	for {
		eval[chromedp.Void](b, `window.testClickAt = null`)
		b.waitJS(what, `(() => { const e = `+target+`;
			if (!e || e.disabled || e.closest('.set-section[aria-busy="true"]')) return false;
			const r = e.getBoundingClientRect(), at = [r.x, r.y, r.width, r.height].join();
			const still = window.testClickAt === at; window.testClickAt = at; return still; })()`)
		eval[chromedp.Void](b, `(() => { document.querySelectorAll('[data-test-click]').forEach(e => e.removeAttribute('data-test-click'));
			const e = `+target+`; if (e) e.dataset.testClick = '1'; })()`)
		ctx, cancel := context.WithTimeout(b.ctx, time.Second)
		err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-test-click]`)))
		cancel()
		if err == nil {
			return
		}
		if b.ctx.Err() != nil || time.Now().After(deadline) {
			require.NoError(b.t, err, "clicking %s", what)
		}
	}
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	x, _ := json.Marshal(s)
	return string(x)
}

// setValue sets a field's value as typing would (input and change events),
// once the field takes typing (not disabled).
func (b *browser) setValue(css, value string) {
	b.t.Helper()
	c, v := jsString(css), jsString(value)
	b.waitJS("the field "+css, `document.querySelector(`+c+`) && !document.querySelector(`+c+`).disabled`)
	eval[chromedp.Void](b, `(() => { const el = document.querySelector(`+c+`); el.focus(); el.value = `+v+`;
		el.dispatchEvent(new Event('input', {bubbles: true})); el.dispatchEvent(new Event('change', {bubbles: true})); })()`)
}

// chatMenu opens the sidebar menu of the chat whose title contains title.
func (b *browser) chatMenu(title string) {
	b.t.Helper()
	find := `[...document.querySelectorAll('.chat-list .chat-item')].find(e => e.textContent.includes(` + jsString(title) + `))`
	b.clickJS("the chat "+title+" in the sidebar", find+`?.querySelector('.chat-menu-btn')`)
	b.waitJS("the chat menu", `document.querySelector('.menu')`)
}

func (b *browser) checkNoProblems() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	require.Empty(b.t, b.problems, "console errors or uncaught exceptions in the page")
}

// forgetProblems drops the console errors so far: a scenario that ends on
// a page that logs one on purpose leaves the next a clean slate.
func (b *browser) forgetProblems() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.problems = nil
}

// js snippets shared by the scenarios.
const (
	jsUserTexts      = `[...document.querySelectorAll('.thread .msg-user:not(.ghost) .bubble')].map(e => e.textContent)`
	jsAssistantTexts = `[...document.querySelectorAll('.thread .msg-assistant:not(.streaming):not(.typing)')].map(e => e.textContent)`
	jsIdle           = `document.querySelector('.status-line')?.textContent === '' && document.querySelector('.stop-btn')?.hidden && !document.querySelector('.thread .streaming, .thread .typing, .thread .ghost')`
	jsPreviewLen     = `(document.querySelector('.thread .streaming') || {textContent: ''}).textContent.length`
)

func TestBrowser(t *testing.T) {
	start := time.Now()
	b := startBrowser(t)
	var firstChat string // the path of the first chat, shown again in other themes

	t.Run("login with the link's token", func(t *testing.T) {
		b.t = t
		b.do(chromedp.Navigate(b.base + "/chats/00000000-0000-4000-8000-000000000001"))
		b.waitJS("the login page for a signed-out visitor", `location.pathname === '/login' && document.querySelector('#token')`)
		b.shot("00-login")
		b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
		b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.sidebar') && document.querySelector('.hero')`)
		require.Empty(t, eval[string](b, `location.hash`), "the token must leave the address bar")
		require.NotContains(t, eval[string](b, `document.cookie`), "chatd_session", "the session cookie must be HttpOnly")
		b.waitJS("the model picker", `document.querySelector('.picker').options.length > 0`)
		b.shot("01-new-chat")
	})

	t.Run("new chat streams a reply that is then committed", func(t *testing.T) {
		b.t = t
		b.typeAndSend("Tell me how durable chats work")
		b.waitJS("the chat page", `/^\/chats\/[0-9a-f-]{36}$/.test(location.pathname)`)
		firstChat = eval[string](b, `location.pathname`)
		b.waitJS("the user message", `document.querySelector('.thread .msg-user .bubble')`)
		b.waitJS("a streaming preview", jsPreviewLen+` > 20`)
		first := eval[int](b, jsPreviewLen)
		b.waitJS("the preview to grow", fmt.Sprintf(`%s > %d || !document.querySelector('.thread .streaming')`, jsPreviewLen, first+30))
		b.shot("02-streaming")
		b.waitJS("the committed reply", jsIdle+` && document.querySelectorAll('.thread .msg-assistant').length === 1`)
		require.Equal(t, []string{"Tell me how durable chats work"}, eval[[]string](b, jsUserTexts))
		reply := eval[[]string](b, jsAssistantTexts)
		require.Len(t, reply, 1)
		require.Contains(t, reply[0], "demo model")
		require.Contains(t, reply[0], "retried failure", "the whole reply is committed")
		require.True(t, eval[bool](b, `!!document.querySelector('.thread .codeblock .tok-keyword, .thread .codeblock .tok-string')`), "code is highlighted")
		require.True(t, eval[bool](b, `!!document.querySelector('.thread blockquote') && !!document.querySelector('.thread .md li strong')`), "markdown is rendered")
		b.waitJS("the chat in the sidebar", `document.querySelectorAll('.chat-list .chat-item').length === 1`)
		b.shot("03-reply")
	})

	t.Run("stop keeps the partial reply", func(t *testing.T) {
		b.t = t
		// The earlier question's node lives through the turn (a turn
		// starting and ending rebuilds only what shows it).
		eval[chromedp.Void](b, `document.querySelector('.thread .msg-user').dataset.testKept = '1'`)
		b.typeAndSend(strings.Repeat("Please write a long answer about streaming. ", 6))
		b.waitJS("a streaming preview", jsPreviewLen+` > 40`)
		b.waitJS("the Stop button", `!document.querySelector('.stop-btn').hidden`)
		b.click(".stop-btn")
		b.waitJS("the interrupted chat to settle", jsIdle+` && document.querySelectorAll('.thread .msg-assistant').length === 2`)
		require.True(t, eval[bool](b, `document.querySelector('.thread .msg-user').dataset.testKept === '1'`), "the first question was not rebuilt")
		reply := eval[[]string](b, jsAssistantTexts)
		require.Len(t, reply, 2)
		require.Contains(t, reply[1], "demo model", "the partial text is kept")
		require.NotContains(t, reply[1], "retried failure", "the reply was cut short")
	})

	t.Run("a message sent while running is queued and drains", func(t *testing.T) {
		b.t = t
		b.typeAndSend("First question, answered at length: " + strings.Repeat("words ", 30))
		b.waitJS("the chat to run", `!document.querySelector('.stop-btn').hidden`)
		b.typeAndSend("Second question waits in the queue")
		b.waitJS("the queue chip", `[...document.querySelectorAll('.queue-chip')].some(e => e.textContent.includes('Second question waits'))`)
		b.shot("04-queue")
		b.waitJS("the queue to drain", `document.querySelector('.queue').hidden && `+jsIdle+
			` && document.querySelectorAll('.thread .msg-assistant').length === 4`)
		users := eval[[]string](b, jsUserTexts)
		require.Len(t, users, 4)
		require.Equal(t, "Second question waits in the queue", users[3])
		replies := eval[[]string](b, jsAssistantTexts)
		require.Contains(t, replies[3], "Second question waits in the queue")
	})

	t.Run("edit a user message and rerun", func(t *testing.T) {
		b.t = t
		eval[chromedp.Void](b, `[...document.querySelectorAll('.thread .msg-user')].pop().dataset.testLast = 'yes'`)
		b.click(`.thread .msg-user[data-test-last] button[aria-label="Edit message"]`)
		b.waitJS("the inline editor", `document.querySelector('.thread .edit-input')`)
		eval[chromedp.Void](b, `(() => { const ta = document.querySelector('.thread .edit-input');
			ta.value = 'An edited question about queues'; ta.dispatchEvent(new Event('input', {bubbles: true})); })()`)
		b.shot("05-editing")
		b.click(".thread .edit-box .btn.primary")
		b.waitJS("the rerun reply", jsIdle+` && [...document.querySelectorAll('.thread .msg-assistant')].some(e => e.textContent.includes('An edited question about queues'))`)
		users := eval[[]string](b, jsUserTexts)
		require.Len(t, users, 4)
		require.Equal(t, "An edited question about queues", users[3])
		require.Len(t, eval[[]string](b, jsAssistantTexts), 4, "the old reply is replaced, not kept beside the new one")
	})

	t.Run("reload mid-stream restores the state without duplicates", func(t *testing.T) {
		b.t = t
		b.typeAndSend("Reload while this streams " + strings.Repeat("please ", 25))
		b.waitJS("a streaming preview", jsPreviewLen+` > 30`)
		b.do(chromedp.Reload())
		b.waitJS("the restored conversation", `document.querySelectorAll('.thread .msg-user').length === 5`)
		b.waitJS("the reply to finish", jsIdle+` && document.querySelectorAll('.thread .msg-assistant').length === 5`)
		users := eval[[]string](b, jsUserTexts)
		require.Len(t, users, 5)
		require.True(t, strings.HasPrefix(users[4], "Reload while this streams"))
		replies := eval[[]string](b, jsAssistantTexts)
		require.Len(t, replies, 5)
		require.Equal(t, 1, strings.Count(replies[4], "Hello! I'm chatd's"), "the reply appears once")
		require.True(t, eval[bool](b, `(() => { const ids = [...document.querySelectorAll('.thread [data-id]')].map(e => e.dataset.id); return ids.length === new Set(ids).size; })()`))
		b.shot("06-after-reload")
	})

	t.Run("injected HTML never executes", func(t *testing.T) {
		b.t = t
		b.do(chromedp.Navigate(b.base + "/"))
		b.typeAndSend(`<img src=x onerror="window.__xss=1"> <script>window.__xss=2</script> [click me](javascript:window.__xss=3) **bold**`)
		b.waitJS("the reply", jsIdle+` && document.querySelectorAll('.thread .msg-assistant').length === 1`)
		require.True(t, eval[bool](b, `window.__xss === undefined`))
		require.Equal(t, 0, eval[int](b, `document.querySelectorAll('.thread img, .thread script, .thread iframe, .thread a[href^="javascript"], .thread [onerror]').length`))
		require.Contains(t, eval[string](b, `document.querySelector('.thread .msg-user .bubble').textContent`), `<img src=x onerror=`)
		require.Contains(t, eval[string](b, `document.querySelector('.thread .msg-assistant blockquote').textContent`), `<script>`)
		// The renderer itself on hostile input: web/test/markdown.test.mjs.
	})

	t.Run("hostile code labels and deep nesting still render", func(t *testing.T) {
		b.t = t
		// Through the real thread: the demo model quotes the message, so its
		// reply carries both fences and must render past them.
		b.do(chromedp.Navigate(b.base + "/"))
		b.typeAndSend("```constructor\nx = 1\n```\n\n```__proto__\ny = 2\n```\n\nafter the hostile blocks")
		b.waitJS("the reply", jsIdle+` && document.querySelectorAll('.thread .msg-assistant').length === 1`)
		reply := eval[[]string](b, jsAssistantTexts)
		require.Len(t, reply, 1)
		require.Contains(t, reply[0], "after the hostile blocks")
		require.Contains(t, reply[0], "A few facts about your message", "the reply renders past the quoted blocks")
		require.Equal(t, []string{"constructor", "__proto__"}, eval[[]string](b,
			`[...document.querySelectorAll('.thread .msg-assistant blockquote .codeblock-lang')].map(e => e.textContent)`))
		b.shot("06b-hostile-labels")

		// The renderer on every hostile label and deep nesting: web/test/markdown.test.mjs.
	})

	t.Run("retry countdown, error banner, tool result", func(t *testing.T) {
		b.t = t
		// A provider that fails once, then recovers: the retry line counts down.
		b.do(chromedp.Navigate(b.base + "/"))
		b.typeAndSend("/error overloaded 1")
		b.waitJS("the retry line", `document.querySelector('.status-line.retry') && /Provider overloaded — retrying in \d+ s \(attempt 2\)/.test(document.querySelector('.status-line').textContent)`)
		b.shot("07-retry")
		b.waitJS("the recovered reply", jsIdle+` && document.querySelector('.thread .msg-assistant')`)

		// A non-retryable error: the banner names it and offers a way out.
		b.typeAndSend("/error auth")
		b.waitJS("the error banner", `document.querySelector('.error-banner')`)
		require.Empty(t, eval[string](b, `document.querySelector('.status-line').textContent`), "no status line repeating Error above the banner")
		require.Contains(t, eval[string](b, `document.querySelector('.error-banner').textContent`), "Authentication failed")
		require.Empty(t, eval[[]string](b, `[...document.querySelectorAll('.error-banner button')].map(e => e.textContent).filter(t => t === '/compact' || t === '/clear')`),
			"no /compact or /clear for an auth error")
		b.shot("08-error")

		// A dynamic tool: the action card takes the result.
		chat, err := b.api.CreateChat(b.ctx, sdk.CreateChatRequest{
			Content: []sdk.ChatMessagePart{{Type: sdk.PartText, Text: `/tool lookup {"city": "Lisbon", "units": "metric"}`}},
			UnsafeDynamicTools: []sdk.DynamicTool{{Name: "lookup", Description: "Look up the weather",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}},
		})
		require.NoError(t, err)
		b.do(chromedp.Navigate(b.base + "/chats/" + chat.ID.String()))
		b.waitJS("the action card", `document.querySelector('.action-card .json-editor') && /left/.test(document.querySelector('.deadline').textContent)`)
		b.waitJS("the status line", `document.querySelector('.status-line').textContent === 'Waiting for your tool result'`)
		eval[chromedp.Void](b, `(() => { const ta = document.querySelector('.action-card .json-editor');
			ta.value = '{"temperature": 21, "sky": "clear"}'; ta.dispatchEvent(new Event('input', {bubbles: true})); })()`)
		b.shot("09-action-required")
		b.click(".action-card .btn.primary")
		b.waitJS("the tool card and the answer", jsIdle+` && document.querySelector('.tool-card .state-ok') && [...document.querySelectorAll('.thread .msg-assistant')].some(e => e.textContent.includes('temperature'))`)
		b.shot("10-tool-done")
	})

	t.Run("reconnect mid-stream, jump to latest, draft", func(t *testing.T) {
		b.t = t
		b.do(chromedp.Navigate(b.base + firstChat))
		b.waitJS("the conversation", jsIdle+` && document.querySelectorAll('.thread .msg-assistant').length === 5`)
		b.typeAndSend("Keep streaming through a network failure " + strings.Repeat("again ", 30))
		b.waitJS("a streaming preview", jsPreviewLen+` > 30`)
		eval[chromedp.Void](b, `document.querySelector('.scroller').scrollTop = 0`)
		b.waitJS("the Jump to latest button", `!document.querySelector('.jump-btn').hidden`)
		require.Positive(t, b.conns.cut(), "no stream connection to cut")
		b.waitJS("the Reconnecting pill", `!document.querySelector('.conn-pill').hidden`)
		b.shot("16-reconnecting")
		b.click(".jump-btn")
		b.waitJS("the view at the bottom", `(() => { const s = document.querySelector('.scroller'); return s.scrollHeight - s.scrollTop - s.clientHeight < 60; })()`)
		b.waitJS("the reconnected, finished reply", `document.querySelector('.conn-pill').hidden && `+jsIdle+` && document.querySelectorAll('.thread .msg-assistant').length === 6`)
		replies := eval[[]string](b, jsAssistantTexts)
		require.Len(t, replies, 6)
		require.Equal(t, 1, strings.Count(replies[5], "Hello! I'm chatd's"), "the reply appears once")
		require.Contains(t, replies[5], "retried failure")
		require.Len(t, eval[[]string](b, jsUserTexts), 6)

		// The composer's draft survives a reload.
		b.setValue("#composer-input", "a draft I have not sent")
		b.waitJS("the saved draft", `localStorage.getItem('chatd.draft.' + location.pathname.slice('/chats/'.length)) === '"a draft I have not sent"'`)
		b.do(chromedp.Reload())
		b.waitJS("the restored draft", `document.querySelector('#composer-input')?.value === 'a draft I have not sent'`)
		b.setValue("#composer-input", "")
	})

	t.Run("slash commands: clear, compact, title", func(t *testing.T) {
		b.t = t
		b.setValue("#composer-input", "/")
		b.waitJS("the command popup", `!document.querySelector('.slash-popup').hidden && document.querySelectorAll('.slash-item').length === 3`)
		b.shot("17-slash-popup")
		b.setValue("#composer-input", "/clear")
		b.do(pressEnter)
		b.waitJS("the clear boundary", `[...document.querySelectorAll('.thread .divider')].some(e => e.textContent.includes('Context cleared'))`)
		b.typeAndSend("A fresh start after the clear")
		b.waitJS("the reply", jsIdle+` && [...document.querySelectorAll('.thread .msg-assistant')].some(e => e.textContent.includes('A fresh start after the clear'))`)
		b.typeAndSend("/compact")
		b.waitJS("the compaction boundary", jsIdle+` && [...document.querySelectorAll('.thread .divider')].some(e => e.textContent.includes('Context summarized'))`)
		b.typeAndSend("/title Durable chats")
		b.waitJS("the new title", `document.querySelector('.chat-title-h').textContent === 'Durable chats'`)
		require.Empty(t, eval[[]string](b, `[...document.querySelectorAll('.thread .msg-user .bubble')].map(e => e.textContent).filter(t => t.startsWith('/'))`),
			"commands are not sent as messages")
		b.shot("18-boundaries")
	})

	t.Run("reasoning shows as a Thinking block", func(t *testing.T) {
		b.t = t
		b.do(chromedp.Navigate(b.base + "/"))
		b.waitJS("the effort picker", `document.querySelector('.picker.effort')`)
		b.setValue(".picker.effort", "low")
		b.typeAndSend("Think before you answer")
		b.waitJS("the reply with its reasoning", jsIdle+` && document.querySelector('.thread .msg-assistant .thinking')`)
		require.Regexp(t, `^(Thought for \d+ s|Thoughts)$`, eval[string](b, `document.querySelector('.thread .thinking summary').textContent`))
		require.False(t, eval[bool](b, `document.querySelector('.thread .thinking').open`), "reasoning starts collapsed")
		b.click(".thread .thinking summary")
		b.shot("19-thinking")
		b.setValue(".picker.effort", "")
	})

	t.Run("sidebar: search, pin, rename, archive, delete, labels", func(t *testing.T) {
		b.t = t
		b.do(chromedp.Navigate(b.base + "/"))
		b.waitJS("the chat list", `document.querySelectorAll('.chat-list .chat-item').length >= 5`)
		b.do(chromedp.KeyEvent("k", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
		b.waitJS("the focused search box", `document.activeElement === document.querySelector('.search-input')`)
		b.setValue(".search-input", "durable")
		b.waitJS("the filtered list", `document.querySelectorAll('.chat-list .chat-item').length === 1`)
		b.setValue(".search-input", "")
		b.waitJS("the whole list", `document.querySelectorAll('.chat-list .chat-item').length >= 5`)

		b.chatMenu("Durable chats")
		b.shot("20-chat-menu")
		b.clickText(".menu .menu-item", "Pin")
		b.waitJS("the Pinned group", `[...document.querySelectorAll('.chat-group')].some(g => g.querySelector('.group-title').textContent === 'Pinned' && g.textContent.includes('Durable chats'))`)

		b.chatMenu("Durable chats")
		b.clickText(".menu .menu-item", "Rename")
		b.waitJS("the rename field", `document.activeElement === document.querySelector('.rename-input')`)
		b.setValue(".rename-input", "Durable chats, renamed")
		// Another chat's title changing redraws the list; what is typed stays.
		other := eval[[]string](b, `(() => { const e = document.querySelector('.chat-list .chat-item:not(.renaming)'); return [e.dataset.id, e.querySelector('.chat-title').textContent]; })()`)
		for _, title := range []string{other[1] + " (moved)", other[1]} {
			require.NoError(t, b.api.Do(b.ctx, http.MethodPatch, "/chats/"+other[0], map[string]string{"title": title}, nil))
			b.waitJS("the other chat's title", `document.querySelector('.chat-list .chat-item[data-id="`+other[0]+`"] .chat-title')?.textContent === `+jsString(title))
		}
		require.True(t, eval[bool](b, `document.querySelector('.rename-input').value === 'Durable chats, renamed' && document.activeElement === document.querySelector('.rename-input')`),
			"the rename field keeps its text and focus through a redraw")
		b.do(pressEnter)
		b.waitJS("the renamed chat", `[...document.querySelectorAll('.chat-list .chat-title')].some(e => e.textContent === 'Durable chats, renamed')`)

		b.chatMenu("/error overloaded")
		b.clickText(".menu .menu-item", "Archive")
		b.waitJS("the chat gone from the list", `![...document.querySelectorAll('.chat-list .chat-item')].some(e => e.textContent.includes('/error overloaded'))`)
		b.clickText(".side-btn", "Archived")
		b.waitJS("the archived chat", `[...document.querySelectorAll('.chat-list .chat-item')].some(e => e.textContent.includes('/error overloaded'))`)
		b.chatMenu("/error overloaded")
		b.clickText(".menu .menu-item", "Unarchive")
		b.waitJS("an empty archive", `document.querySelector('.side-empty')?.textContent === 'No archived chats.'`)
		b.clickText(".side-btn", "Back to chats")
		b.waitJS("the chat back in the list", `[...document.querySelectorAll('.chat-list .chat-item')].some(e => e.textContent.includes('/error overloaded'))`)

		b.chatMenu("Think before")
		b.clickText(".menu .menu-item", "Delete")
		b.waitJS("the confirmation", `document.querySelector('dialog[open]')`)
		b.shot("21-delete-dialog")
		b.clickText("dialog[open] .btn", "Delete")
		b.waitJS("the deleted chat gone", `![...document.querySelectorAll('.chat-list .chat-item')].some(e => e.textContent.includes('Think before'))`)

		_, err := b.api.CreateChat(b.ctx, sdk.CreateChatRequest{Title: "Labelled chat", Labels: map[string]string{"team": "core"}})
		require.NoError(t, err)
		b.do(chromedp.Reload())
		b.waitJS("the label filter", `[...document.querySelectorAll('.label-filter option')].some(o => o.value === 'team:core')`)
		b.setValue(".label-filter", "team:core")
		b.waitJS("only the labelled chat", `document.querySelectorAll('.chat-list .chat-item').length === 1 && document.querySelector('.chat-list .chat-item').textContent.includes('Labelled chat')`)
		b.setValue(".label-filter", "")
	})

	t.Run("a send that fails stays unconfirmed until retried", func(t *testing.T) {
		b.t = t
		chat, err := b.api.CreateChat(b.ctx, sdk.CreateChatRequest{Title: "Unconfirmed sends"})
		require.NoError(t, err)
		b.do(chromedp.Navigate(b.base + "/chats/" + chat.ID.String()))
		b.waitJS("the empty chat", `document.querySelector('.thread .empty-state')`)

		// The next send loses its connection before the server sees it.
		fctx, stopFailing := context.WithCancel(b.ctx)
		defer stopFailing()
		paused := chromedp.Events(fctx, fetch.RequestPaused)
		_, err = chromedp.Call(b.ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{
			{URLPattern: "*/api/v2/chats/*/messages", RequestStage: fetch.RequestStageRequest},
		}})
		require.NoError(t, err)
		go func() {
			for ev, err := range paused {
				if err != nil {
					return
				}
				_, _ = chromedp.Call(b.ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonConnectionReset})
			}
		}()
		b.typeAndSend("This send loses its connection")
		b.waitJS("the unconfirmed message", `document.querySelector('.thread .ghost.unconfirmed')?.textContent.includes('Not confirmed')`)
		_, err = chromedp.Call(b.ctx, fetch.Disable, cdp.Empty{})
		require.NoError(t, err)
		stopFailing()
		b.shot("22-not-confirmed")

		// A reload keeps it, and never resends it by itself.
		b.do(chromedp.Reload())
		b.waitJS("the unconfirmed message after reload", `document.querySelector('.thread .ghost.unconfirmed .bubble')?.textContent === 'This send loses its connection'`)
		require.Empty(t, eval[[]string](b, jsUserTexts))
		b.clickText(".thread .ghost .btn", "Check outcome")
		b.waitJS("the outcome", `/never received it/.test(document.querySelector('.thread .ghost.unconfirmed')?.textContent)`)
		require.Empty(t, eval[[]string](b, jsUserTexts))
		b.clickText(".thread .ghost .btn", "Retry same request")
		b.waitJS("the delivered message and its reply", jsIdle+` && document.querySelectorAll('.thread .msg-assistant').length === 1`)
		require.Equal(t, []string{"This send loses its connection"}, eval[[]string](b, jsUserTexts))
	})

	t.Run("a new chat whose create fails stays unconfirmed until retried", func(t *testing.T) {
		b.t = t
		countChats := func() int {
			chats, err := b.api.ListChats(b.ctx, sdk.ListChatsOptions{Archived: "all", Limit: 100})
			require.NoError(t, err)
			return len(chats)
		}
		before := countChats()
		b.do(chromedp.Navigate(b.base + "/"))
		b.waitJS("the new chat page", `document.querySelector('.hero')`)

		// The create loses its connection before the server sees it; the
		// sidebar's GET /chats still goes through.
		fctx, stopFailing := context.WithCancel(b.ctx)
		defer stopFailing()
		paused := chromedp.Events(fctx, fetch.RequestPaused)
		_, err := chromedp.Call(b.ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{
			{URLPattern: "*/api/v2/chats*", RequestStage: fetch.RequestStageRequest},
		}})
		require.NoError(t, err)
		go func() {
			for ev, err := range paused {
				if err != nil {
					return
				}
				if ev.Request.Method == http.MethodPost && strings.HasSuffix(ev.Request.URL, "/api/v2/chats") {
					_, _ = chromedp.Call(b.ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonConnectionReset})
				} else {
					_, _ = chromedp.Call(b.ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
				}
			}
		}()
		b.typeAndSend("A new chat that loses its connection")
		b.waitJS("the unconfirmed new chat", `document.querySelector('.new-status .ghost-status')?.textContent.includes('Not confirmed')`)
		_, err = chromedp.Call(b.ctx, fetch.Disable, cdp.Empty{})
		require.NoError(t, err)
		stopFailing()
		require.Equal(t, "/", eval[string](b, `location.pathname`))
		b.shot("24-new-chat-not-confirmed")

		// A reload keeps it, says why, and never resends it by itself.
		b.do(chromedp.Reload())
		b.waitJS("the unconfirmed new chat after reload", `/A new chat that loses its connection.*reloaded before the server answered/.test(document.querySelector('.new-status .ghost-status')?.textContent)`)
		require.Equal(t, before, countChats(), "nothing was created")
		b.typeAndSend("Another chat meanwhile")
		b.waitJS("the refusal of a second create", `[...document.querySelectorAll('.toast')].some(e => e.textContent.includes('still unconfirmed'))`)
		require.Equal(t, "Another chat meanwhile", eval[string](b, `document.querySelector('#composer-input').value`), "the refused text stays in the composer")
		b.setValue("#composer-input", "")

		// A retry is offered only after a lookup found no admission.
		require.False(t, eval[bool](b, `[...document.querySelectorAll('.new-status .btn')].some(e => e.textContent === 'Retry same request')`))
		b.clickText(".new-status .btn", "Check outcome")
		b.clickText(".new-status .btn", "Retry same request")
		b.waitJS("the created chat and its reply", `/^\/chats\/[0-9a-f-]{36}$/.test(location.pathname) && `+jsIdle+` && document.querySelectorAll('.thread .msg-assistant').length === 1`)
		require.Equal(t, []string{"A new chat that loses its connection"}, eval[[]string](b, jsUserTexts))
		require.Equal(t, before+1, countChats(), "one chat, created once")
		b.do(chromedp.Navigate(b.base + "/"))
		b.waitJS("a clean new chat page", `document.querySelector('.hero') && document.querySelector('.new-status').childElementCount === 0`)
	})

	t.Run("themes and narrow screens", func(t *testing.T) {
		b.t = t
		require.NotEmpty(t, firstChat)
		b.do(chromedp.Navigate(b.base + firstChat))
		b.waitJS("the conversation", jsIdle+` && document.querySelectorAll('.thread .msg-assistant').length > 0`)
		b.scheme("dark")
		b.shot("11-dark-wide")
		b.clickText(".chat-list .chat-link", "/error overloaded")
		b.waitJS("the error banner", `document.querySelector('.error-banner')`)
		b.shot("11-dark-wide-error")
		b.click(`.sidebar button[aria-label="Hide sidebar"]`)
		b.waitJS("the hidden sidebar", `getComputedStyle(document.querySelector('.sidebar')).display === 'none'`)
		b.shot("11-dark-wide-no-sidebar")
		b.click(".chat-view .sidebar-toggle")
		b.waitJS("the sidebar back", `getComputedStyle(document.querySelector('.sidebar')).display !== 'none'`)
		b.do(chromedp.Navigate(b.base + firstChat))
		b.waitJS("the conversation", jsIdle+` && document.querySelectorAll('.thread .msg-assistant').length > 0`)
		b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
		b.waitJS("the drawer button", `getComputedStyle(document.querySelector('.sidebar-toggle')).display !== 'none'`)
		b.shot("12-dark-narrow")
		b.click(".chat-view .sidebar-toggle")
		b.waitJS("the open drawer", `document.body.classList.contains('drawer-open')`)
		b.waitJS("the drawer slid in", `getComputedStyle(document.querySelector('.sidebar')).transform === 'none'`)
		b.shot("13-dark-narrow-drawer")
		b.scheme("light")
		b.shot("14-light-narrow-drawer")
		b.do(chromedp.KeyEvent("\x1b"))
		b.waitJS("the closed drawer", `!document.body.classList.contains('drawer-open')`)
		b.shot("15-light-narrow")
		b.do(chromedp.Navigate(b.base + "/"))
		b.waitJS("the new chat page", `document.querySelector('.hero')`)
		b.shot("15-light-narrow-new-chat")
		b.do(chromedp.EmulateViewport(1280, 860))
	})

	t.Run("log out", func(t *testing.T) {
		b.t = t
		b.scheme("dark")
		b.click(`.sidebar button[aria-label="Log out"]`)
		b.waitJS("the login page", `location.pathname === '/login' && document.querySelector('#token')`)
		b.shot("23-dark-login")
		b.do(chromedp.Navigate(b.base + "/"))
		b.waitJS("the login page again: the session is gone", `location.pathname === '/login' && document.querySelector('#token')`)
		b.scheme("light")
	})

	b.t = t
	b.checkNoProblems()
	t.Logf("browser suite took %s", time.Since(start).Round(time.Millisecond))
}
