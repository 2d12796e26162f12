package sdk

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"
)

// Schedule kinds: a schedule has exactly one of cron, every and at.
const (
	ScheduleKindCron  = "cron"
	ScheduleKindEvery = "every"
	ScheduleKindAt    = "at"
)

// Schedule run statuses.
const (
	ScheduleRunFired   = "fired"   // the prompt was sent (or queued)
	ScheduleRunSkipped = "skipped" // missed while no replica ran; a later due time fired instead
	ScheduleRunDenied  = "denied"  // a lifecycle hook denied the prompt
	ScheduleRunFailed  = "failed"  // the chat refused the prompt (Detail says why)
)

// CreateScheduleRequest is the body of POST /chats/{chat}/schedules:
// exactly one of Cron, Every and At.
type CreateScheduleRequest struct {
	Content []ChatMessagePart `json:"content"`
	// Cron is a standard five-field cron expression (minute hour
	// day-of-month month day-of-week), in Timezone.
	Cron string `json:"cron,omitempty"`
	// Every is a Go duration ("90m"), at least the server's minimum
	// (CHATD_MIN_SCHEDULE_INTERVAL); the first run is one interval after
	// the schedule is created.
	Every string `json:"every,omitempty"`
	// At is one RFC 3339 instant: the schedule runs once.
	At *time.Time `json:"at,omitempty"`
	// Timezone is an IANA zone name for Cron ("Europe/Paris"); UTC when empty.
	Timezone string `json:"timezone,omitempty"`
	// Enabled defaults to true.
	Enabled *bool `json:"enabled,omitempty"`
	// NewChat starts a fresh chat (same model, tools and project) for each
	// run instead of appending to this one.
	NewChat bool `json:"new_chat,omitempty"`
	// MaxRuns stops the schedule after that many runs (0: no limit).
	MaxRuns int64 `json:"max_runs,omitempty"`
}

// UpdateScheduleRequest is the body of PATCH /chats/{chat}/schedules/{id}:
// the fields given change. Giving one of Cron, Every and At replaces the
// timing (and the next run).
type UpdateScheduleRequest struct {
	Content  []ChatMessagePart `json:"content,omitempty"`
	Cron     *string           `json:"cron,omitempty"`
	Every    *string           `json:"every,omitempty"`
	At       *time.Time        `json:"at,omitempty"`
	Timezone *string           `json:"timezone,omitempty"`
	Enabled  *bool             `json:"enabled,omitempty"`
	NewChat  *bool             `json:"new_chat,omitempty"`
	MaxRuns  *int64            `json:"max_runs,omitempty"`
}

// Schedule is a scheduled prompt.
type Schedule struct {
	ID       uuid.UUID         `json:"id"`
	ChatID   uuid.UUID         `json:"chat_id"`
	OwnerID  uuid.UUID         `json:"owner_id"`
	Content  []ChatMessagePart `json:"content"`
	Cron     string            `json:"cron,omitempty"`
	Every    string            `json:"every,omitempty"`
	At       *time.Time        `json:"at,omitempty"`
	Timezone string            `json:"timezone"`
	Enabled  bool              `json:"enabled"`
	NewChat  bool              `json:"new_chat"`
	MaxRuns  int64             `json:"max_runs"`
	RunCount int64             `json:"run_count"`
	// NextRunAt is the next due time; null when none is left or the
	// schedule is disabled.
	NextRunAt *time.Time `json:"next_run_at"`
	LastRunAt *time.Time `json:"last_run_at"`
	// Paused says why an enabled schedule does not run now: "chat_archived"
	// or "user_disabled"; empty when it runs.
	Paused    string    `json:"paused,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ScheduleRun is what became of one due time of a schedule.
type ScheduleRun struct {
	DueAt  time.Time `json:"due_at"`
	Status string    `json:"status"`
	// RequestID is the run's durable request (GET /requests/{request_id}).
	RequestID *uuid.UUID `json:"request_id,omitempty"`
	// ChatID is the chat the prompt went to.
	ChatID    *uuid.UUID `json:"chat_id,omitempty"`
	Detail    string     `json:"detail,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
}

// CreateSchedule adds a schedule to a chat (POST /chats/{chat}/schedules).
func (c *Client) CreateSchedule(ctx context.Context, chatID uuid.UUID, req CreateScheduleRequest) (Schedule, error) {
	var out Schedule
	return out, c.Do(ctx, http.MethodPost, "/chats/"+chatID.String()+"/schedules", req, &out)
}

// ChatSchedules lists a chat's schedules (GET /chats/{chat}/schedules).
func (c *Client) ChatSchedules(ctx context.Context, chatID uuid.UUID) ([]Schedule, error) {
	var out []Schedule
	return out, c.Do(ctx, http.MethodGet, "/chats/"+chatID.String()+"/schedules", nil, &out)
}

// Schedules lists the caller's schedules, an admin's everyone's (GET /schedules).
func (c *Client) Schedules(ctx context.Context) ([]Schedule, error) {
	var out []Schedule
	return out, c.Do(ctx, http.MethodGet, "/schedules", nil, &out)
}

// UpdateSchedule changes a schedule (PATCH /chats/{chat}/schedules/{id}).
func (c *Client) UpdateSchedule(ctx context.Context, chatID, id uuid.UUID, req UpdateScheduleRequest) (Schedule, error) {
	var out Schedule
	return out, c.Do(ctx, http.MethodPatch, "/chats/"+chatID.String()+"/schedules/"+id.String(), req, &out)
}

// DeleteSchedule removes a schedule (DELETE /chats/{chat}/schedules/{id}).
func (c *Client) DeleteSchedule(ctx context.Context, chatID, id uuid.UUID) error {
	return c.Do(ctx, http.MethodDelete, "/chats/"+chatID.String()+"/schedules/"+id.String(), nil, nil)
}

// ScheduleRuns lists a schedule's runs, latest first (GET /chats/{chat}/schedules/{id}/runs).
func (c *Client) ScheduleRuns(ctx context.Context, chatID, id uuid.UUID) ([]ScheduleRun, error) {
	var out []ScheduleRun
	return out, c.Do(ctx, http.MethodGet, "/chats/"+chatID.String()+"/schedules/"+id.String()+"/runs", nil, &out)
}
