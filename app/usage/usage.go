// Package usage reads the usage ledger (what every committed provider call
// spent, written by app/chatstate with its step) and judges budgets: the
// deployment's default limits, or an admin's per-user override, per UTC
// day and calendar month. The API refuses a turn that would start over
// budget; the worker stops a running turn after the step that went over.
package usage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// NearPercent is where a limit counts as nearly spent (BudgetState.Near).
const NearPercent = 80

// Service judges budgets on the ledger.
type Service struct {
	store    store.ReadStore
	clock    clock.Clock
	defaults store.Budget
}

// New returns a Service over s whose users without an override have the
// defaults budget (a zero Budget: no limits).
func New(s store.ReadStore, c clock.Clock, defaults store.Budget) *Service {
	if c == nil {
		c = clock.Real{}
	}
	return &Service{store: s, clock: c, defaults: defaults}
}

// Now is the Service's clock's time.
func (s *Service) Now() time.Time { return s.clock.Now() }

// ExceededError is a refused turn: the limit that is spent and when it
// resets.
type ExceededError struct {
	Limit    string // tokens_per_day, tokens_per_month, cost_per_day, cost_per_month
	Max      float64
	Used     float64
	ResetsAt time.Time
}

func (e *ExceededError) Error() string {
	return fmt.Sprintf("usage budget exceeded: %s is %s, %s used; it resets at %s",
		e.Limit, num(e.Max), num(e.Used), e.ResetsAt.UTC().Format(time.RFC3339))
}

func num(f float64) string {
	if f == float64(int64(f)) {
		return fmt.Sprintf("%d", int64(f))
	}
	return fmt.Sprintf("%.4g", f)
}

