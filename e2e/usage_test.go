package e2e_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// budgetRig is an API (no worker: turns are admitted and stay pending)
// on a fake clock, with an admin root and a user bob.
type budgetRig struct {
	ctx        context.Context
	clock      *clock.Fake
	h          *apptest.Harness
	admin, bob *sdk.Client
	adminUser  store.User
}

func newBudgetRig(t *testing.T, newStore func(t testing.TB) store.Store, cfg config.Config) *budgetRig {
	t.Helper()
	r := &budgetRig{clock: clock.NewFake(time.Date(2026, 5, 31, 20, 0, 0, 0, time.UTC))}
	cfg.Clock = r.clock
	r.h = apptest.Start(t, apptest.Options{Store: newStore, Config: cfg, NoStart: true})
	ctx, cancel := context.WithTimeout(r.h.Ctx, time.Minute)
	t.Cleanup(cancel)
	r.ctx = ctx
	adminTok, admin := r.h.CreateToken(t, "root", true)
	r.admin, r.bob, r.adminUser = r.h.Client(adminTok), r.h.NewUser(t, "bob"), admin
	return r
}

// spend records usage of user at the fake clock's now, as a step would.
func (r *budgetRig) spend(t *testing.T, user uuid.UUID, model string, tokens store.UsageTokens) {
	t.Helper()
	require.NoError(t, r.h.Store.InTx(r.ctx, func(tx store.Tx) error {
		_, err := tx.UsageRecord(r.ctx, store.UsageRecord{Key: uuid.NewString(), UserID: user, ChatID: uuid.New(),
			Kind: store.UsageKindStep, Provider: "openai", Model: model, UsageTokens: tokens, CreatedAt: r.clock.Now()})
		return err
	}))
}

func requireAPICode(t *testing.T, err error, status int, code string) *sdk.Error {
	t.Helper()
	var e *sdk.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, status, e.StatusCode, e.Error())
	require.Equal(t, code, e.Code)
	return e
}

// TestBudgetsRefuseAndReset: over the default daily token budget (admins
// included), POST /chats with content and POST .../messages answer 429
// BUDGET_EXCEEDED naming the limit and its reset, creating nothing; an
// admin's override lifts or tightens it, null restores the default; the
// next UTC day (fake clock) lets the turn in.
func TestBudgetsRefuseAndReset(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := newBudgetRig(t, newStore, config.Config{BudgetTokensPerDay: 100})
		r.spend(t, r.adminUser.ID, "gpt", store.UsageTokens{InputTokens: 80, OutputTokens: 20})

		_, err := r.admin.CreateChat(r.ctx, sdk.CreateChatRequest{Content: sdk.Text("hi")})
		e := requireAPICode(t, err, 429, sdk.CodeBudgetExceeded)
		require.Contains(t, e.Message, "tokens_per_day")
		require.Contains(t, e.Message, "2026-06-01T00:00:00Z", "when it resets")
		chats, err := r.admin.ListChats(r.ctx, sdk.ListChatsOptions{})
		require.NoError(t, err)
		require.Empty(t, chats, "a refused create creates nothing")

		// A chat without a prompt starts no turn: allowed.
		chat, err := r.admin.CreateChat(r.ctx, sdk.CreateChatRequest{Title: "empty"})
		require.NoError(t, err)
		_, err = r.admin.SendMessage(r.ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("hi")})
		requireAPICode(t, err, 429, sdk.CodeBudgetExceeded)

		var me sdk.UsageResponse
		require.NoError(t, r.admin.Do(r.ctx, "GET", "/users/me/usage", nil, &me))
		require.NotNil(t, me.Budget)
		require.Equal(t, "tokens_per_day", me.Budget.Exceeded)
		require.Equal(t, int64(80), me.Total.InputTokens)
		require.Equal(t, time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), me.From, "the current month by default")

		// An override lifts it; null brings the default back.
		raise := json.RawMessage(`{"tokens_per_day": 1000, "tokens_per_month": null, "cost_per_day": null, "cost_per_month": null}`)
		require.NoError(t, r.admin.Do(r.ctx, "PATCH", "/users/root", sdk.UpdateUserRequest{Budget: raise}, nil))
		_, err = r.admin.SendMessage(r.ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("one")})
		require.NoError(t, err)
		require.NoError(t, r.admin.Do(r.ctx, "PATCH", "/users/root", sdk.UpdateUserRequest{Budget: json.RawMessage(`null`)}, nil))
		_, err = r.admin.SendMessage(r.ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("two")})
		requireAPICode(t, err, 429, sdk.CodeBudgetExceeded)

		// Bob has his own budget: not over.
		_, err = r.bob.CreateChat(r.ctx, sdk.CreateChatRequest{Content: sdk.Text("hello")})
		require.NoError(t, err)

		// A cost limit per month: the spend of the month counts, and it
		// resets with the month.
		r.clock.Advance(4 * time.Hour) // 2026-06-01T00:00Z: a new day and month
		_, err = r.admin.SendMessage(r.ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("three")})
		require.NoError(t, err, "the daily budget reset at midnight UTC")
		cost := json.RawMessage(`{"cost_per_month": 0.5}`)
		require.NoError(t, r.admin.Do(r.ctx, "PATCH", "/users/root", sdk.UpdateUserRequest{Budget: cost}, nil))
		r.spend(t, r.adminUser.ID, "claude", store.UsageTokens{InputTokens: 1, CostNanos: 600_000_000})
		_, err = r.admin.SendMessage(r.ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("four")})
		e = requireAPICode(t, err, 429, sdk.CodeBudgetExceeded)
		require.Contains(t, e.Message, "cost_per_month")
		require.Contains(t, e.Message, "2026-07-01T00:00:00Z")

		// Bad budgets are 400s; bob may not set one.
		err = r.admin.Do(r.ctx, "PATCH", "/users/root", sdk.UpdateUserRequest{Budget: json.RawMessage(`{"tokens_per_day": -1}`)}, nil)
		requireAPICode(t, err, 400, sdk.CodeValidation)
		err = r.admin.Do(r.ctx, "PATCH", "/users/root", sdk.UpdateUserRequest{Budget: json.RawMessage(`{"tokens": 5}`)}, nil)
		requireAPICode(t, err, 400, sdk.CodeValidation)
		err = r.bob.Do(r.ctx, "PATCH", "/users/bob", sdk.UpdateUserRequest{Budget: json.RawMessage(`null`)}, nil)
		requireAPICode(t, err, 403, sdk.CodeForbidden)
	})
}

