package ui_test

import (
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
)

// TestBrowserUsage: a turn on the demo model is accounted for; the usage
// page draws the month's days as an SVG chart with the day's bars, lists
// the model and (for an admin) everyone; the spent daily budget shows
// above the chat's composer once the turn that spent it ends, and above
// the new chat's composer.
func TestBrowserUsage(t *testing.T) {
	b := startBrowserWith(t, func(c *config.Config) { c.BudgetTokensPerDay = 1 })
	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)
	b.typeAndSend("Count my tokens")
	b.waitJS("the demo's answer", `/^\/chats\//.test(location.pathname) && `+jsIdle+` && document.querySelectorAll('.thread .msg-assistant').length === 1`)

	chatPath := eval[string](b, `location.pathname`)
	b.clickText(".sidebar .usage-link", "Usage")
	b.waitJS("the usage page", `location.pathname === '/usage' && document.querySelector('svg.usage-chart')`)
	today := eval[string](b, `new Date().toISOString().slice(0, 10)`)
	b.waitJS("today's bars", `document.querySelector('svg.usage-chart rect.bar-input[data-day="`+today+`"]')`)
	require.Greater(t, eval[float64](b, `+document.querySelector('svg.usage-chart rect.bar-input[data-day="`+today+`"]').getAttribute('height')`), 0.0)
	require.Contains(t, eval[string](b, `document.querySelector('table[aria-label="Per model"]').textContent`), "demo")
	require.Contains(t, eval[string](b, `document.querySelector('table[aria-label="Everyone"]').textContent`), "admin")
	require.Contains(t, eval[string](b, `document.querySelector('.usage-budget .budget-notice.over').textContent`), "daily token budget is spent")
	b.shot("70-usage-page")

	b.do(chromedp.Navigate(b.base + "/"))
	b.waitJS("the notice above the composer", `document.querySelector('.composer-wrap .budget-notice.over')?.textContent.includes('daily token budget is spent')`)

	// With room for one more token, the chat shows no notice; the turn
	// that spends it ends and the chat's composer says so without a reload.
	var me sdk.User
	require.NoError(t, b.api.Do(b.ctx, http.MethodGet, "/users/me", nil, &me))
	var used sdk.UsageResponse
	require.NoError(t, b.api.Do(b.ctx, http.MethodGet, "/users/me/usage", nil, &used))
	limit := used.Total.InputTokens + used.Total.OutputTokens + 1
	require.NoError(t, b.api.Do(b.ctx, http.MethodPatch, "/users/"+me.ID.String(),
		map[string]any{"budget": map[string]any{"tokens_per_day": limit * 100}}, nil))
	b.do(chromedp.Navigate(b.base + chatPath))
	b.waitJS("the chat's composer", `document.querySelector('.chat-view textarea')`)
	require.NoError(t, b.api.Do(b.ctx, http.MethodPatch, "/users/"+me.ID.String(),
		map[string]any{"budget": map[string]any{"tokens_per_day": limit}}, nil))
	require.False(t, eval[bool](b, `!!document.querySelector('.chat-view .budget-notice')`), "no notice while the budget has room")
	b.typeAndSend("One more")
	b.waitJS("the notice once the turn ended", `document.querySelectorAll('.thread .msg-assistant').length === 2 && `+jsIdle+` &&
		document.querySelector('.chat-view .budget-notice.over')?.textContent.includes('daily token budget is spent')`)
	b.checkNoProblems()
}