// DayStart and MonthStart are the UTC windows budgets count in.
func DayStart(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// MonthStart is the first instant of t's UTC month.
func MonthStart(t time.Time) time.Time {
	y, m, _ := t.UTC().Date()
	return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
}

// Cost turns ledger nanos into the currency unit.
func Cost(nanos int64) float64 { return float64(nanos) / 1e9 }

// Totals is the wire form of ledger counters.
func Totals(u store.UsageTokens) sdk.UsageTotals {
	return sdk.UsageTotals{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CachedTokens: u.CachedTokens, ReasoningTokens: u.ReasoningTokens, Cost: Cost(u.CostNanos)}
}

// State reads a user's budget and spend in tx (any snapshot).
func (s *Service) State(ctx context.Context, tx store.Reader, userID uuid.UUID) (sdk.BudgetState, error) {
	now := s.clock.Now().UTC()
	b, err := tx.UserBudgetGet(ctx, userID)
	override := err == nil
	switch {
	case errors.Is(err, store.ErrNotFound):
		b = s.defaults
	case err != nil:
		return sdk.BudgetState{}, err
	}
	day, month := DayStart(now), MonthStart(now)
	st := sdk.BudgetState{Budget: ToWire(b), Override: override,
		DayResetsAt: day.AddDate(0, 0, 1), MonthResetAt: month.AddDate(0, 1, 0)}
	if b == (store.Budget{}) {
		return st, nil // nothing to judge: spare the sums
	}
	user := uuid.NullUUID{UUID: userID, Valid: true}
	sum := func(from time.Time) (store.UsageTokens, error) {
		rows, err := tx.UsageSum(ctx, store.UsageSumParams{UserID: user, From: from})
		if err != nil || len(rows) == 0 {
			return store.UsageTokens{}, err
		}
		return rows[0].UsageTokens, nil
	}
	d, err := sum(day)
	if err != nil {
		return st, err
	}
	m := d
	if month.Before(day) {
		if m, err = sum(month); err != nil {
			return st, err
		}
	}
	st.Day, st.Month = Totals(d), Totals(m)
	judge(&st, b)
	return st, nil
}

// judge names the first spent limit (day before month, tokens before
// cost), else the first nearly spent one.
func judge(st *sdk.BudgetState, b store.Budget) {
	type limit struct {
		name   string
		max    float64
		set    bool
		used   float64
		resets time.Time
	}
	limits := []limit{
		{"tokens_per_day", f64(b.TokensPerDay), b.TokensPerDay != nil, float64(st.Day.InputTokens + st.Day.OutputTokens), st.DayResetsAt},
		{"cost_per_day", deref(b.CostPerDay), b.CostPerDay != nil, st.Day.Cost, st.DayResetsAt},
		{"tokens_per_month", f64(b.TokensPerMonth), b.TokensPerMonth != nil, float64(st.Month.InputTokens + st.Month.OutputTokens), st.MonthResetAt},
		{"cost_per_month", deref(b.CostPerMonth), b.CostPerMonth != nil, st.Month.Cost, st.MonthResetAt},
	}
	for _, l := range limits {
		if l.set && l.used >= l.max {
			st.Exceeded, st.ResetsAt = l.name, &l.resets
			return
		}
	}
	for _, l := range limits {
		if l.set && l.used*100 >= l.max*NearPercent {
			st.Near, st.ResetsAt = l.name, &l.resets
			return
		}
	}
}

// Check returns an *ExceededError when userID may not start a turn now.
func (s *Service) Check(ctx context.Context, tx store.Reader, userID uuid.UUID) error {
	st, err := s.State(ctx, tx, userID)
	if err != nil || st.Exceeded == "" {
		return err
	}
	return exceeded(st)
}

// CheckNow is Check in a read transaction of its own.
func (s *Service) CheckNow(ctx context.Context, userID uuid.UUID) error {
	return s.store.ReadTx(ctx, func(tx store.Reader) error { return s.Check(ctx, tx, userID) })
}

func exceeded(st sdk.BudgetState) *ExceededError {
	e := &ExceededError{Limit: st.Exceeded, ResetsAt: *st.ResetsAt}
	switch st.Exceeded {
	case "tokens_per_day":
		e.Max, e.Used = f64(st.Budget.TokensPerDay), float64(st.Day.InputTokens+st.Day.OutputTokens)
	case "cost_per_day":
		e.Max, e.Used = deref(st.Budget.CostPerDay), st.Day.Cost
	case "tokens_per_month":
		e.Max, e.Used = f64(st.Budget.TokensPerMonth), float64(st.Month.InputTokens+st.Month.OutputTokens)
	case "cost_per_month":
		e.Max, e.Used = deref(st.Budget.CostPerMonth), st.Month.Cost
	}
	return e
}

func f64(p *int64) float64 {
	if p == nil {
		return 0
	}
	return float64(*p)
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// ToWire is a budget's wire form.
func ToWire(b store.Budget) sdk.Budget {
	return sdk.Budget{TokensPerDay: b.TokensPerDay, TokensPerMonth: b.TokensPerMonth, CostPerDay: b.CostPerDay, CostPerMonth: b.CostPerMonth}
}

// FromWire checks and converts a wire budget; negative limits are refused.
func FromWire(b sdk.Budget) (store.Budget, error) {
	for name, v := range map[string]*int64{"tokens_per_day": b.TokensPerDay, "tokens_per_month": b.TokensPerMonth} {
		if v != nil && *v < 0 {
			return store.Budget{}, fmt.Errorf("budget.%s must not be negative", name)
		}
	}
	for name, v := range map[string]*float64{"cost_per_day": b.CostPerDay, "cost_per_month": b.CostPerMonth} {
		if v != nil && !(*v >= 0) {
			return store.Budget{}, fmt.Errorf("budget.%s must be a number, not negative", name)
		}
	}
	return store.Budget{TokensPerDay: b.TokensPerDay, TokensPerMonth: b.TokensPerMonth, CostPerDay: b.CostPerDay, CostPerMonth: b.CostPerMonth}, nil
}

// Over is Check for the worker: over is the *ExceededError (nil: within
// budget), err a failed read.
func (s *Service) Over(ctx context.Context, tx store.Reader, userID uuid.UUID) (over, err error) {
	err = s.Check(ctx, tx, userID)
	var e *ExceededError
	if errors.As(err, &e) {
		return e, nil
	}
	return nil, err
}
