package ui_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/config"
)

// onePixelPNG is a real 1x1 PNG, so thumbnails decode.
const onePixelPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// jsAddFiles builds files in the page; how they arrive (the file picker,
// a drop, a paste) is the argument's business.
const jsFiles = `function files(list) {
	const dt = new DataTransfer();
	for (const [name, type, body] of list) {
		const bytes = type.startsWith('image/') ? Uint8Array.from(atob(body), c => c.charCodeAt(0)) : new TextEncoder().encode(body);
		dt.items.add(new File([bytes], name, {type}));
	}
	return dt;
}`

// Attachments: the attach button (with the limits in its title before any
// upload), drag-and-drop and paste add files to the composer with an
// upload progress bar and a thumbnail; a file over the limit is refused
// before it is sent; the sent message shows the image thumbnail (served by
// GET /files/{id}) and the text file's chip. At desktop and phone widths,
// in both themes.
func TestBrowserAttachments(t *testing.T) {
	b := startBrowserWith(t, func(c *config.Config) { c.Files.MaxFileBytes = 64 << 10 })
	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)
	b.waitJS("the limits on the attach button", `document.querySelector('.attach-btn')?.title.includes('64 KB each')`)

	// The file picker: the item shows its progress bar at once, then the thumbnail.
	uploading := eval[bool](b, `(() => { `+jsFiles+`
		const input = document.querySelector('.attach-input');
		input.files = files([['cat.png', 'image/png', '`+onePixelPNG+`']]).files;
		input.dispatchEvent(new Event('change', {bubbles: true}));
		return !!document.querySelector('.attach-item.uploading progress.attach-progress');
	})()`)
	require.True(t, uploading, "an upload shows its progress")
	b.waitJS("the thumbnail", `(() => { const i = document.querySelector('.attach-tray .attach-item.done img.thumb'); return i && i.complete && i.naturalWidth === 1; })()`)

	// Drop a text file; paste another image.
	eval[chromedp.Void](b, `(() => { `+jsFiles+`
		const form = document.querySelector('form.composer');
		form.dispatchEvent(new DragEvent('drop', {dataTransfer: files([['notes.txt', 'text/plain', 'feed the cat']]), bubbles: true, cancelable: true}));
		document.querySelector('#composer-input').dispatchEvent(new ClipboardEvent('paste', {clipboardData: files([['pasted.png', 'image/png', '`+onePixelPNG+`']]), bubbles: true, cancelable: true}));
	})()`)
	b.waitJS("three uploaded files", `document.querySelectorAll('.attach-tray .attach-item.done').length === 3`)

	// Over the limit: refused in the composer, never uploaded.
	eval[chromedp.Void](b, `(() => { `+jsFiles+`
		const input = document.querySelector('.attach-input');
		input.files = files([['big.txt', 'text/plain', 'x'.repeat(70 * 1024)]]).files;
		input.dispatchEvent(new Event('change', {bubbles: true}));
	})()`)
	b.waitJS("the refused file", `document.querySelector('.attach-item.error')?.textContent.includes('over the 64 KB limit')`)
	eval[chromedp.Void](b, `document.querySelector('.attach-item.error .attach-remove').click()`)
	b.waitJS("the refused file removed", `!document.querySelector('.attach-item.error')`)

	// A file the model cannot take (a PDF for the demo model, dropped): refused in the composer with
	// the reason, never uploaded; the good files stay.
	before, err := b.api.FileLimits(b.ctx)
	require.NoError(t, err)
	eval[chromedp.Void](b, `(() => { `+jsFiles+`
		const form = document.querySelector('form.composer');
		form.dispatchEvent(new DragEvent('drop', {dataTransfer: files([['paper.pdf', 'application/pdf', '%PDF-1.7 not really']]), bubbles: true, cancelable: true}));
	})()`)
	b.waitJS("the refused PDF", `document.querySelector('.attach-item.error')?.textContent.includes('cannot read PDFs')`)
	require.Equal(t, 3, eval[int](b, `document.querySelectorAll('.attach-tray .attach-item.done').length`), "the good files stay")
	after, err := b.api.FileLimits(b.ctx)
	require.NoError(t, err)
	require.Equal(t, before.UsedBytes, after.UsedBytes, "the PDF was never uploaded")
	eval[chromedp.Void](b, `document.querySelector('.attach-item.error .attach-remove').click()`)
	b.waitJS("the refused PDF removed", `!document.querySelector('.attach-item.error')`)

	for _, v := range everyView {
		b.at(v)
		fits := eval[bool](b, `(() => { const t = document.querySelector('.attach-tray'); return t.scrollWidth <= t.clientWidth + 1 && t.getBoundingClientRect().right <= innerWidth; })()`)
		require.True(t, fits, "the tray fits at %s", v.name)
		b.checkLayout(v, ".attach-btn", ".attach-tray .attach-item.done .thumb", ".attach-tray .attach-item.done .attach-name",
			".attach-tray .attach-item.done .attach-size", ".attach-tray .attach-item.done .attach-remove", "#composer-input", ".send-btn")
		b.shot("70-attach-composer-" + v.name)
	}
	b.desktop()

	b.typeAndSend("What is in these?")
	b.waitJS("the chat with the reply", `location.pathname.startsWith('/chats/') && `+jsIdle+` && document.querySelector('.thread .msg-assistant')`)
	b.waitJS("the thumbnails in the message", `(() => {
		const imgs = [...document.querySelectorAll('.thread .msg-user .chip.file.image img.thumb')];
		return imgs.length === 2 && imgs.every(i => i.complete && i.naturalWidth === 1);
	})()`)
	b.waitJS("the text file's preview", `document.querySelector('.thread .msg-user .file-preview .file-preview-body')?.textContent === 'feed the cat'`)
	require.Equal(t, "notes.txt", eval[string](b, `document.querySelector('.thread .msg-user .file-preview .file-preview-name').textContent`))
	b.checkViews(everyView, "", ".thread .msg-user .chip.file.image img.thumb", ".thread .msg-user .file-preview")
	require.True(t, eval[bool](b, `document.querySelector('.attach-tray').hidden`), "the composer's tray is empty after the send")

	// In the chat view too: attach and send again.
	eval[chromedp.Void](b, `(() => { `+jsFiles+`
		const input = document.querySelector('.attach-input');
		input.files = files([['dog.png', 'image/png', '`+onePixelPNG+`']]).files;
		input.dispatchEvent(new Event('change', {bubbles: true}));
	})()`)
	b.waitJS("the upload in the chat view", `document.querySelector('.attach-tray .attach-item.done')`)
	b.typeAndSend("And this one?")
	b.waitJS("the second message's thumbnail", `document.querySelectorAll('.thread .msg-user').length === 2 &&
		[...document.querySelectorAll('.thread .msg-user')][1].querySelector('.chip.file.image img.thumb')?.naturalWidth === 1`)
	b.waitJS("the second reply", jsIdle+` && document.querySelectorAll('.thread .msg-assistant').length === 2`)

	// Editing the message's text keeps its attachment.
	eval[chromedp.Void](b, `[...document.querySelectorAll('.thread .msg-user')].pop().dataset.testLast = 'yes'`)
	b.click(`.thread .msg-user[data-test-last] button[aria-label="Edit message"]`)
	b.waitJS("the inline editor", `document.querySelector('.thread .edit-input')`)
	eval[chromedp.Void](b, `(() => { const ta = document.querySelector('.thread .edit-input');
		ta.value = 'And this dog?'; ta.dispatchEvent(new Event('input', {bubbles: true})); })()`)
	b.click(".thread .edit-box .btn.primary")
	b.waitJS("the edited message with its thumbnail", jsIdle+` && (() => {
		const last = [...document.querySelectorAll('.thread .msg-user')].pop();
		return last.textContent.includes('And this dog?') && last.querySelector('.chip.file.image img.thumb')?.naturalWidth === 1;
	})()`)
	for _, v := range everyView {
		b.at(v)
		b.checkLayout(v, ".thread .msg-user .chip.file.image img.thumb", ".thread .msg-user .bubble")
		b.shot("71-attach-thread-" + v.name)
	}
	b.desktop()
	b.checkNoProblems()
}

