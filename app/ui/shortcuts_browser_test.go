package ui_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestBrowserShortcuts: Ctrl+Shift+O opens a new chat from a chat, and
// "?" (outside the composer) shows the shortcut sheet, on a phone too.
func TestBrowserShortcuts(t *testing.T) {
	b := startBrowser(t)
	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)
	b.typeAndSend("A chat to leave with the keyboard")
	b.waitJS("the chat page", `/^\/chats\/[0-9a-f-]{36}$/.test(location.pathname) && `+jsIdle)
	eval[chromedp.Void](b, `window.__sameDocument = true`)
	b.do(chromedp.KeyEvent("o", chromedp.KeyModifiers(chromedp.ModifierCtrl, chromedp.ModifierShift)))
	b.waitJS("the new-chat page", `location.pathname === '/' && document.querySelector('.hero')`)
	require.True(t, eval[bool](b, `window.__sameDocument === true`), "no reload")

	// "?" typed into the composer is text; elsewhere it opens the sheet.
	b.do(chromedp.Focus(chromedp.CSS("#composer-input")), chromedp.KeyEvent("?"))
	require.False(t, eval[bool](b, `!!document.querySelector('dialog.shortcuts[open]')`))
	require.Equal(t, "?", eval[string](b, `document.querySelector('#composer-input').value`))
	b.setValue("#composer-input", "")
	eval[chromedp.Void](b, `document.activeElement.blur()`)
	b.do(chromedp.KeyEvent("?"))
	b.waitJS("the sheet", `document.querySelector('dialog.shortcuts[open]')?.textContent.includes('New chat')`)
	b.checkViews([]view{phoneLight, phoneDark}, "77-shortcuts", "dialog.shortcuts h2", "dialog.shortcuts kbd", "dialog.shortcuts .btn")
	b.do(chromedp.KeyEvent("\x1b"))
	b.waitJS("the sheet closed", `!document.querySelector('dialog.shortcuts')`)
	b.checkNoProblems()
}
