package ui_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/sdk"
)

// TestBrowserProjects walks the project pages: create a project, edit its
// instructions, add, edit and delete a memory, start a chat in it and find
// the chat on the project's page.
func TestBrowserProjects(t *testing.T) {
	b := startBrowser(t)
	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)

	b.clickText(".sidebar .projects-link", "Projects")
	b.waitJS("the projects page", `location.pathname === '/projects' && document.querySelector('#new-project-name')`)
	b.setValue("#new-project-name", "Launch")
	b.clickText(".project-create button", "Create project")
	b.waitJS("the project page", `/^\/projects\/[0-9a-f-]{36}$/.test(location.pathname) && document.querySelector('.chat-title-h')?.textContent === 'Launch'`)
	id := uuid.MustParse(eval[string](b, `location.pathname.slice('/projects/'.length)`))

	// Instructions.
	b.setValue("#project-instructions", "Answer in French.")
	b.clickText(".project-page button", "Save instructions")
	b.waitJS("the saved toast", `[...document.querySelectorAll('.toast')].some(e => e.textContent.includes('Instructions saved'))`)
	p, err := b.api.Project(b.ctx, id)
	require.NoError(t, err)
	require.Equal(t, "Answer in French.", p.Instructions)

	// A memory: add, edit, delete.
	b.setValue("#memory-name", "style")
	b.setValue("#memory-content", "Terse answers.")
	b.clickText(".memory-add button", "Add memory")
	memory := `document.querySelector('.memory[data-name="style"]')`
	b.waitJS("the memory card", memory+` && `+memory+`.querySelector('textarea').value === 'Terse answers.'`)
	require.Contains(t, eval[string](b, memory+`.textContent`), "saved by you")
	b.click(`.memory[data-name="style"] .memory-edit`)
	b.setValue(`.memory[data-name="style"] textarea`, "Terse, kind answers.")
	b.click(`.memory[data-name="style"] .memory-save`)
	b.waitJS("the edited memory", memory+`?.querySelector('textarea').value === 'Terse, kind answers.' && `+memory+`.querySelector('textarea').readOnly`)
	m, err := b.api.Memory(b.ctx, id, "style")
	require.NoError(t, err)
	require.Equal(t, "Terse, kind answers.", m.Content)
	b.shot("60-project-page")
	b.click(`.memory[data-name="style"] .memory-delete`)
	b.waitJS("the confirmation", `document.querySelector('dialog[open] button[value="ok"]')`)
	b.click(`dialog[open] button[value="ok"]`)
	b.waitJS("the memory gone", `!`+memory+` && document.querySelector('.memory-list').textContent.includes('No memories yet.')`)
	ms, err := b.api.Memories(b.ctx, id)
	require.NoError(t, err)
	require.Empty(t, ms)

	// A new chat in the project.
	b.click(`.new-project-chat`)
	b.waitJS("the new-chat page for the project", `location.pathname === '/' && document.querySelector('.project-note')?.textContent === 'In project Launch'`)
	b.typeAndSend("Bonjour")
	b.waitJS("a chat page", `/^\/chats\/[0-9a-f-]{36}$/.test(location.pathname)`)
	chatID := uuid.MustParse(eval[string](b, `location.pathname.slice('/chats/'.length)`))
	c, err := b.api.Chat(b.ctx, chatID)
	require.NoError(t, err)
	require.Equal(t, &id, c.ProjectID)
	chats, err := b.api.ListChats(b.ctx, sdk.ListChatsOptions{ProjectID: id})
	require.NoError(t, err)
	require.Len(t, chats, 1)

	b.do(chromedp.Navigate(b.base + "/projects/" + id.String()))
	b.waitJS("the chat on the project page", `document.querySelector('.project-chats a[href="/chats/`+chatID.String()+`"]')`)
	b.checkNoProblems()
}
