// Package schedules keeps scheduled prompts (API.md "Schedules"): a
// Service that checks and writes their definitions, and a Runner that
// fires due ones through the state machine (chatstate.FireSchedule) like
// any user message, exactly once per due time across replicas and
// restarts.
package schedules

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// DefaultMaxPerUser is the default cap on a user's schedules
// (CHATD_MAX_SCHEDULES_PER_USER).
const DefaultMaxPerUser = 20

// Errors the API maps.
var (
	ErrNotFound     = errors.New("schedule not found")
	ErrLimitReached = errors.New("schedule limit reached")
)

// InputError is a field of a request that cannot be used.
type InputError struct{ Field, Detail string }

func (e *InputError) Error() string { return e.Field + ": " + e.Detail }

// Config tunes the service. Zero values take the Defaults; a negative
// MaxPerUser is unlimited.
type Config struct {
	MinInterval time.Duration
	MaxPerUser  int
}

// Service checks and writes schedule definitions.
type Service struct {
	store store.Store
	clock clock.Clock
	cfg   Config
	// changed wakes the runner (Runner.Wake) after a write.
	changed func()
}

// New returns a Service over s.
func New(s store.Store, c clock.Clock, cfg Config) *Service {
	if cfg.MinInterval <= 0 {
		cfg.MinInterval = DefaultMinInterval
	}
	if cfg.MaxPerUser == 0 {
		cfg.MaxPerUser = DefaultMaxPerUser
	}
	if c == nil {
		c = clock.Real{}
	}
	return &Service{store: s, clock: c, cfg: cfg, changed: func() {}}
}

// OnChange sets what a write calls after commit (the runner's Wake).
func (s *Service) OnChange(fn func()) { s.changed = fn }

// timing reads the one timing of a request.
func timingOf(cronExpr, every string, at *time.Time) (kind, spec string, err error) {
	n := 0
	if cronExpr != "" {
		n, kind, spec = n+1, store.ScheduleCron, cronExpr
	}
	if every != "" {
		n, kind, spec = n+1, store.ScheduleEvery, every
	}
	if at != nil {
		n, kind, spec = n+1, store.ScheduleAt, at.UTC().Format(time.RFC3339)
	}
	if n != 1 {
		return "", "", &InputError{Field: "cron", Detail: "give exactly one of cron, every and at"}
	}
	return kind, spec, nil
}

// Create adds a schedule to chat, owned by the chat's owner. content has
// been checked by the caller (the API's rules for a message).
func (s *Service) Create(ctx context.Context, chat store.Chat, content []sdk.ChatMessagePart, req sdk.CreateScheduleRequest) (store.Schedule, error) {
	kind, spec, err := timingOf(req.Cron, req.Every, req.At)
	if err != nil {
		return store.Schedule{}, err
	}
	t, err := ParseTiming(kind, spec, req.Timezone, s.cfg.MinInterval)
	if err != nil {
		return store.Schedule{}, err
	}
	if req.MaxRuns < 0 {
		return store.Schedule{}, &InputError{Field: "max_runs", Detail: "must not be negative"}
	}
	raw, err := encodeContent(content)
	if err != nil {
		return store.Schedule{}, err
	}
	now := s.clock.Now().UTC()
	sc := store.Schedule{ID: uuid.New(), ChatID: chat.ID, OwnerID: chat.OwnerID, Content: raw, Kind: kind, Spec: spec,
		Timezone: zone(req.Timezone), Enabled: req.Enabled == nil || *req.Enabled, NewChat: req.NewChat, MaxRuns: req.MaxRuns,
		CreatedAt: now, UpdatedAt: now}
	if sc.Enabled {
		if first, ok := t.First(now); ok {
			sc.NextRunAt = &first
		}
	}
	err = s.store.InTx(ctx, func(tx store.Tx) error {
		if err := tx.UserLock(ctx, chat.OwnerID); err != nil {
			return err
		}
		if s.cfg.MaxPerUser > 0 {
			n, err := tx.ScheduleCountByOwner(ctx, chat.OwnerID)
			if err != nil {
				return err
			}
			if n >= int64(s.cfg.MaxPerUser) {
				return fmt.Errorf("%w: a user holds at most %d schedules (CHATD_MAX_SCHEDULES_PER_USER)", ErrLimitReached, s.cfg.MaxPerUser)
			}
		}
		sc, err = tx.ScheduleInsert(ctx, sc)
		return err
	})
	if err != nil {
		return store.Schedule{}, err
	}
	s.changed()
	return sc, nil
}

