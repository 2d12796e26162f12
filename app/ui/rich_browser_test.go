package ui_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
)

// jsCSPWatch records the page's Content-Security-Policy violations in
// window.__csp (the console check catches them too; this names them).
const jsCSPWatch = `(() => { window.__csp = []; document.addEventListener('securitypolicyviolation',
	(e) => window.__csp.push(e.violatedDirective + ' ' + (e.blockedURI || e.sample || ''))); })()`

// jsVendorLoaded: whether the page fetched a vendored library.
const jsVendorLoaded = `performance.getEntriesByType('resource').some(e => e.name.includes('/vendor/'))`

// Math and Mermaid diagrams in a reply (the demo model quotes the message,
// so the quote carries them): KaTeX typesets inline and display math,
// Mermaid draws a closed fence as SVG, a bad diagram shows its source with
// the error; neither library loads before a message needs it, and nothing
// breaks the page's Content-Security-Policy.
func TestBrowserMathAndDiagrams(t *testing.T) {
	b := startBrowser(t)
	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)
	eval[chromedp.Void](b, jsCSPWatch)

	b.typeAndSend("Plain words, no math: it costs $5 and $10.")
	b.waitJS("the reply", jsIdle+` && document.querySelector('.thread .msg-assistant')`)
	require.False(t, eval[bool](b, jsVendorLoaded), "no library fetched for a chat without math or diagrams")
	require.False(t, eval[bool](b, `!!document.querySelector('.thread .math')`), "prices are not math")

	b.do(chromedp.Navigate(b.base + "/"))
	b.waitJS("the new-chat page", `document.querySelector('.hero')`)
	eval[chromedp.Void](b, jsCSPWatch)
	b.typeAndSend("Euler: $e^{i\\pi}+1=0$\n\n$$\\int_0^1 x^2\\,dx=\\frac13$$\n\n```mermaid\ngraph TD\n  A[Ask] --> B[Answer]\n```\n\n```mermaid\ngraph TD\n  A --> \n```")
	b.waitJS("the reply", jsIdle+` && document.querySelector('.thread .msg-assistant')`)
	reply := `document.querySelector('.thread .msg-assistant')`
	b.waitJS("typeset math", reply+`.querySelectorAll('.math[data-rendered="ok"] .katex').length === 2`)
	require.True(t, eval[bool](b, reply+`.querySelector('.math-inline .katex-mathml math') !== null`), "MathML for screen readers")
	require.True(t, eval[bool](b, reply+`.querySelector('.math-display .katex-display') !== null`), "display math as a block")
	require.Equal(t, "font/woff2", eval[string](b, `fetch(getComputedStyle(document.documentElement) && [...document.styleSheets].find(s => s.href && s.href.includes('katex')).href.replace('katex.min.css', 'fonts/KaTeX_Main-Regular.woff2')).then(r => r.headers.get('content-type'))`))

	b.waitJS("the diagrams settled", reply+`.querySelectorAll('.mermaid-block[data-rendered="ok"], .mermaid-block[data-rendered="error"]').length === 2`)
	blocks := reply + `.querySelectorAll('.mermaid-block')`
	require.Equal(t, "ok", eval[string](b, blocks+`[0].dataset.rendered`))
	diagram := blocks + `[0].querySelector('.mermaid-svg img')`
	require.True(t, eval[bool](b, diagram+` !== null && `+blocks+`[0].querySelector('.codeblock').hidden`), "the diagram drawn, its source hidden")
	require.Contains(t, eval[string](b, `decodeURIComponent(`+diagram+`.src)`), ">Answer<", "the diagram's labels")
	b.waitJS("the diagram shown", diagram+`.complete && `+diagram+`.naturalWidth > 0`)
	require.Greater(t, eval[float64](b, diagram+`.getBoundingClientRect().height`), 20.0)
	require.Equal(t, "allow-scripts", eval[string](b, `document.querySelector('iframe.diagram-frame').getAttribute('sandbox')`),
		"Mermaid draws in a frame sandboxed to scripts only")
	require.Equal(t, "error", eval[string](b, blocks+`[1].dataset.rendered`))
	require.True(t, eval[bool](b, `!`+blocks+`[1].querySelector('.codeblock').hidden && `+blocks+`[1].querySelector('.codeblock').textContent.includes('A -->')`), "a bad diagram shows its source")
	require.Contains(t, eval[string](b, blocks+`[1].querySelector('.render-error-msg').textContent`), "Diagram error")

	b.shot("70-math-diagrams")
	b.scheme("dark")
	b.waitJS("the diagram drawn again in the dark theme", blocks+`[0].dataset.theme === 'dark' && `+blocks+`[0].dataset.rendered === 'ok'`)
	b.shot("71-math-diagrams-dark")
	b.scheme("light")

	require.Empty(t, eval[[]string](b, `window.__csp`), "Content-Security-Policy violations")
	b.checkNoProblems()
}

