package sqlite

import (
	"context"
	"database/sql"
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
	var msg any
	if r.MessageID != 0 {
		msg = r.MessageID
	}
	res, err := t.tx.ExecContext(ctx, query.UsageRecord,
		r.Key, r.UserID.String(), r.ChatID.String(), msg, r.Kind, nullUUID(r.ModelConfigID), r.Provider, r.Model,
		r.InputTokens, r.OutputTokens, r.CachedTokens, r.ReasoningTokens, r.CostNanos, ts(r.CreatedAt))
	if err != nil {
		return false, fmt.Errorf("record usage %s: %w", r.Key, translate(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("record usage %s: %w", r.Key, translate(err))
	}
	return n == 1, nil
}

// usageGroupKey is the SQL of a grouping's key (timestamps are fixed-width
// UTC text, so the day is their first ten characters).
var usageGroupKey = map[string]string{
	store.UsageGroupNone:  `''`,
	store.UsageGroupDay:   `substr(created_at, 1, 10)`,
	store.UsageGroupModel: `provider || '/' || model`,
	store.UsageGroupChat:  `chat_id`,
	store.UsageGroupUser:  `user_id`,
}

// UsageSum adds up the ledger rows matching p.
func (t *tx) UsageSum(ctx context.Context, p store.UsageSumParams) ([]store.UsageRow, error) {
	key, ok := usageGroupKey[p.GroupBy]
	if !ok {
		return nil, fmt.Errorf("sum usage: unknown grouping %q", p.GroupBy)
	}
	var a args
	where := []string{"1 = 1"}
	if p.UserID.Valid {
		where = append(where, "user_id = "+a.add(p.UserID.UUID.String()))
	}
	if p.ChatIDs != nil {
		ids, err := idsJSON(p.ChatIDs)
		if err != nil {
			return nil, err
		}
		where = append(where, "chat_id IN (SELECT value FROM json_each("+a.add(ids)+"))")
	}
	if !p.From.IsZero() {
		where = append(where, "created_at >= "+a.add(ts(p.From)))
	}
	if !p.To.IsZero() {
		where = append(where, "created_at < "+a.add(ts(p.To)))
	}
	q := `SELECT ` + key + ` AS k, count(*), coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0),
		coalesce(sum(cached_tokens), 0), coalesce(sum(reasoning_tokens), 0), coalesce(sum(cost_nanos), 0)
		FROM usage_records WHERE ` + strings.Join(where, " AND ")
	if p.GroupBy != store.UsageGroupNone {
		q += ` GROUP BY k ORDER BY k`
	}
	rows, err := t.tx.QueryContext(ctx, q, a...)
	if err != nil {
		return nil, fmt.Errorf("sum usage: %w", translate(err))
	}
	out, err := collect(rows, func(row rowScanner) (store.UsageRow, error) {
		var r store.UsageRow
		err := row.Scan(&r.Key, &r.Calls, &r.InputTokens, &r.OutputTokens, &r.CachedTokens, &r.ReasoningTokens, &r.CostNanos)
		return r, translate(err)
	})
	if err != nil {
		return nil, fmt.Errorf("sum usage: %w", err)
	}
	return out, nil
}

// UserBudgetGet reads a user's budget override.
func (t *tx) UserBudgetGet(ctx context.Context, userID uuid.UUID) (store.Budget, error) {
	var (
		b              store.Budget
		tokDay, tokMon sql.NullInt64
		cosDay, cosMon sql.NullFloat64
	)
	err := t.tx.QueryRowContext(ctx, query.UserBudgetGet, userID.String()).Scan(&tokDay, &tokMon, &cosDay, &cosMon)
	if err != nil {
		return store.Budget{}, fmt.Errorf("get budget of user %s: %w", userID, translate(err))
	}
	if tokDay.Valid {
		b.TokensPerDay = &tokDay.Int64
	}
	if tokMon.Valid {
		b.TokensPerMonth = &tokMon.Int64
	}
	if cosDay.Valid {
		b.CostPerDay = &cosDay.Float64
	}
	if cosMon.Valid {
		b.CostPerMonth = &cosMon.Float64
	}
	return b, nil
}

// UserBudgetSet writes or removes a user's budget override.
func (t *tx) UserBudgetSet(ctx context.Context, userID uuid.UUID, b *store.Budget, now time.Time) error {
	if b == nil {
		if _, err := t.tx.ExecContext(ctx, query.UserBudgetSetDelete, userID.String()); err != nil {
			return fmt.Errorf("remove budget of user %s: %w", userID, translate(err))
		}
		return nil
	}
	_, err := t.tx.ExecContext(ctx, query.UserBudgetSetInsert,
		userID.String(), nullInt(b.TokensPerDay), nullInt(b.TokensPerMonth), nullFloat(b.CostPerDay), nullFloat(b.CostPerMonth), ts(now))
	if err != nil {
		if errors.Is(translate(err), store.ErrForeignKey) {
			return fmt.Errorf("set budget of user %s: %w", userID, store.ErrNotFound)
		}
		return fmt.Errorf("set budget of user %s: %w", userID, translate(err))
	}
	return nil
}

func nullFloat(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}
