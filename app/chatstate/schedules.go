package chatstate

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// ScheduleFire is one due time of a schedule (app/schedules computes the
// times): FireSchedule sends its prompt like any user message, or records
// why it did not, and moves the schedule on, in one bundle.
type ScheduleFire struct {
	ScheduleID uuid.UUID
	// Expect is the schedule's next_run_at as the caller read it. A
	// schedule that has moved on since (another replica fired it, or it
	// was edited or disabled) is left alone.
	Expect time.Time
	// Due is the due time run now: Expect, or the latest due time missed
	// while no replica ran. Skipped are the earlier missed ones, recorded
	// as skipped.
	Due     time.Time
	Skipped []time.Time
	// Next is the due time after Due; nil: the schedule has none left.
	Next *time.Time
	// Status is store.ScheduleRunFired to send Input; denied or failed
	// records Detail instead and sends nothing.
	Status string
	Detail string
	// RequestID is the run's durable request id (derived from the
	// schedule and Due): the claim admitted with the message.
	RequestID uuid.UUID
	// Input is the prompt, authored as the schedule (CreatedBy), after the
	// lifecycle hooks.
	Input UserInput
	// NewChat, when set, creates this chat with Input instead of sending
	// Input to the schedule's chat.
	NewChat *CreateParams
	// MaxChats caps the chats the owner may own when NewChat creates one
	// (CHATD_MAX_CHATS_PER_USER, as a person's create; 0: none).
	MaxChats int
	// Response is the claim's admission answer (replayed to lookups).
	Response json.RawMessage
	// ContentSHA256 and RequestSHA256 bind the claim (see Claim).
	ContentSHA256, RequestSHA256 string
}

// ScheduleFired is what FireSchedule did.
type ScheduleFired struct {
	// Moved is false when the schedule had moved on: nothing was written.
	Moved    bool
	Schedule store.Schedule
	Run      store.ScheduleRun
	Result   Result
}

// FireSchedule runs one due time of a schedule exactly once: under the
// schedule's row lock it checks that next_run_at is still f.Expect,
// records the skipped due times, sends the prompt through SendMessage
// (queued when the chat is busy) or Create (new_chat) with a durable
// request claim, records the run and advances next_run_at. The run row's
// key (schedule, due time) and the claim's request id make a second
// attempt at the same due time fail as store.ErrConflict.
func (t *Tx) FireSchedule(f ScheduleFire) (ScheduleFired, error) {
	s, err := t.tx.ScheduleLock(t.ctx, f.ScheduleID)
	if errors.Is(err, store.ErrNotFound) {
		return ScheduleFired{}, nil
	}
	if err != nil {
		return ScheduleFired{}, err
	}
	if !s.Enabled || s.NextRunAt == nil || !s.NextRunAt.Equal(f.Expect) {
		return ScheduleFired{Schedule: s}, nil
	}
	for _, at := range f.Skipped {
		if err := t.tx.ScheduleRunInsert(t.ctx, store.ScheduleRun{ScheduleID: s.ID, DueAt: at, Status: store.ScheduleRunSkipped,
			Detail: "missed while no replica ran; only the latest missed run fires", CreatedAt: t.now}); err != nil {
			return ScheduleFired{}, err
		}
	}
	run := store.ScheduleRun{ScheduleID: s.ID, DueAt: f.Due, Status: f.Status, Detail: f.Detail, CreatedAt: t.now}
	var res Result
	if f.Status == store.ScheduleRunFired {
		if res, err = t.sendScheduled(s, f); err != nil {
			return ScheduleFired{}, err
		}
		run.RequestID = uuid.NullUUID{UUID: f.RequestID, Valid: true}
		run.ChatID = uuid.NullUUID{UUID: res.Chat.ID, Valid: true}
	}
	if err := t.tx.ScheduleRunInsert(t.ctx, run); err != nil {
		return ScheduleFired{}, err
	}
	p := store.SchedulePatch{NextRunAt: store.Some(f.Next), LastRunAt: store.Some(&f.Due), UpdatedAt: store.Some(t.now)}
	count := s.RunCount
	if f.Status == store.ScheduleRunFired {
		count++
		p.RunCount = store.Some(count)
	}
	if f.Next == nil || (s.MaxRuns > 0 && count >= s.MaxRuns) {
		p.NextRunAt, p.Enabled = store.Some[*time.Time](nil), store.Some(false)
	}
	if s, err = t.tx.ScheduleUpdate(t.ctx, s.ID, p); err != nil {
		return ScheduleFired{}, err
	}
	return ScheduleFired{Moved: true, Schedule: s, Run: run, Result: res}, nil
}

// sendScheduled sends a run's prompt and claims its request id.
func (t *Tx) sendScheduled(s store.Schedule, f ScheduleFire) (Result, error) {
	in := f.Input
	in.RequestID = uuid.NullUUID{UUID: f.RequestID, Valid: true}
	kind := sdk.EndpointSendMessage
	var (
		res Result
		err error
	)
	if f.NewChat != nil {
		p := *f.NewChat
		if err := t.checkChatCap(p.OwnerID, f.MaxChats); err != nil {
			return Result{}, err
		}
		p.Input, kind = in, sdk.EndpointCreateChat
		res, err = t.Create(p)
	} else {
		res, err = t.SendMessage(s.ChatID, in, BusyQueue)
	}
	if err != nil {
		return Result{}, err
	}
	c := Claim{RequestID: f.RequestID, CallerID: s.OwnerID, ContentSHA256: f.ContentSHA256, RequestSHA256: f.RequestSHA256,
		Kind: kind, ChatID: res.Chat.ID, Response: f.Response}
	if res.Message != nil {
		c.MessageID = &res.Message.ID
	}
	if res.Queued != nil {
		c.QueuedMessageID = &res.Queued.ID
	}
	if c.MessageID == nil && c.QueuedMessageID == nil {
		return Result{}, fmt.Errorf("scheduled run of %s: the prompt is neither in history nor queued", s.ID)
	}
	if _, err := t.AdmitRequest(c); err != nil {
		return Result{}, err
	}
	return res, nil
}

// checkChatCap refuses a new chat of owner when they own limit chats
// already (0: no cap). It holds the owner's lock, so concurrent creates
// count each other, as a person's create does.
func (t *Tx) checkChatCap(owner uuid.UUID, limit int) error {
	if limit <= 0 {
		return nil
	}
	if err := t.LockOwner(owner); err != nil {
		return err
	}
	n, err := t.tx.ChatCountByOwner(t.ctx, owner)
	if err != nil {
		return fmt.Errorf("count chats of %s: %w", owner, err)
	}
	if n >= int64(limit) {
		return fmt.Errorf("new_chat: the owner has %d chats; at most %d (CHATD_MAX_CHATS_PER_USER)", n, limit)
	}
	return nil
}
