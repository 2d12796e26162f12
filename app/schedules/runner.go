package schedules

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/hooks"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// DefaultPoll is how long a runner waits at most before it looks for due
// schedules again without a wake-up (another replica's writes).
const DefaultPoll = 30 * time.Second

// errorPause is the least wait after a pass that failed.
const errorPause = time.Second

// batch is how many due schedules one pass fires.
const batch = 50

// RunnerConfig wires a Runner.
type RunnerConfig struct {
	Machine *chatstate.Machine
	Store   store.ReadStore
	// Hooks evaluates each prompt (user_prompt_submit) like a person's;
	// nil: no lifecycle hooks.
	Hooks *hooks.Dispatcher
	Clock clock.Clock
	Log   *slog.Logger
	Poll  time.Duration
	// FileCap is CHATD_MAX_FILES_PER_CHAT, for prompts with file parts.
	FileCap int
	// MaxChats is CHATD_MAX_CHATS_PER_USER: a new_chat run beyond it is
	// recorded failed (0: no cap).
	MaxChats int
}

// Runner fires due schedules. Every replica runs one; a due time fires
// once because FireSchedule advances the schedule in the bundle that sends.
type Runner struct {
	cfg  RunnerConfig
	loop *clock.Loop
}

// NewRunner returns a stopped Runner.
func NewRunner(cfg RunnerConfig) *Runner {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	return &Runner{cfg: cfg, loop: clock.NewLoop(cfg.Clock)}
}

// Wake makes a running loop look for due schedules now.
func (r *Runner) Wake() { r.loop.Wake() }

// Start runs the loop until Stop or ctx ends.
func (r *Runner) Start(ctx context.Context) error { return r.loop.Start(ctx, r.pass) }

// Stop ends the loop and waits for it.
func (r *Runner) Stop() { r.loop.Stop() }

// pass fires what is due and says how long to wait for the next.
func (r *Runner) pass(ctx context.Context) time.Duration {
	n, err := r.RunDue(ctx)
	if err != nil && ctx.Err() == nil {
		r.cfg.Log.Warn("scheduled runs", "err", err)
	}
	wait := r.cfg.Poll
	if n >= batch {
		wait = 0
	} else if next, ok, err := r.nextDue(ctx); err == nil && ok {
		wait = min(wait, max(0, next.Sub(r.cfg.Clock.Now())))
	}
	if err != nil {
		// A failing store is not hammered: the due runs wait a little.
		wait = max(wait, errorPause)
	}
	return wait
}

func (r *Runner) nextDue(ctx context.Context) (next time.Time, ok bool, err error) {
	err = r.cfg.Store.ReadTx(ctx, func(tx store.Reader) error {
		next, ok, err = tx.ScheduleNextDue(ctx)
		return err
	})
	return next, ok, err
}

// RunDue fires the schedules due now (one pass) and reports how many it
// looked at. Tests call it after moving the fake clock.
func (r *Runner) RunDue(ctx context.Context) (int, error) {
	now := r.cfg.Clock.Now().UTC()
	var due []store.Schedule
	err := r.cfg.Store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		due, err = tx.ScheduleListDue(ctx, now, batch)
		return err
	})
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, s := range due {
		if err := r.fire(ctx, s, now); err != nil {
			errs = append(errs, fmt.Errorf("schedule %s: %w", s.ID, err))
		}
	}
	return len(due), errors.Join(errs...)
}

