package store

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// UsageReader reads the usage ledger and budgets. It is part of Reader.
type UsageReader interface {
	// UsageSum adds up the ledger rows that match p, one row per group
	// (one row in all when p.GroupBy is UsageGroupNone, even when nothing
	// matches), groups in ascending key order.
	UsageSum(ctx context.Context, p UsageSumParams) ([]UsageRow, error)

	// UserBudgetGet reads a user's budget override (ErrNotFound: none).
	UserBudgetGet(ctx context.Context, userID uuid.UUID) (Budget, error)
}

// UsageTx writes the usage ledger and budgets. It is part of Tx; the
// ledger's writer is app/chatstate (a record commits with its step), the
// budgets' is the admin API (they are not chat state).
type UsageTx interface {
	// UsageRecord appends a ledger row and reports whether it did: a row
	// with the same Key already recorded is left alone (false, nil).
	UsageRecord(ctx context.Context, r UsageRecord) (bool, error)

	// UserBudgetSet writes a user's budget override; nil removes it.
	UserBudgetSet(ctx context.Context, userID uuid.UUID, b *Budget, now time.Time) error
}

// Usage record kinds: what the provider call was for.
const (
	UsageKindStep       = "step"
	UsageKindCompaction = "compaction"
	UsageKindTitle      = "title"
)

// UsageRecord is one row of usage_records: the tokens of one committed
// provider call and what they cost.
type UsageRecord struct {
	ID int64
	// Key is the call's idempotency key; a second record with it is
	// dropped.
	Key    string
	UserID uuid.UUID
	ChatID uuid.UUID
	// MessageID is the message the call produced (0: none, e.g. a title).
	MessageID     int64
	Kind          string
	ModelConfigID uuid.NullUUID
	Provider      string
	Model         string
	UsageTokens
	CreatedAt time.Time
}

// UsageTokens are the counters the ledger adds up.
type UsageTokens struct {
	InputTokens     int64
	OutputTokens    int64
	CachedTokens    int64
	ReasoningTokens int64
	// CostNanos is the cost in billionths of the price's currency unit.
	CostNanos int64
}

// Add returns the sum of u and o.
func (u UsageTokens) Add(o UsageTokens) UsageTokens {
	return UsageTokens{
		InputTokens: u.InputTokens + o.InputTokens, OutputTokens: u.OutputTokens + o.OutputTokens,
		CachedTokens: u.CachedTokens + o.CachedTokens, ReasoningTokens: u.ReasoningTokens + o.ReasoningTokens,
		CostNanos: u.CostNanos + o.CostNanos,
	}
}

// Total is the tokens a budget counts: input and output.
func (u UsageTokens) Total() int64 { return u.InputTokens + u.OutputTokens }

// Usage groupings of UsageSum.
const (
	UsageGroupNone  = ""
	UsageGroupDay   = "day"   // Key: the UTC day, YYYY-MM-DD
	UsageGroupModel = "model" // Key: provider/model
	UsageGroupChat  = "chat"  // Key: the chat id
	UsageGroupUser  = "user"  // Key: the user id
)

// UsageSumParams select and group ledger rows. From is inclusive, To
// exclusive; a zero bound is open.
type UsageSumParams struct {
	UserID  uuid.NullUUID
	ChatIDs []uuid.UUID // nil: every chat
	From    time.Time
	To      time.Time
	GroupBy string
}

// UsageRow is one group of UsageSum.
type UsageRow struct {
	Key   string
	Calls int64
	UsageTokens
}

// Budget is a user's limits; a nil field is no limit of that kind. Costs
// are in the price's currency unit.
type Budget struct {
	TokensPerDay   *int64
	TokensPerMonth *int64
	CostPerDay     *float64
	CostPerMonth   *float64
}
