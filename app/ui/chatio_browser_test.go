package ui_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/sdk"
)

// jsCaptureDownloads makes the page's downloads (an <a download> clicked
// on a blob URL) land in window.__downloads as {name, text}. The blob is
// kept as it is made (the CSP does not let the page fetch blob: URLs).
const jsCaptureDownloads = `(() => {
	window.__downloads = [];
	const blobs = {};
	const create = URL.createObjectURL;
	URL.createObjectURL = (blob) => { const u = create(blob); blobs[u] = blob; return u; };
	const click = HTMLAnchorElement.prototype.click;
	HTMLAnchorElement.prototype.click = function () {
		if (!this.download || !blobs[this.href]) return click.call(this);
		const name = this.download;
		blobs[this.href].text().then(text => window.__downloads.push({name, text}));
	};
})()`

// TestBrowserChatSettingsExportImport: the chat menu's "Chat settings"
// edits the system prompt (saved with feedback, the server has it),
// "Export as Markdown" and "Export as JSON" download the chat, and the
// sidebar's "Import chat" picks the JSON: a new chat opens with the same
// messages; picking it again opens the same chat.
func TestBrowserChatSettingsExportImport(t *testing.T) {
	b := startBrowser(t)
	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)
	b.typeAndSend("Export me")
	b.waitJS("a chat page", `/^\/chats\/[0-9a-f-]{36}$/.test(location.pathname)`)
	chatID := uuid.MustParse(eval[string](b, `location.pathname.slice('/chats/'.length)`))
	b.waitJS("the reply", jsIdle+` && `+jsAssistantTexts+`.length === 1`)

	// Chat settings: the system prompt.
	openChatOptions := func(item string) {
		b.waitJS("the chat menu button", `!document.querySelector('.chat-header button[aria-label="Chat options"]').hidden`)
		b.click(`.chat-header button[aria-label="Chat options"]`)
		b.clickText(".menu .menu-item", item)
	}
	openChatOptions("Chat settings")
	b.waitJS("the settings dialog, read", `document.querySelector('.chat-settings-dialog[open]') && !document.querySelector('#chat-system-prompt').disabled`)
	require.Equal(t, "", eval[string](b, `document.querySelector('#chat-system-prompt').value`))
	b.setValue("#chat-system-prompt", "Answer like a pirate.")
	b.click(`#chat-settings-save`)
	b.waitJS("the saved feedback", `document.querySelector('#chat-settings-status').textContent.startsWith('Saved.')`)
	b.shot("80-chat-settings")
	var chat sdk.Chat
	require.NoError(t, b.api.Do(b.ctx, http.MethodGet, "/chats/"+chatID.String(), nil, &chat))
	require.Equal(t, "Answer like a pirate.", chat.SystemPrompt)
	b.clickText(".chat-settings-dialog .dialog-actions button", "Close")
	b.waitJS("the dialog closed", `!document.querySelector('.chat-settings-dialog')`)
	openChatOptions("Chat settings")
	b.waitJS("the saved prompt shown again", `document.querySelector('#chat-system-prompt')?.value === 'Answer like a pirate.'`)
	b.clickText(".chat-settings-dialog .dialog-actions button", "Close")
	b.waitJS("the dialog closed", `!document.querySelector('.chat-settings-dialog')`)

	// Export, both formats.
	eval[chromedp.Void](b, jsCaptureDownloads)
	openChatOptions("Export as Markdown")
	b.waitJS("the Markdown download", `window.__downloads.length === 1`)
	md := eval[map[string]string](b, `window.__downloads[0]`)
	require.True(t, strings.HasSuffix(md["name"], ".md"), md["name"])
	require.Contains(t, md["text"], "Export me")
	require.Contains(t, md["text"], "> Answer like a pirate.")
	openChatOptions("Export as JSON")
	b.waitJS("the JSON download", `window.__downloads.length === 2`)
	js := eval[map[string]string](b, `window.__downloads[1]`)
	require.True(t, strings.HasSuffix(js["name"], ".json"), js["name"])
	var export sdk.ChatExport
	require.NoError(t, json.Unmarshal([]byte(js["text"]), &export))
	require.Equal(t, chatID, export.Chat.ID)
	require.Equal(t, "Answer like a pirate.", export.Chat.SystemPrompt)

	// Import it from the sidebar: a new chat opens.
	pick := `(() => { const dt = new DataTransfer();
		dt.items.add(new File([window.__downloads[1].text], window.__downloads[1].name, {type: 'application/json'}));
		const input = document.querySelector('#import-chat-file'); input.files = dt.files;
		input.dispatchEvent(new Event('change', {bubbles: true})); })()`
	b.waitJS("the import button", `document.querySelector('.sidebar .import-chat')`)
	eval[chromedp.Void](b, pick)
	b.waitJS("the imported chat open", `/^\/chats\/[0-9a-f-]{36}$/.test(location.pathname) && location.pathname !== '/chats/`+chatID.String()+`'`)
	imported := eval[string](b, `location.pathname.slice('/chats/'.length)`)
	b.waitJS("its messages", jsUserTexts+`.includes('Export me') && `+jsAssistantTexts+`.length === 1`)
	b.waitJS("the import toast", `document.querySelector('#toasts')?.textContent.includes('Imported')`)
	b.shot("81-imported-chat")

	// The same file again: the same chat, said so.
	b.do(chromedp.Navigate(b.base + "/chats/" + chatID.String()))
	b.waitJS("the original chat", jsUserTexts+`.includes('Export me')`)
	eval[chromedp.Void](b, jsCaptureDownloads)
	eval[chromedp.Void](b, `window.__downloads = [null, {name: 'again.json', text: `+jsString(js["text"])+`}]`)
	eval[chromedp.Void](b, pick)
	b.waitJS("the earlier import opened", `location.pathname === '/chats/`+imported+`'`)
	b.waitJS("the imported-before toast", `document.querySelector('#toasts')?.textContent.includes('imported before')`)

	// On a phone the settings dialog fits, its Save button on screen.
	b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	openChatOptions("Chat settings")
	b.waitJS("the settings dialog, read", `document.querySelector('.chat-settings-dialog[open]') && !document.querySelector('#chat-system-prompt').disabled`)
	require.True(t, eval[bool](b, `(() => { const r = document.querySelector('#chat-settings-save').getBoundingClientRect();
		return r.left >= 0 && r.top >= 0 && r.right <= innerWidth && r.bottom <= innerHeight; })()`), "Save is on screen at 390 px")
	b.shot("82-chat-settings-phone")
	b.clickText(".chat-settings-dialog .dialog-actions button", "Close")
	b.do(chromedp.EmulateViewport(1280, 860))
	b.checkNoProblems()
}