// A send the server refuses (here: the queue is full) keeps the composer's
// attachments with the draft, so nothing has to be picked again.
func TestBrowserRefusedSendKeepsAttachments(t *testing.T) {
	b := startBrowserWith(t, func(c *config.Config) {
		c.QueueLimit = 1
		c.DemoTokenDelay = 250 * time.Millisecond // the first reply streams until Stop
	})
	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)
	b.typeAndSend("A long first turn, please.")
	b.waitJS("the chat streaming", `/^\/chats\//.test(location.pathname) && !document.querySelector('.stop-btn').hidden`)
	b.typeAndSend("queued one")
	b.waitJS("the queued message", `document.querySelectorAll('.queue .queue-chip').length === 1`)

	eval[chromedp.Void](b, `(() => { `+jsFiles+`
		const input = document.querySelector('.attach-input');
		input.files = files([['notes.txt', 'text/plain', 'feed the cat']]).files;
		input.dispatchEvent(new Event('change', {bubbles: true}));
	})()`)
	b.waitJS("the upload", `document.querySelector('.attach-tray .attach-item.done')`)
	b.typeAndSend("over the queue limit")
	b.waitJS("the refusal", `/queue is full/i.test(document.querySelector('.toasts')?.textContent || '')`)
	b.waitJS("the draft and the attachment back", `document.querySelector('#composer-input').value === 'over the queue limit' &&
		[...document.querySelectorAll('.attach-tray .attach-item.done')].map(e => e.querySelector('.attach-name').textContent).join() === 'notes.txt'`)
	b.click(".stop-btn")
	b.checkNoProblems()
}
