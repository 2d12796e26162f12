package sdk

import (
	"time"

	"github.com/google/uuid"
)

// CodeBudgetExceeded: the user (a chat's owner) is over a usage budget;
// the turn was refused and nothing was created (429).
const CodeBudgetExceeded = "BUDGET_EXCEEDED"

// ChatErrorBudget: a running turn stopped because its owner went over a
// usage budget after a step (last_error.kind).
const ChatErrorBudget ChatErrorKind = "budget_exceeded"

// ModelPrice is a model config's optional price, per million tokens, in
// the deployment's currency (model_config.price).
type ModelPrice struct {
	InputPerMillion  float64 `json:"input_per_million"`
	OutputPerMillion float64 `json:"output_per_million"`
}

// UsageTotals are token counts and their cost. Cost is in the currency of
// the model configs' prices (0 when a model has no price).
type UsageTotals struct {
	InputTokens     int64   `json:"input_tokens"`
	OutputTokens    int64   `json:"output_tokens"`
	CachedTokens    int64   `json:"cached_tokens"`
	ReasoningTokens int64   `json:"reasoning_tokens"`
	Cost            float64 `json:"cost"`
}

// UsageRow is one group of a usage report: Day (YYYY-MM-DD, UTC), Model
// (provider/model), ChatID or UserID, by the report's group_by.
type UsageRow struct {
	Day    string     `json:"day,omitempty"`
	Model  string     `json:"model,omitempty"`
	ChatID *uuid.UUID `json:"chat_id,omitempty"`
	UserID *uuid.UUID `json:"user_id,omitempty"`
	// Username names UserID in the admin report.
	Username string `json:"username,omitempty"`
	Calls    int64  `json:"calls"`
	UsageTotals
}

// UsageResponse is GET /users/me/usage and GET /usage: the rows of
// [from, to) grouped by group_by, their total, and (for one user) the
// budget's state.
type UsageResponse struct {
	From    time.Time    `json:"from"`
	To      time.Time    `json:"to"`
	GroupBy string       `json:"group_by"`
	Rows    []UsageRow   `json:"rows"`
	Total   UsageTotals  `json:"total"`
	Budget  *BudgetState `json:"budget,omitempty"`
}

// Budget is a user's limits; a null field is no limit of that kind. Costs
// are in the currency of the model configs' prices.
type Budget struct {
	TokensPerDay   *int64   `json:"tokens_per_day"`
	TokensPerMonth *int64   `json:"tokens_per_month"`
	CostPerDay     *float64 `json:"cost_per_day"`
	CostPerMonth   *float64 `json:"cost_per_month"`
}

// BudgetState is a user's budget and where they stand: the day's and the
// month's spend (UTC), when each resets, and the limit that is over (or
// nearly: at least 80%).
type BudgetState struct {
	Budget Budget `json:"budget"`
	// Override: an admin set this user's budget (else the defaults apply).
	Override     bool        `json:"override"`
	Day          UsageTotals `json:"day"`
	Month        UsageTotals `json:"month"`
	DayResetsAt  time.Time   `json:"day_resets_at"`
	MonthResetAt time.Time   `json:"month_resets_at"`
	// Exceeded names the limit that is spent ("tokens_per_day", ...);
	// Near the one at 80% or more. Empty: none.
	Exceeded string `json:"exceeded,omitempty"`
	Near     string `json:"near,omitempty"`
	// ResetsAt is when Exceeded's (else Near's) limit resets.
	ResetsAt *time.Time `json:"resets_at,omitempty"`
}