// jsPicture makes a 480×300 PNG in the page (a canvas drawing), for
// thumbnails and the lightbox to have something to show.
const jsPicture = `async function picture(name) {
	const c = document.createElement('canvas'); c.width = 480; c.height = 300;
	const g = c.getContext('2d');
	g.fillStyle = '#3b82f6'; g.fillRect(0, 0, 480, 300);
	g.fillStyle = '#fbbf24'; g.beginPath(); g.arc(240, 150, 90, 0, 7); g.fill();
	const blob = await new Promise((r) => c.toBlob(r, 'image/png'));
	return new File([blob], name, {type: 'image/png'});
}`

// jsAttach puts File objects (an expression, awaited) in the composer's
// file input.
func jsAttach(files string) string {
	return `(async () => { ` + jsPicture + `
		const dt = new DataTransfer();
		for (const f of await ` + files + `) dt.items.add(f);
		const input = document.querySelector('.attach-input');
		input.files = dt.files;
		input.dispatchEvent(new Event('change', {bubbles: true}));
	})()`
}

// jsApprovalLayout measures the approval card against the thread's last
// message and the thread's visible area.
const jsApprovalLayout = `(() => {
	const card = document.querySelector('.approval-card').getBoundingClientRect();
	const last = [...document.querySelectorAll('.thread .msg')].at(-1).getBoundingClientRect();
	const sc = document.querySelector('.chat-view .scroller').getBoundingClientRect();
	return {cardTop: card.top, cardHeight: card.height, lastTop: last.top, lastBottom: last.bottom,
		threadTop: sc.top, threadBottom: sc.bottom, viewport: innerHeight};
})()`

type approvalLayout struct {
	CardTop, CardHeight, LastTop, LastBottom, ThreadTop, ThreadBottom, Viewport float64
}

