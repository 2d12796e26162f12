package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// ScheduleReader reads scheduled prompts and their run history. It is
// part of Reader.
type ScheduleReader interface {
	// ScheduleGet reads a schedule.
	ScheduleGet(ctx context.Context, id uuid.UUID) (Schedule, error)

	// ScheduleList lists schedules oldest first (created_at, id): one
	// chat's when p.ChatID is set, one owner's when p.OwnerID is, else
	// every one.
	ScheduleList(ctx context.Context, p ScheduleListParams) ([]Schedule, error)

	// ScheduleCountByOwner counts the schedules a user owns (the per-user cap).
	ScheduleCountByOwner(ctx context.Context, ownerID uuid.UUID) (int64, error)

	// ScheduleListDue lists, earliest first (next_run_at, id), at most
	// limit enabled schedules whose next_run_at is at or before now, whose
	// chat is not archived and whose owner is not disabled (those pause).
	ScheduleListDue(ctx context.Context, now time.Time, limit int) ([]Schedule, error)

	// ScheduleNextDue reads the earliest next_run_at of the schedules
	// ScheduleListDue would list once it is due; false when there is none.
	ScheduleNextDue(ctx context.Context) (time.Time, bool, error)

	// ScheduleRunList lists a schedule's runs, latest due time first.
	ScheduleRunList(ctx context.Context, scheduleID uuid.UUID, limit int) ([]ScheduleRun, error)
}

// ScheduleTx writes schedules. It is part of Tx: app/schedules writes the
// definitions; app/chatstate writes runs, in the bundle that sends the
// run's message.
type ScheduleTx interface {
	// ScheduleInsert creates a schedule.
	ScheduleInsert(ctx context.Context, s Schedule) (Schedule, error)

	// ScheduleLock reads a schedule and locks its row until the
	// transaction ends (FOR UPDATE on Postgres; SQLite's writer lock).
	ScheduleLock(ctx context.Context, id uuid.UUID) (Schedule, error)

	// ScheduleUpdate writes the fields set in p and returns the row.
	ScheduleUpdate(ctx context.Context, id uuid.UUID, p SchedulePatch) (Schedule, error)

	// ScheduleDelete removes a schedule and its runs and reports whether
	// it existed.
	ScheduleDelete(ctx context.Context, id uuid.UUID) (int64, error)

	// ScheduleRunInsert records one due time of a schedule; ErrConflict
	// when that due time already has a run.
	ScheduleRunInsert(ctx context.Context, r ScheduleRun) error
}

// Schedule kinds.
const (
	ScheduleCron  = "cron"  // Spec is a five-field cron expression
	ScheduleEvery = "every" // Spec is a Go duration
	ScheduleAt    = "at"    // Spec is an RFC 3339 instant
)

// Schedule run statuses.
const (
	ScheduleRunFired   = "fired"
	ScheduleRunSkipped = "skipped"
	ScheduleRunDenied  = "denied"
	ScheduleRunFailed  = "failed"
)

// Schedule is one row of schedules.
type Schedule struct {
	ID       uuid.UUID
	ChatID   uuid.UUID
	OwnerID  uuid.UUID
	Content  json.RawMessage // the prompt's parts, as a message's content
	Kind     string
	Spec     string
	Timezone string
	Enabled  bool
	NewChat  bool
	MaxRuns  int64 // 0: unlimited
	RunCount int64
	// NextRunAt is the due time not fired yet; nil when none is left.
	NextRunAt *time.Time
	LastRunAt *time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
}

// SchedulePatch names the schedule columns an update writes.
type SchedulePatch struct {
	Content   Opt[json.RawMessage]
	Kind      Opt[string]
	Spec      Opt[string]
	Timezone  Opt[string]
	Enabled   Opt[bool]
	NewChat   Opt[bool]
	MaxRuns   Opt[int64]
	RunCount  Opt[int64]
	NextRunAt Opt[*time.Time]
	LastRunAt Opt[*time.Time]
	UpdatedAt Opt[time.Time]
}

// Assignments lists the schedules columns p writes, in a fixed order.
func (p SchedulePatch) Assignments() []Assignment {
	var as []Assignment
	as = set(as, "content", p.Content)
	as = set(as, "kind", p.Kind)
	as = set(as, "spec", p.Spec)
	as = set(as, "timezone", p.Timezone)
	as = set(as, "enabled", p.Enabled)
	as = set(as, "new_chat", p.NewChat)
	as = set(as, "max_runs", p.MaxRuns)
	as = set(as, "run_count", p.RunCount)
	as = set(as, "next_run_at", p.NextRunAt)
	as = set(as, "last_run_at", p.LastRunAt)
	as = set(as, "updated_at", p.UpdatedAt)
	return as
}

// ScheduleListParams select schedules.
type ScheduleListParams struct {
	ChatID  uuid.NullUUID
	OwnerID uuid.NullUUID
	Limit   int // see ListLimit
}

// ScheduleRun is one row of schedule_runs: what became of one due time.
type ScheduleRun struct {
	ScheduleID uuid.UUID
	DueAt      time.Time
	Status     string
	RequestID  uuid.NullUUID // the run's durable request (fired)
	ChatID     uuid.NullUUID // the chat it went to (fired)
	Detail     string
	CreatedAt  time.Time
}