// TestUsageReports: a user's report by day, model and chat over a window,
// the admin's report of everyone by user, and who may read which.
func TestUsageReports(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := newBudgetRig(t, newStore, config.Config{})
		bob, err := r.bob.Me(r.ctx)
		require.NoError(t, err)
		r.spend(t, bob.ID, "gpt", store.UsageTokens{InputTokens: 10, OutputTokens: 2, CachedTokens: 4, ReasoningTokens: 1, CostNanos: 1_500_000_000})
		r.clock.Advance(5 * time.Hour) // June 1st
		r.spend(t, bob.ID, "claude", store.UsageTokens{InputTokens: 7, OutputTokens: 3})
		r.spend(t, r.adminUser.ID, "gpt", store.UsageTokens{InputTokens: 100})

		var days sdk.UsageResponse
		require.NoError(t, r.bob.Do(r.ctx, "GET", "/users/me/usage?from=2026-05-01&to=2026-07-01&group_by=day", nil, &days))
		require.Len(t, days.Rows, 2)
		require.Equal(t, "2026-05-31", days.Rows[0].Day)
		require.Equal(t, sdk.UsageTotals{InputTokens: 10, OutputTokens: 2, CachedTokens: 4, ReasoningTokens: 1, Cost: 1.5}, days.Rows[0].UsageTotals)
		require.Equal(t, "2026-06-01", days.Rows[1].Day)
		require.Equal(t, int64(17), days.Total.InputTokens)

		var models sdk.UsageResponse
		require.NoError(t, r.bob.Do(r.ctx, "GET", "/users/me/usage?group_by=model", nil, &models))
		require.Len(t, models.Rows, 1, "the current month (June) only")
		require.Equal(t, "openai/claude", models.Rows[0].Model)

		var all sdk.UsageResponse
		require.NoError(t, r.admin.Do(r.ctx, "GET", "/usage?from=2026-05-01T00:00:00Z&to=2026-07-01T00:00:00Z", nil, &all))
		require.Equal(t, "user", all.GroupBy)
		names := map[string]int64{}
		for _, row := range all.Rows {
			names[row.Username] = row.InputTokens
		}
		require.Equal(t, map[string]int64{"bob": 17, "root": 100}, names)

		requireAPICode(t, r.bob.Do(r.ctx, "GET", "/usage", nil, nil), 403, sdk.CodeForbidden)
		requireAPICode(t, r.bob.Do(r.ctx, "GET", "/users/root/usage", nil, nil), 403, sdk.CodeForbidden)
		require.NoError(t, r.admin.Do(r.ctx, "GET", "/users/bob/usage", nil, nil))
		requireAPICode(t, r.bob.Do(r.ctx, "GET", "/users/me/usage?group_by=week", nil, nil), 400, sdk.CodeValidation)
		requireAPICode(t, r.bob.Do(r.ctx, "GET", "/users/me/usage?from=yesterday", nil, nil), 400, sdk.CodeValidation)
		requireAPICode(t, r.bob.Do(r.ctx, "GET", "/users/me/usage?from=2026-06-02&to=2026-06-01", nil, nil), 400, sdk.CodeValidation)
	})
}
