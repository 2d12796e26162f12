package ui_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
)

// jsComposerOffscreen lists the composer's controls (every rendered
// button, picker and the message box) whose box is not wholly inside the
// window: on a phone the Stop and Send buttons were pushed off the right
// edge while a reply streamed.
const jsComposerOffscreen = `[...document.querySelectorAll('.composer textarea, .composer-bar button, .composer-bar select, .composer-bar [role="group"]')]
	.filter((e) => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden')
	.filter((e) => { const r = e.getBoundingClientRect(); return r.left < -0.5 || r.right > innerWidth + 0.5 || r.top < -0.5 || r.bottom > innerHeight + 0.5; })
	.map((e) => (e.getAttribute('aria-label') || e.className || e.tagName) + ' ' + [Math.round(e.getBoundingClientRect().left), Math.round(e.getBoundingClientRect().right)].join('..') + ' of ' + innerWidth)`

// TestBrowserComposerFits: every control of the composer lies inside the
// window at 360, 390, 768 and 1280 px wide, in both themes, idle and while
// a reply streams (when Stop, the busy toggle and Send share the row).
func TestBrowserComposerFits(t *testing.T) {
	// A slow demo model: the reply streams until Stop.
	b := startBrowserWith(t, func(c *config.Config) { c.DemoTokenDelay = 250 * time.Millisecond })
	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)
	views := []view{
		{"w360-dark", 360, 780, "dark"}, {"w390-light", 390, 844, "light"},
		{"w768-dark", 768, 1000, "dark"}, {"w1280-light", 1280, 800, "light"},
	}
	check := func(state string) {
		for _, v := range views {
			b.at(v)
			b.waitJS("the composer laid out", `document.querySelector('.composer-bar')?.getBoundingClientRect().width > 0`)
			off := eval[[]string](b, jsComposerOffscreen)
			if len(off) > 0 {
				b.shot(fmt.Sprintf("composer-%s-%s", state, v.name))
			}
			require.Empty(t, off, "composer controls outside the window at %s, %s", v.name, state)
			b.shot(fmt.Sprintf("72-composer-%s-%s", state, v.name))
		}
		b.desktop()
	}

	check("new-chat")
	b.typeAndSend("Please write a long answer about streaming, with every detail you know about it.")
	b.waitJS("the chat page", `/^\/chats\/[0-9a-f-]{36}$/.test(location.pathname)`)
	b.waitJS("a reply streaming, Stop shown", jsPreviewLen+` > 5 && !document.querySelector('.stop-btn').hidden`)
	check("streaming")
	require.True(t, eval[bool](b, `!!document.querySelector('.thread .streaming')`), "the reply was still streaming while the widths were checked")
	b.click(".stop-btn")
	b.waitJS("the chat idle", jsIdle)
	check("idle")
	b.checkNoProblems()
}

// TestBrowserModelPickerKeepsChoice: a model picked in an open chat stays
// picked when a turn ends (the chat is loaded again then); it used to go
// back to the chat's last model at every turn end.
func TestBrowserModelPickerKeepsChoice(t *testing.T) {
	b := startBrowserWith(t, func(c *config.Config) {
		c.Models = []string{"openai/gpt-4.1-mini"}
		c.OpenAIAPIKey = "sk-unused"
	})
	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)
	models, err := b.api.Models(b.ctx)
	require.NoError(t, err)
	ids := map[string]uuid.UUID{}
	for _, m := range models.Models {
		ids[m.Model] = m.ID
	}
	require.Contains(t, ids, "demo")
	require.Contains(t, ids, "gpt-4.1-mini")
	demo := ids["demo"]
	chat, err := b.api.CreateChat(b.ctx, sdk.CreateChatRequest{Content: sdk.Text("first"), ModelConfigID: &demo})
	require.NoError(t, err)
	b.do(chromedp.Navigate(b.base + "/chats/" + chat.ID.String()))
	b.waitJS("the answered chat", jsIdle+` && document.querySelectorAll('.thread .msg-assistant').length === 1`)
	picker := `document.querySelector('.composer .picker:not(.effort)')`
	b.waitJS("the chat's model in the picker", picker+`.value === `+jsString(demo.String()))

	other := ids["gpt-4.1-mini"].String()
	b.setValue(".composer .picker:not(.effort)", other)
	// Another client's turn ends: the page loads the chat again.
	_, err = b.api.SendMessage(b.ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("second"), ModelConfigID: &demo})
	require.NoError(t, err)
	b.waitJS("the second reply", jsIdle+` && document.querySelectorAll('.thread .msg-assistant').length === 2`)
	require.Equal(t, other, eval[string](b, picker+`.value`), "the picked model stays picked")
	b.checkNoProblems()
}
