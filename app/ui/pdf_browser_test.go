package ui_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/llmtest"
)

// With the demo model chosen a PDF is refused at pick time with the reason
// and never uploaded; with a model that reads PDFs (Claude) the same file
// attaches and reaches the provider as a document block. At desktop and
// phone widths, in both themes.
func TestBrowserPDFAttachments(t *testing.T) {
	claude := llmtest.NewAnthropic(t)
	b := startBrowserWith(t, func(c *config.Config) {
		c.AnthropicBaseURL = claude.URL
		c.Models = []string{"anthropic/claude-sonnet-4-5"}
	})
	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)
	b.waitJS("the models", `document.querySelector('select.picker[aria-label="Model"]')?.options.length === 2`)

	const pdf = "%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\n%%EOF\n"
	attach := `(() => { ` + jsFiles + `
		const input = document.querySelector('.attach-input');
		input.files = files([['paper.pdf', 'application/pdf', ` + "`" + pdf + "`" + `]]).files;
		input.dispatchEvent(new Event('change', {bubbles: true}));
	})()`
	pick := func(name string) {
		eval[chromedp.Void](b, `(() => { const s = document.querySelector('select.picker[aria-label="Model"]');
			s.value = [...s.options].find(o => o.textContent.includes('`+name+`')).value;
			s.dispatchEvent(new Event('change', {bubbles: true})); })()`)
	}

	// The demo model reads no PDFs: refused when picked, never uploaded.
	pick("Demo")
	before, err := b.api.FileLimits(b.ctx)
	require.NoError(t, err)
	eval[chromedp.Void](b, attach)
	b.waitJS("the refused PDF", `document.querySelector('.attach-item.error')?.textContent.includes('Demo (offline) cannot read PDFs; choose a model that can')`)
	after, err := b.api.FileLimits(b.ctx)
	require.NoError(t, err)
	require.Equal(t, before.UsedBytes, after.UsedBytes, "the PDF was never uploaded")
	for _, v := range everyView {
		b.at(v)
		b.checkLayout(v, ".attach-tray .attach-item.error .attach-name", ".attach-tray .attach-item.error .attach-remove", ".send-btn")
		b.shot("72-attach-pdf-refused-" + v.name)
	}
	b.desktop()
	eval[chromedp.Void](b, `document.querySelector('.attach-item.error .attach-remove').click()`)

	// Claude reads PDFs: the same file is uploaded and sent as a document.
	pick("claude")
	eval[chromedp.Void](b, attach)
	b.waitJS("the uploaded PDF", `document.querySelector('.attach-tray .attach-item.done .attach-name')?.textContent === 'paper.pdf' && !document.querySelector('.attach-item.error')`)
	for _, v := range everyView {
		b.at(v)
		b.checkLayout(v, ".attach-tray .attach-item.done .attach-name", ".attach-tray .attach-item.done .attach-remove", ".send-btn")
		b.shot("73-attach-pdf-" + v.name)
	}
	b.desktop()

	// Choosing the demo model now marks the uploaded PDF with the reason;
	// choosing Claude again takes it back.
	pick("Demo")
	b.waitJS("the PDF refused for the demo model", `document.querySelector('.attach-item.error')?.textContent.includes('Demo (offline) cannot read PDFs')`)
	pick("claude")
	b.waitJS("the PDF back", `document.querySelector('.attach-tray .attach-item.done .attach-name')?.textContent === 'paper.pdf' && !document.querySelector('.attach-item.error')`)

	b.typeAndSend("Summarize the paper.")
	b.waitJS("the reply", `location.pathname.startsWith('/chats/') && `+jsIdle+` && document.querySelector('.thread .msg-assistant')`)
	require.True(t, eval[bool](b, `[...document.querySelectorAll('.thread .msg-user .chip.file')].some(e => e.textContent === 'paper.pdf')`))
	found := false
	for _, r := range claude.Requests() {
		found = found || strings.Contains(string(r.Body), `"type":"document"`) &&
			strings.Contains(string(r.Body), base64.StdEncoding.EncodeToString([]byte(pdf)))
	}
	require.True(t, found, "the PDF reached Anthropic as a document block")
	b.checkNoProblems()
}
