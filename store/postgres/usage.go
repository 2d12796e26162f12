package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

// UsageRecord appends a ledger row unless its key is recorded.
func (t *tx) UsageRecord(ctx context.Context, r store.UsageRecord) (bool, error) {
	var msg *int64
	if r.MessageID != 0 {
		msg = &r.MessageID
	}
	tag, err := t.tx.Exec(ctx, query.UsageRecord,
		r.Key, r.UserID, r.ChatID, msg, r.Kind, r.ModelConfigID, r.Provider, r.Model,
		r.InputTokens, r.OutputTokens, r.CachedTokens, r.ReasoningTokens, r.CostNanos, r.CreatedAt)
	if err != nil {
		return false, fmt.Errorf("record usage %s: %w", r.Key, translate(err))
	}
	return tag.RowsAffected() == 1, nil
}

// usageGroupKey is the SQL of a grouping's key.
var usageGroupKey = map[string]string{
	store.UsageGroupNone:  `''`,
	store.UsageGroupDay:   `to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')`,
	store.UsageGroupModel: `provider || '/' || model`,
	store.UsageGroupChat:  `chat_id::text`,
	store.UsageGroupUser:  `user_id::text`,
}

// UsageSum adds up the ledger rows matching p.
func (t *tx) UsageSum(ctx context.Context, p store.UsageSumParams) ([]store.UsageRow, error) {
	key, ok := usageGroupKey[p.GroupBy]
	if !ok {
		return nil, fmt.Errorf("sum usage: unknown grouping %q", p.GroupBy)
	}
	var a args
	where := []string{"true"}
	if p.UserID.Valid {
		where = append(where, "user_id = "+a.add(p.UserID.UUID))
	}
	if p.ChatIDs != nil {
		where = append(where, "chat_id = ANY("+a.add(p.ChatIDs)+"::uuid[])")
	}
	if !p.From.IsZero() {
		where = append(where, "created_at >= "+a.add(p.From))
	}
	if !p.To.IsZero() {
		where = append(where, "created_at < "+a.add(p.To))
	}
	q := `SELECT ` + key + ` AS k, count(*), coalesce(sum(input_tokens), 0)::bigint, coalesce(sum(output_tokens), 0)::bigint,
		coalesce(sum(cached_tokens), 0)::bigint, coalesce(sum(reasoning_tokens), 0)::bigint, coalesce(sum(cost_nanos), 0)::bigint
		FROM usage_records WHERE ` + strings.Join(where, " AND ")
	if p.GroupBy != store.UsageGroupNone {
		q += ` GROUP BY k ORDER BY k`
	}
	rows, err := t.tx.Query(ctx, q, a...)
	if err != nil {
		return nil, fmt.Errorf("sum usage: %w", translate(err))
	}
	defer rows.Close()
	out := []store.UsageRow{}
	for rows.Next() {
		var r store.UsageRow
		if err := rows.Scan(&r.Key, &r.Calls, &r.InputTokens, &r.OutputTokens, &r.CachedTokens, &r.ReasoningTokens, &r.CostNanos); err != nil {
			return nil, fmt.Errorf("sum usage: %w", translate(err))
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sum usage: %w", translate(err))
	}
	return out, nil
}

// UserBudgetGet reads a user's budget override.
func (t *tx) UserBudgetGet(ctx context.Context, userID uuid.UUID) (store.Budget, error) {
	var b store.Budget
	err := t.tx.QueryRow(ctx, query.UserBudgetGet, userID).Scan(&b.TokensPerDay, &b.TokensPerMonth, &b.CostPerDay, &b.CostPerMonth)
	if err != nil {
		return store.Budget{}, fmt.Errorf("get budget of user %s: %w", userID, translate(err))
	}
	return b, nil
}

// UserBudgetSet writes or removes a user's budget override.
func (t *tx) UserBudgetSet(ctx context.Context, userID uuid.UUID, b *store.Budget, now time.Time) error {
	if b == nil {
		if _, err := t.tx.Exec(ctx, query.UserBudgetSetDelete, userID); err != nil {
			return fmt.Errorf("remove budget of user %s: %w", userID, translate(err))
		}
		return nil
	}
	_, err := t.tx.Exec(ctx, query.UserBudgetSetInsert,
		userID, b.TokensPerDay, b.TokensPerMonth, b.CostPerDay, b.CostPerMonth, now)
	if err != nil {
		if errors.Is(translate(err), store.ErrForeignKey) {
			return fmt.Errorf("set budget of user %s: %w", userID, store.ErrNotFound)
		}
		return fmt.Errorf("set budget of user %s: %w", userID, translate(err))
	}
	return nil
}
