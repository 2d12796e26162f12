package ui_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/config"
)

// TestBrowserSubagents: with the agent tools on, the demo model spawns a
// subagent. The spawn card links to the child; the child sits under its
// root in the sidebar with its own status dot; the child's view says whose
// subagent it is and links back.
func TestBrowserSubagents(t *testing.T) {
	b := startBrowserWith(t, func(cfg *config.Config) { cfg.Worker.Subagents = true })
	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)

	b.typeAndSend(`/tool spawn_agent {"prompt": "Say hello to the team.", "title": "Greeter"}`)
	b.waitJS("a chat page", `/^\/chats\/[0-9a-f-]{36}$/.test(location.pathname)`)
	parent := eval[string](b, `location.pathname.slice('/chats/'.length)`)
	const link = `document.querySelector('.tool-card .agent-link')`
	b.waitJS("the spawn card's link to the child", link)
	child := eval[string](b, link+`.dataset.chatId`)
	require.Len(t, child, 36)
	require.Equal(t, "/chats/"+child, eval[string](b, link+`.getAttribute('href')`))
	require.Equal(t, "Open subagent “Greeter”", eval[string](b, link+`.textContent`))

	item := func(id string) string { return `document.querySelector('.chat-list .chat-item[data-id="` + id + `"]')` }
	b.waitJS("the child under its root in the sidebar",
		item(child)+`?.classList.contains('chat-child') && `+item(parent)+`.nextElementSibling === `+item(child))
	require.False(t, eval[bool](b, item(parent)+`.classList.contains('chat-child')`), "the root is not nested")
	require.Equal(t, "Greeter (subagent)", eval[string](b, item(child)+`.querySelector('a').title`))
	b.waitJS("the child finished: no status dot", item(child)+` && !`+item(child)+`.querySelector('.dot')`)
	b.shot("50-subagent-sidebar")

	b.clickText(".tool-card .agent-link", "Open subagent")
	b.waitJS("the child's page", `location.pathname === '/chats/`+child+`'`)
	b.waitJS("the child says whose subagent it is", `!document.querySelector('.subagent-of').hidden && document.querySelector('.subagent-of .parent-link')`)
	require.Contains(t, eval[string](b, `document.querySelector('.subagent-of').textContent`), "Subagent of")
	require.Equal(t, "/chats/"+parent, eval[string](b, `document.querySelector('.subagent-of .parent-link').getAttribute('href')`))
	b.shot("51-subagent-view")

	b.clickText(".subagent-of .parent-link", "")
	b.waitJS("back on the parent", `location.pathname === '/chats/`+parent+`' && document.querySelector('.subagent-of').hidden`)
	b.checkNoProblems()
}