// On a phone (390×844), in both themes, a chat with math, a diagram, an
// image and a text file, then tool calls with long arguments awaiting
// approval: the approval card keeps to a bounded height (its own scroll)
// and the thread's last message stays in view above it, not under it. The
// screenshots are the phone view the issue asks for.
func TestBrowserPhoneApprovalAndRichChat(t *testing.T) {
	mcpConfig, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"url": mcpEverything(t), "approval": "always"},
	}})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(path, mcpConfig, 0o600))
	b := startBrowserWith(t, func(cfg *config.Config) { cfg.MCPConfig = path })
	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)
	b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	eval[chromedp.Void](b, jsCSPWatch)
	b.waitJS("the MCP server connected", `document.querySelector('.tools-btn') && !document.querySelector('.tools-btn').hidden`)

	eval[chromedp.Void](b, jsAttach(`Promise.all([picture('sunrise.png'),
		new File([Array.from({length: 12}, (_, i) => 'step ' + (i + 1)).join('\n')], 'plan.txt', {type: 'text/plain'})])`))
	b.waitJS("both uploaded", `document.querySelectorAll('.attach-tray .attach-item.done').length === 2`)
	// While the reply streams, no half-written formula or diagram ever
	// shows as an error.
	eval[chromedp.Void](b, `(() => { window.__renderErrors = 0;
		new MutationObserver(() => { if (document.querySelector('.thread .render-error')) window.__renderErrors++; })
			.observe(document.body, {subtree: true, childList: true, attributes: true, attributeFilter: ['class']}); })()`)
	b.typeAndSend("Area: $\\pi r^2$\n\n```mermaid\ngraph LR\n  Plan --> Build --> Ship\n```")
	b.waitJS("the chat", `location.pathname.startsWith('/chats/') && document.querySelector('.thread .msg-assistant')`)
	b.waitJS("the reply", `location.pathname.startsWith('/chats/') && `+jsIdle+` && document.querySelector('.thread .msg-assistant')`)
	b.waitJS("math and diagram", `document.querySelector('.thread .msg-assistant .math[data-rendered="ok"]') &&
		document.querySelector('.thread .msg-assistant .mermaid-block[data-rendered="ok"] img')?.naturalWidth > 0`)
	b.waitJS("the thumbnail", `document.querySelector('.thread .msg-user .chip.file.image img.thumb')?.naturalWidth === 480`)
	require.Zero(t, eval[int](b, `window.__renderErrors`), "no error state while the reply streamed")
	b.waitJS("the text preview", `document.querySelector('.thread .msg-user .file-preview-toggle:not([hidden])')`)
	eval[chromedp.Void](b, `document.querySelector('.thread .msg-assistant').scrollIntoView({block: 'start'})`)
	b.shot("80-phone-rich-light")
	b.scheme("dark")
	b.waitJS("the diagram in the dark theme", `document.querySelector('.thread .msg-assistant .mermaid-block').dataset.theme === 'dark' &&
		document.querySelector('.thread .msg-assistant .mermaid-block').dataset.rendered === 'ok'`)
	b.shot("80-phone-rich-dark")
	b.scheme("light")

	long := strings.Repeat("a very long note that goes on ", 40)
	b.typeAndSend(`/tool everything__note {"note": "` + long + `"} /tool everything__note {"note": "` + long + `"} /tool everything__echo {"text": "` + long + `"}`)
	b.waitJS("the approval card with three calls", `document.querySelectorAll('.approval-card .approval-call').length === 3`)
	b.waitJS("the thread settled", `document.querySelectorAll('.thread .msg').length >= 4`)
	for _, v := range []struct {
		name          string
		width, height int64
	}{{"phone", 390, 844}, {"phone-landscape", 844, 390}} {
		b.do(chromedp.EmulateViewport(v.width, v.height, chromedp.EmulateScale(2)))
		for _, scheme := range []string{"light", "dark"} {
			b.scheme(scheme)
			b.waitJS("the layout settled", `(() => { const s = document.querySelector('.chat-view .scroller'); return s.scrollHeight - s.scrollTop - s.clientHeight < 4; })()`)
			l := eval[approvalLayout](b, jsApprovalLayout)
			t.Logf("%s %s: %+v", v.name, scheme, l)
			b.shot("81-" + v.name + "-approval-" + scheme)
			assert.LessOrEqual(t, l.CardHeight, l.Viewport*0.4+1, "%s: the card's height is bounded", v.name)
			assert.GreaterOrEqual(t, l.ThreadBottom-l.ThreadTop, l.Viewport*0.2, "%s: the thread keeps room", v.name)
			assert.LessOrEqual(t, l.LastBottom, l.CardTop+1, "%s: the last message ends above the card", v.name)
			assert.LessOrEqual(t, l.LastBottom, l.ThreadBottom+1, "%s: the last message's end is in view", v.name)
			assert.Greater(t, l.LastBottom, l.ThreadTop+40, "%s: the last message is in view", v.name)
		}
	}
	b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	require.True(t, eval[bool](b, `(() => { const c = document.querySelector('.approval-card'); return c.scrollHeight > c.clientHeight && getComputedStyle(c).overflowY === 'auto'; })()`),
		"the card scrolls on its own")
	b.scheme("light")
	require.Empty(t, eval[[]string](b, `window.__csp`), "Content-Security-Policy violations")
	b.checkNoProblems()
}

