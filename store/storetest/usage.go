package storetest

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

func testUsageLedger(t *testing.T, b *bundle) {
	day := time.Date(2026, 3, 31, 23, 0, 0, 0, time.UTC)
	other := uuid.New()
	recs := []store.UsageRecord{
		{Key: "a", ChatID: b.chat.ID, MessageID: 7, Kind: store.UsageKindStep, Provider: "openai", Model: "gpt",
			UsageTokens: store.UsageTokens{InputTokens: 10, OutputTokens: 5, CachedTokens: 2, ReasoningTokens: 1, CostNanos: 300}, CreatedAt: day},
		{Key: "b", ChatID: b.chat.ID, Kind: store.UsageKindTitle, Provider: "anthropic", Model: "claude",
			UsageTokens: store.UsageTokens{InputTokens: 4, OutputTokens: 3}, CreatedAt: day.Add(2 * time.Hour)},
		{Key: "c", ChatID: other, Kind: store.UsageKindStep, Provider: "openai", Model: "gpt",
			UsageTokens: store.UsageTokens{InputTokens: 100, OutputTokens: 50, CostNanos: 1000}, CreatedAt: day.Add(3 * time.Hour)},
	}
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		for _, r := range recs {
			r.UserID = b.user.ID
			ok, err := tx.UsageRecord(b.ctx, r)
			require.NoError(t, err)
			require.True(t, ok)
		}
		dup := recs[0]
		dup.UserID, dup.InputTokens = b.user.ID, 999
		ok, err := tx.UsageRecord(b.ctx, dup)
		require.NoError(t, err)
		require.False(t, ok, "a second record of a key is dropped")
		return nil
	}))
	user := uuid.NullUUID{UUID: b.user.ID, Valid: true}
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		all, err := tx.UsageSum(b.ctx, store.UsageSumParams{UserID: user})
		require.NoError(t, err)
		require.Equal(t, []store.UsageRow{{Key: "", Calls: 3, UsageTokens: store.UsageTokens{
			InputTokens: 114, OutputTokens: 58, CachedTokens: 2, ReasoningTokens: 1, CostNanos: 1300}}}, all)

		days, err := tx.UsageSum(b.ctx, store.UsageSumParams{UserID: user, GroupBy: store.UsageGroupDay})
		require.NoError(t, err)
		require.Len(t, days, 2)
		require.Equal(t, "2026-03-31", days[0].Key)
		require.Equal(t, int64(10), days[0].InputTokens)
		require.Equal(t, "2026-04-01", days[1].Key)
		require.Equal(t, int64(2), days[1].Calls)

		models, err := tx.UsageSum(b.ctx, store.UsageSumParams{GroupBy: store.UsageGroupModel, From: day.Add(time.Hour)})
		require.NoError(t, err)
		require.Equal(t, []string{"anthropic/claude", "openai/gpt"}, []string{models[0].Key, models[1].Key})
		require.Equal(t, int64(100), models[1].InputTokens, "From is inclusive of later rows only")

		chats, err := tx.UsageSum(b.ctx, store.UsageSumParams{ChatIDs: []uuid.UUID{b.chat.ID}, GroupBy: store.UsageGroupChat, To: day.Add(2 * time.Hour)})
		require.NoError(t, err)
		require.Equal(t, []store.UsageRow{{Key: b.chat.ID.String(), Calls: 1, UsageTokens: recs[0].UsageTokens}}, chats, "To is exclusive")

		users, err := tx.UsageSum(b.ctx, store.UsageSumParams{GroupBy: store.UsageGroupUser, ChatIDs: []uuid.UUID{}})
		require.NoError(t, err)
		require.Empty(t, users)

		_, err = tx.UsageSum(b.ctx, store.UsageSumParams{GroupBy: "week"})
		require.Error(t, err)
		return nil
	}))
}

func testUserBudgets(t *testing.T, b *bundle) {
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		_, err := tx.UserBudgetGet(b.ctx, b.user.ID)
		require.ErrorIs(t, err, store.ErrNotFound)
		return nil
	}))
	tokens, cost := int64(1000), 2.5
	set := func(bu *store.Budget) {
		require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error { return tx.UserBudgetSet(b.ctx, b.user.ID, bu, b.now) }))
	}
	get := func() (store.Budget, error) {
		var got store.Budget
		err := b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			var err error
			got, err = tx.UserBudgetGet(b.ctx, b.user.ID)
			return err
		})
		return got, err
	}
	set(&store.Budget{TokensPerDay: &tokens, CostPerMonth: &cost})
	got, err := get()
	require.NoError(t, err)
	require.Equal(t, store.Budget{TokensPerDay: &tokens, CostPerMonth: &cost}, got)
	set(&store.Budget{TokensPerMonth: &tokens})
	got, err = get()
	require.NoError(t, err)
	require.Equal(t, store.Budget{TokensPerMonth: &tokens}, got, "a set replaces every limit")
	set(nil)
	_, err = get()
	require.ErrorIs(t, err, store.ErrNotFound)
	err = b.s.InTx(b.ctx, func(tx store.Tx) error { return tx.UserBudgetSet(b.ctx, uuid.New(), &store.Budget{}, b.now) })
	require.ErrorIs(t, err, store.ErrNotFound)
}