// fire runs one due schedule: the prompt through the hooks, then the
// bundle that sends it and advances the schedule. A prompt the chat
// refuses (or a hook denies) is recorded as such and the schedule moves
// on; a store failure leaves it due for the next pass.
func (r *Runner) fire(ctx context.Context, s store.Schedule, now time.Time) error {
	t, err := ParseTiming(s.Kind, s.Spec, s.Timezone, 0)
	if err != nil {
		return err
	}
	plan := t.PlanAt(*s.NextRunAt, now)
	f := chatstate.ScheduleFire{ScheduleID: s.ID, Expect: *s.NextRunAt, Due: plan.Due, Skipped: plan.Skipped, Next: plan.Next,
		Status: store.ScheduleRunFired, RequestID: RequestID(s.ID, plan.Due), MaxChats: r.cfg.MaxChats}
	if plan.Missed > 0 {
		f.Detail = fmt.Sprintf("%d earlier due time(s) missed while no replica ran were skipped", plan.Missed)
	}
	if err := r.prepare(ctx, s, &f); err != nil {
		var denied *hooks.DeniedError
		if errors.As(err, &denied) {
			f.Status, f.Detail = store.ScheduleRunDenied, denied.Error()
		} else if ctx.Err() != nil || errors.Is(err, store.ErrUnavailable) {
			return err
		} else {
			f.Status, f.Detail = store.ScheduleRunFailed, err.Error()
		}
	}
	err = r.cfg.Machine.Do(ctx, func(tx *chatstate.Tx) error {
		_, err := tx.FireSchedule(f)
		return err
	})
	switch {
	case err == nil, errors.Is(err, store.ErrConflict):
		// Fired, or another replica fired this due time first.
		return nil
	case ctx.Err() != nil, errors.Is(err, store.ErrUnavailable), errors.Is(err, store.ErrStorageFull):
		return err
	}
	// The chat refused the prompt (archived meanwhile, queue full, ...):
	// record it so the schedule moves on instead of failing every pass.
	f.Status, f.Detail = store.ScheduleRunFailed, err.Error()
	return r.cfg.Machine.Do(ctx, func(tx *chatstate.Tx) error {
		_, err := tx.FireSchedule(f)
		return err
	})
}

// prepare fills the prompt of a run: its content authored as the
// schedule, evaluated by the lifecycle hooks like a person's, and for
// new_chat the chat to create.
func (r *Runner) prepare(ctx context.Context, s store.Schedule, f *chatstate.ScheduleFire) error {
	var parts []sdk.ChatMessagePart
	if err := json.Unmarshal(s.Content, &parts); err != nil {
		return fmt.Errorf("decode content: %w", err)
	}
	f.Input = chatstate.UserInput{Content: parts, CreatedBy: uuid.NullUUID{UUID: s.ID, Valid: true}, FileCap: r.cfg.FileCap}
	chatID, session := s.ChatID, ""
	if s.NewChat {
		var chat store.Chat
		err := r.cfg.Store.ReadTx(ctx, func(tx store.Reader) error {
			var err error
			chat, err = tx.ChatGet(ctx, s.ChatID)
			return err
		})
		if err != nil {
			return err
		}
		f.NewChat = &chatstate.CreateParams{ID: uuid.New(), OwnerID: chat.OwnerID, Title: chat.Title, TitleSource: store.TitleSourceFallback,
			Labels: chat.Labels, DynamicTools: chat.DynamicTools, MCPServerIDs: chat.MCPServerIDs, ToolApproval: chat.ToolApproval,
			ProjectID: chat.ProjectID}
		f.Input.ModelConfigID, f.Input.ReasoningEffort = chat.LastModelConfigID, chat.LastReasoningEffort
		chatID, session = f.NewChat.ID, hooks.SessionCreate
	}
	resp, err := json.Marshal(map[string]any{"schedule_id": s.ID, "due_at": f.Due, "chat_id": chatID})
	if err != nil {
		return err
	}
	f.Response, f.ContentSHA256 = resp, sdk.ContentSHA256(parts)
	if r.cfg.Hooks.Enabled() {
		in, err := r.cfg.Hooks.Admit(ctx, hooks.Admission, hooks.Submission{ChatID: chatID, OwnerID: s.OwnerID,
			ID: f.RequestID.String(), Session: session}, f.Input)
		if err != nil {
			return err
		}
		f.Input = in
	}
	return nil
}