// Attachment previews: an image opens large in a lightbox, from the
// composer's thumbnail and from the sent message's, by mouse or keyboard;
// Escape or a click closes it and the focus returns to the thumbnail. A
// text file shows its first lines in the message, and all of them (tabs
// kept) on "Show all".
func TestBrowserAttachmentPreviews(t *testing.T) {
	b := startBrowser(t)
	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)
	eval[chromedp.Void](b, jsCSPWatch)

	text := "all:\n\tgo build ./...\n"
	for i := 3; i <= 20; i++ {
		text += fmt.Sprintf("line %d\n", i)
	}
	js, _ := json.Marshal(text)
	eval[chromedp.Void](b, jsAttach(`Promise.all([picture('sunrise.png'), new File([`+string(js)+`], 'Makefile.txt', {type: 'text/plain'})])`))
	b.waitJS("both uploaded", `document.querySelectorAll('.attach-tray .attach-item.done').length === 2`)

	const lightbox = `document.querySelector('.lightbox')`
	const opened = lightbox + ` && ` + lightbox + `.querySelector('img').naturalWidth === 480 && document.activeElement === ` + lightbox
	// The composer's thumbnail: a button, opened with the mouse, closed with Escape.
	b.click(".attach-tray .thumb-btn")
	b.waitJS("the lightbox, focus on it", opened)
	require.Equal(t, "true", eval[string](b, lightbox+`.getAttribute('aria-modal')`))
	b.do(chromedp.KeyEvent("\t"))
	require.True(t, eval[bool](b, `document.activeElement === `+lightbox+`.querySelector('.lightbox-close')`), "Tab stays in the dialog")
	b.do(chromedp.KeyEvent("\x1b"))
	b.waitJS("closed, the focus back on the thumbnail", `!`+lightbox+` && document.activeElement === document.querySelector('.attach-tray .thumb-btn')`)
	require.Equal(t, 2, eval[int](b, `document.querySelectorAll('.attach-tray .attach-item.done').length`), "Escape closed the lightbox only")

	// The composer's text file: its badge opens the preview, whose Show all
	// works inside the dialog.
	b.click(".attach-tray button.attach-kind")
	b.waitJS("the text preview dialog", lightbox+`?.querySelector('.file-preview-body')?.textContent.startsWith('all:\n\tgo build')`)
	b.waitJS("its Show all", lightbox+`.querySelector('.file-preview-toggle:not([hidden])')`)
	b.click(".lightbox .file-preview-toggle")
	require.Equal(t, strings.TrimSuffix(text, "\n"), eval[string](b, lightbox+`.querySelector('.file-preview-body').textContent`), "the whole file, in the open dialog")
	b.shot("83-composer-text-preview")
	b.do(chromedp.KeyEvent("\x1b"))
	b.waitJS("closed, the focus back on the badge", `!`+lightbox+` && document.activeElement === document.querySelector('.attach-tray button.attach-kind')`)

	b.typeAndSend("Look at these")
	b.waitJS("the reply", `location.pathname.startsWith('/chats/') && `+jsIdle+` && document.querySelector('.thread .msg-assistant')`)
	b.waitJS("the message's thumbnail", `document.querySelector('.thread .msg-user .chip.file.image img.thumb')?.naturalWidth === 480`)

	// The message's thumbnail, from the keyboard; closed with a click.
	eval[chromedp.Void](b, `document.querySelector('.thread .msg-user .chip.file.image').focus()`)
	b.do(chromedp.KeyEvent("\r"))
	b.waitJS("the lightbox from the message", opened)
	require.Equal(t, "/chats/", eval[string](b, `location.pathname.slice(0, 7)`), "the link did not navigate")
	b.shot("82-lightbox")
	b.do(chromedp.MouseClickXY(20, 20))
	b.waitJS("closed, the focus back on the thumbnail", `!`+lightbox+` && document.activeElement === document.querySelector('.thread .msg-user .chip.file.image')`)

	// The text file's preview.
	preview := `document.querySelector('.thread .msg-user .file-preview')`
	b.waitJS("the first lines", preview+`?.querySelector('.file-preview-body').textContent.startsWith('all:')`)
	require.Equal(t, "all:\n\tgo build ./...\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8", eval[string](b, preview+`.querySelector('.file-preview-body').textContent`))
	require.Equal(t, "Show all (20 lines)", eval[string](b, preview+`.querySelector('.file-preview-toggle').textContent`))
	require.Equal(t, "Makefile.txt", eval[string](b, preview+`.querySelector('.file-preview-name').textContent`))
	b.click(".thread .msg-user .file-preview-toggle")
	require.Equal(t, strings.TrimSuffix(text, "\n"), eval[string](b, preview+`.querySelector('.file-preview-body').textContent`), "the whole file, tabs kept")
	require.Equal(t, "true", eval[string](b, preview+`.querySelector('.file-preview-toggle').getAttribute('aria-expanded')`))
	b.click(".thread .msg-user .file-preview-toggle")
	require.Equal(t, "Show all (20 lines)", eval[string](b, preview+`.querySelector('.file-preview-toggle').textContent`))

	toolImage(t, b)
	require.Empty(t, eval[[]string](b, `window.__csp`), "Content-Security-Policy violations")
	b.checkNoProblems()
}

