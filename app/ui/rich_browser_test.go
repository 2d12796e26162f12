package ui_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
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
