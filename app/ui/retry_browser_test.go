package ui_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
)

// TestBrowserProviderErrorInline: a provider that refuses connections is
// retried with its cause shown inline above the composer (not in a
// tooltip); "Switch model" reruns the last message on another model, and
// "Stop retrying" ends the attempts.
func TestBrowserProviderErrorInline(t *testing.T) {
	down := strings.TrimSuffix(closedPortURL(t), "/mcp") + "/v1"
	b := startBrowserWith(t, func(cfg *config.Config) {
		cfg.OpenAIBaseURL = down
		cfg.DefaultModel = "openai/test-model"
		cfg.Worker.BackoffBase = time.Minute // the notice stays while the test looks
	})
	chat, err := b.api.CreateChat(b.ctx, sdk.CreateChatRequest{Title: "Unreachable provider", Content: sdk.Text("Hello over there")})
	require.NoError(t, err)
	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)
	b.do(chromedp.Navigate(b.base + "/chats/" + chat.ID.String()))
	notice := `document.querySelector('.retry-notice')`
	b.waitJS("the inline cause", notice+`?.querySelector('.retry-cause strong')?.textContent === 'Connection refused'`)
	require.Contains(t, eval[string](b, notice+`.querySelector('.retry-error').textContent`), "connection refused", "the provider's own words, inline")
	require.Contains(t, eval[string](b, `document.querySelector('.status-line').textContent`), "retrying in")
	b.checkViews(everyView, "73-retry-cause", ".retry-cause strong", ".retry-error", ".retry-notice .switch-model", ".retry-notice .btn")

	// Switch model: the demo model answers the same message.
	b.setValue(".retry-notice .switch-model", eval[string](b, `[...document.querySelectorAll('.retry-notice .switch-model option')].find(o => /demo/i.test(o.textContent))?.value || ''`))
	b.waitJS("the demo's reply", jsIdle+` && [...document.querySelectorAll('.thread .msg-assistant')].some(e => e.textContent.includes('demo model'))`)
	require.False(t, eval[bool](b, notice+` !== null`), "no notice once the chat is idle")
	require.Equal(t, []string{"Hello over there"}, eval[[]string](b, jsUserTexts))

	// Stop retrying: back on the unreachable model, the attempts end.
	broken := uuid.MustParse(eval[string](b, `[...document.querySelectorAll('.composer .picker:not(.effort) option')].find(o => o.textContent.includes('test-model')).value`))
	_, err = b.api.SendMessage(b.ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("And once more"), ModelConfigID: &broken})
	require.NoError(t, err)
	b.waitJS("the inline cause again", notice+`?.querySelector('.retry-cause strong')?.textContent === 'Connection refused'`)
	b.clickText(".retry-notice .btn", "Stop retrying")
	b.waitJS("the stopped chat", jsIdle+` && !`+notice)
	got, err := b.api.Chat(b.ctx, chat.ID)
	require.NoError(t, err)
	require.Equal(t, sdk.ChatStatusWaiting, got.Status)
	b.checkNoProblems()
}
