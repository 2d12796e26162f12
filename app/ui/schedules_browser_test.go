package ui_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/sdk"
)

// TestBrowserScheduleAndWebhook: the chat menu's Schedule dialog adds a
// "weekdays at" schedule (its next run and empty history shown), a prompt
// a schedule sent shows as "Scheduled" in the thread, and Settings
// registers a webhook (its secret shown once).
func TestBrowserScheduleAndWebhook(t *testing.T) {
	b := startBrowser(t)
	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)
	b.typeAndSend("Morning")
	b.waitJS("a chat page", `/^\/chats\/[0-9a-f-]{36}$/.test(location.pathname)`)
	chatID := uuid.MustParse(eval[string](b, `location.pathname.slice('/chats/'.length)`))

	b.waitJS("the chat menu button", `!document.querySelector('.chat-header button[aria-label="Chat options"]').hidden`)
	b.click(`.chat-header button[aria-label="Chat options"]`)
	b.clickText(".menu .menu-item", "Schedule")
	b.waitJS("the schedule dialog", `document.querySelector('.schedule-dialog[open]') && document.querySelector('.schedule-list').textContent.includes('No schedules yet.')`)
	b.setValue("#schedule-prompt", "Summarise the night")
	b.setValue("#schedule-preset", "weekdays")
	b.setValue("#schedule-time", "07:30")
	b.clickText(".schedule-form button", "Add schedule")
	b.waitJS("the schedule listed with its next run", `[...document.querySelectorAll('.schedule')].some(e =>
		e.querySelector('.schedule-when').textContent.startsWith('weekdays at 07:30') && e.querySelector('.schedule-next').textContent.includes('next'))`)
	var list []sdk.Schedule
	require.NoError(t, b.api.Do(b.ctx, http.MethodGet, "/chats/"+chatID.String()+"/schedules", nil, &list))
	require.Len(t, list, 1)
	require.Equal(t, "30 7 * * 1-5", list[0].Cron)
	require.NotNil(t, list[0].NextRunAt)
	b.clickText(".schedule button", "History")
	b.waitJS("the empty run history", `document.querySelector('.schedule-runs').textContent.includes('No runs yet.')`)
	b.shot("70-schedule-dialog")
	b.clickText(".schedule-dialog .dialog-actions button", "Close")
	b.waitJS("the dialog closed", `!document.querySelector('.schedule-dialog')`)

	// A schedule that fires in a moment: its prompt shows as scheduled in
	// the open chat, a person's does not.
	at := time.Now().Add(time.Second).Truncate(time.Second).Add(time.Second)
	require.NoError(t, b.api.Do(b.ctx, http.MethodPost, "/chats/"+chatID.String()+"/schedules",
		sdk.CreateScheduleRequest{Content: sdk.Text("Scheduled hello"), At: &at}, nil))
	b.waitJS("the scheduled prompt labelled", `[...document.querySelectorAll('.msg-user')].some(e =>
		e.textContent.includes('Scheduled hello') && e.querySelector('.scheduled-label'))`)
	require.False(t, eval[bool](b, `[...document.querySelectorAll('.msg-user')].some(e =>
		e.textContent.includes('Morning') && !!e.querySelector('.scheduled-label'))`), "a person's prompt is not labelled")

	b.do(chromedp.Navigate(b.base + "/settings"))
	b.waitJS("the webhooks section", `document.querySelector('#settings-webhooks') && document.querySelector('#settings-webhooks').textContent.includes('No webhooks.')`)
	b.setValue("#webhook-url", "https://hooks.example.com/chatd")
	b.clickText(".webhook-form button", "Add webhook")
	b.waitJS("the webhook and its secret", `document.querySelector('.webhook') && !document.querySelector('.webhook-secret').hidden &&
		document.querySelector('.webhook-secret').textContent.includes('whsec_')`)
	var hooks []sdk.Webhook
	require.NoError(t, b.api.Do(b.ctx, http.MethodGet, "/webhooks", nil, &hooks))
	require.Len(t, hooks, 1)
	require.Equal(t, []string{sdk.EventTurnCompleted}, hooks[0].Events)
	b.checkNoProblems()
}