// Update changes a schedule of chat.
func (s *Service) Update(ctx context.Context, chatID, id uuid.UUID, content []sdk.ChatMessagePart, req sdk.UpdateScheduleRequest) (store.Schedule, error) {
	var out store.Schedule
	err := s.store.InTx(ctx, func(tx store.Tx) error {
		sc, err := tx.ScheduleLock(ctx, id)
		if errors.Is(err, store.ErrNotFound) || (err == nil && sc.ChatID != chatID) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		now := s.clock.Now().UTC()
		p := store.SchedulePatch{UpdatedAt: store.Some(now)}
		kind, spec, tz := sc.Kind, sc.Spec, sc.Timezone
		retimed := req.Cron != nil || req.Every != nil || req.At != nil || req.Timezone != nil
		if req.Cron != nil || req.Every != nil || req.At != nil {
			if kind, spec, err = timingOf(deref(req.Cron), deref(req.Every), req.At); err != nil {
				return err
			}
		}
		if req.Timezone != nil {
			tz = zone(*req.Timezone)
		}
		t, err := ParseTiming(kind, spec, tz, s.cfg.MinInterval)
		if err != nil {
			return err
		}
		p.Kind, p.Spec, p.Timezone = store.Some(kind), store.Some(spec), store.Some(tz)
		if content != nil {
			raw, err := encodeContent(content)
			if err != nil {
				return err
			}
			p.Content = store.Some(raw)
		}
		if req.NewChat != nil {
			p.NewChat = store.Some(*req.NewChat)
		}
		if req.MaxRuns != nil {
			if *req.MaxRuns < 0 {
				return &InputError{Field: "max_runs", Detail: "must not be negative"}
			}
			p.MaxRuns = store.Some(*req.MaxRuns)
		}
		enabled := sc.Enabled
		if req.Enabled != nil {
			enabled = *req.Enabled
		}
		p.Enabled = store.Some(enabled)
		// Enabling or retiming starts from now: what was due while the
		// schedule was off is not owed.
		if !enabled {
			p.NextRunAt = store.Some[*time.Time](nil)
		} else if retimed || !sc.Enabled || sc.NextRunAt == nil {
			var next *time.Time
			if first, ok := t.First(now); ok {
				next = &first
			}
			p.NextRunAt = store.Some(next)
		}
		out, err = tx.ScheduleUpdate(ctx, id, p)
		return err
	})
	if err != nil {
		return store.Schedule{}, err
	}
	s.changed()
	return out, nil
}

// Delete removes a schedule of chat.
func (s *Service) Delete(ctx context.Context, chatID, id uuid.UUID) error {
	return s.store.InTx(ctx, func(tx store.Tx) error {
		sc, err := tx.ScheduleGet(ctx, id)
		if errors.Is(err, store.ErrNotFound) || (err == nil && sc.ChatID != chatID) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		_, err = tx.ScheduleDelete(ctx, id)
		return err
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func zone(tz string) string {
	if tz == "" {
		return "UTC"
	}
	return tz
}

func encodeContent(content []sdk.ChatMessagePart) (json.RawMessage, error) {
	if len(content) == 0 {
		return nil, &InputError{Field: "content", Detail: "must have at least one part"}
	}
	return chatstate.EncodeParts(content)
}

// Timing parses a stored schedule's timing.
func (s *Service) Timing(sc store.Schedule) (Timing, error) {
	return ParseTiming(sc.Kind, sc.Spec, sc.Timezone, 0)
}