// toolImage: an image a tool returned (MCP image content, here a dynamic
// tool's result of that shape) shows as a thumbnail in the tool card and
// opens in the lightbox; the card's Result prints a note, not the base64.
// The result arrives while the chat is open (live, over the stream).
func toolImage(t *testing.T, b *browser) {
	img := image.NewRGBA(image.Rect(0, 0, 64, 48))
	for x := range 64 {
		img.Set(x, x%48, color.RGBA{R: 200, A: 255})
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	data := base64.StdEncoding.EncodeToString(buf.Bytes())
	chat, err := b.api.CreateChat(b.ctx, sdk.CreateChatRequest{
		Content:            []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "/tool snapshot {}"}},
		UnsafeDynamicTools: []sdk.DynamicTool{{Name: "snapshot", Description: "Takes a snapshot", InputSchema: json.RawMessage(`{"type":"object"}`)}},
	})
	require.NoError(t, err)
	b.do(chromedp.Navigate(b.base + "/chats/" + chat.ID.String()))
	b.waitJS("the card waiting for the result", `document.querySelector('.thread .tool-card.tool-waiting')?.dataset.toolCallId`)
	call := eval[string](b, `document.querySelector('.thread .tool-card.tool-waiting').dataset.toolCallId`)
	out, err := json.Marshal(map[string]any{"content": []map[string]any{
		{"type": "text", "text": "the screen"},
		{"type": "image", "mimeType": "image/png", "bytes": buf.Len(), "data": data},
	}})
	require.NoError(t, err)
	require.NoError(t, b.api.SubmitToolResults(b.ctx, chat.ID, sdk.SubmitToolResultsRequest{Results: []sdk.ToolResult{{ToolCallID: call, Output: out}}}))
	thumb := `document.querySelector('.thread .tool-card .tool-images .chip.file.image img.thumb')`
	// The card is drawn again while the reply streams: wait for the turn.
	b.waitJS("the tool's image in its card, the turn over", jsIdle+` && `+thumb+`?.naturalWidth === 64`)
	require.Equal(t, "Image 1 from snapshot", eval[string](b, thumb+`.alt`))
	b.shot("84-tool-image")
	result := eval[string](b, `document.querySelector('.thread .tool-card .tool-section:last-of-type pre').textContent`)
	require.NotContains(t, result, data[:40], "the base64 is not printed")
	require.Contains(t, result, "characters of base64, shown above")
	require.Contains(t, result, "the screen")
	b.click(".thread .tool-card .tool-images .chip.file.image")
	b.waitJS("the lightbox with the tool's image", `document.querySelector('.lightbox img')?.naturalWidth === 64`)
	b.do(chromedp.KeyEvent("\x1b"))
	b.waitJS("closed", `!document.querySelector('.lightbox')`)
}
