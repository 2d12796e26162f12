package chatstate

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// JournalNone is the pseudo-state of a tool call with no journal entry
// yet; its row in the journal table lists the state an entry starts in.
const JournalNone store.JournalState = ""

// journalTransitions is the life of a server-side tool call's journal
// entry: from-state -> the states it may change to. Every change of
// tool_journal.state goes through changeJournal, which enforces this table.
var journalTransitions = map[store.JournalState][]store.JournalState{
	// JournalStart: a call is recorded before it runs.
	JournalNone: {store.JournalStarted},
	// A pure or idempotent call a crash interrupted runs again (started
	// again, one more attempt); a call's result is committed with it
	// (JournalComplete); an effectful call that may have run is in doubt
	// (MarkUnresolved).
	store.JournalStarted: {store.JournalStarted, store.JournalCompleted, store.JournalUnresolved},
	// An operator records what happened (ReconcileRequest), or another
	// look finds the call still in doubt (MarkUnresolved).
	store.JournalUnresolved: {store.JournalUnresolved, store.JournalReconciled},
	// A recorded result is final: it answers the call from then on.
	store.JournalCompleted:  nil,
	store.JournalReconciled: nil,
}

// JournalTransitions returns a copy of the journal table: from-state (with
// JournalNone for "no entry yet") -> the states it may change to.
func JournalTransitions() map[store.JournalState][]store.JournalState {
	return copyTable(journalTransitions)
}

// JournalAllowed reports whether a journal entry may change from one state
// to another.
func JournalAllowed(from, to store.JournalState) bool {
	return slices.Contains(journalTransitions[from], to)
}

// JournalTransitionError is a refused change of a tool call's journal
// state. It unwraps to ErrTransitionNotAllowed.
type JournalTransitionError struct {
	ChatID     uuid.UUID
	ToolCallID string
	From, To   store.JournalState
}

func (e *JournalTransitionError) Error() string {
	from := string(e.From)
	if e.From == JournalNone {
		from = "not journaled"
	}
	return fmt.Sprintf("tool call %s of chat %s is %s; it cannot become %s", e.ToolCallID, e.ChatID, from, e.To)
}

// Unwrap returns ErrTransitionNotAllowed.
func (e *JournalTransitionError) Unwrap() error { return ErrTransitionNotAllowed }

// changeJournal moves an entry (as read in this transaction) to `to`,
// writing p with it, when the journal table allows it.
func (t *Tx) changeJournal(e store.JournalEntry, to store.JournalState, p store.JournalPatch) (store.JournalEntry, error) {
	if !JournalAllowed(e.State, to) {
		return store.JournalEntry{}, &JournalTransitionError{ChatID: e.ChatID, ToolCallID: e.ToolCallID, From: e.State, To: to}
	}
	p.State = store.Some(to)
	out, err := t.tx.JournalUpdate(t.ctx, e.ChatID, e.ToolCallID, p)
	if err != nil {
		return store.JournalEntry{}, fmt.Errorf("update journal entry %s of chat %s to %s: %w", e.ToolCallID, e.ChatID, to, err)
	}
	return out, nil
}

// JournalCall is a server-side tool call a runner is about to run.
type JournalCall struct {
	ToolCallID string
	ToolName   string
	Effect     string // store.Effect*
	Args       json.RawMessage
	// RequestID is the durable request of the call's turn, if any.
	RequestID uuid.NullUUID
}

// JournalDecision is what a runner does with a call, as JournalStart decides.
type JournalDecision string

// Journal decisions.
const (
	// JournalRun: the call is recorded as started (its first run, or a safe
	// re-run of a pure or idempotent call): run it.
	JournalRun JournalDecision = "run"
	// JournalReuse: the call has a recorded result (completed or
	// reconciled): answer it with that, without running it.
	JournalReuse JournalDecision = "reuse"
	// JournalInDoubt: an effectful call that may have run: it must never
	// run again; the chat stops for review (MarkUnresolved).
	JournalInDoubt JournalDecision = "in_doubt"
)

// JournalStart looks a call up in the chat's tool journal and records what
// may happen to it, so that a call runs at most as often as its effect
// class allows: a new call is recorded as started; a started pure or
// idempotent call (a crash or takeover interrupted it) is started again;
// a recorded result is reused; anything else is in doubt. It returns the
// decision and the entry as it now is.
func (t *Tx) JournalStart(chatID uuid.UUID, c JournalCall) (JournalDecision, store.JournalEntry, error) {
	e, err := t.tx.JournalGet(t.ctx, chatID, c.ToolCallID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		e = store.JournalEntry{
			ChatID: chatID, ToolCallID: c.ToolCallID, RequestID: c.RequestID, ToolName: c.ToolName,
			Effect: c.Effect, Args: c.Args, State: store.JournalStarted, Attempts: 1, StartedAt: t.now,
		}
		if !JournalAllowed(JournalNone, e.State) {
			return "", store.JournalEntry{}, &JournalTransitionError{ChatID: chatID, ToolCallID: c.ToolCallID, From: JournalNone, To: e.State}
		}
		if err := t.tx.JournalStart(t.ctx, e); err != nil {
			return "", store.JournalEntry{}, fmt.Errorf("start journal entry %s of chat %s: %w", c.ToolCallID, chatID, err)
		}
		return JournalRun, e, nil
	case err != nil:
		return "", store.JournalEntry{}, fmt.Errorf("read journal entry %s of chat %s: %w", c.ToolCallID, chatID, err)
	case e.State == store.JournalCompleted || e.State == store.JournalReconciled:
		return JournalReuse, e, nil
	case e.State == store.JournalStarted && e.Effect != store.EffectEffectful:
		e, err = t.changeJournal(e, store.JournalStarted, store.JournalPatch{
			Attempts: store.Some(e.Attempts + 1), StartedAt: store.Some(t.now),
		})
		if err != nil {
			return "", store.JournalEntry{}, err
		}
		return JournalRun, e, nil
	}
	return JournalInDoubt, e, nil
}

// JournalComplete records a started call's result; the runner commits it
// in the same transaction as the result's message, so a result is never
// lost or recorded twice.
func (t *Tx) JournalComplete(chatID uuid.UUID, toolCallID string, result json.RawMessage, isError bool) error {
	e, err := t.tx.JournalGet(t.ctx, chatID, toolCallID)
	if err != nil {
		return fmt.Errorf("read journal entry %s of chat %s: %w", toolCallID, chatID, err)
	}
	done := t.now
	_, err = t.changeJournal(e, store.JournalCompleted, store.JournalPatch{
		Result: store.Some(result), IsError: store.Some(isError), CompletedAt: store.Some(&done),
	})
	return err
}

// ErrToolCallUnderReview: a tool call stopped for review after a crash
// gets its result only from an operator's reconcile.
var ErrToolCallUnderReview = errors.New("tool call is under review")

// UnderReviewError names the calls under review; it unwraps to
// ErrToolCallUnderReview.
type UnderReviewError struct {
	ChatID      uuid.UUID
	ToolCallIDs []string
}

func (e *UnderReviewError) Error() string {
	return fmt.Sprintf("tool calls %v of chat %s are under review: an operator reconciles them", e.ToolCallIDs, e.ChatID)
}

// Unwrap returns ErrToolCallUnderReview.
func (e *UnderReviewError) Unwrap() error { return ErrToolCallUnderReview }

// UnderReview returns which of a chat's tool calls are under review (their
// journal entry is unresolved), in the order given.
func (t *Tx) UnderReview(chatID uuid.UUID, toolCallIDs []string) ([]string, error) {
	var under []string
	for _, id := range toolCallIDs {
		e, err := t.tx.JournalGet(t.ctx, chatID, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return nil, fmt.Errorf("read journal entry %s of chat %s: %w", id, chatID, err)
		case e.State == store.JournalUnresolved:
			under = append(under, id)
		}
	}
	return under, nil
}

// refuseUnderReview refuses results submitted for calls under review.
func (t *Tx) refuseUnderReview(chatID uuid.UUID, results []sdk.ToolResult) error {
	ids := make([]string, 0, len(results))
	for _, r := range results {
		ids = append(ids, r.ToolCallID)
	}
	under, err := t.UnderReview(chatID, ids)
	if err != nil {
		return err
	}
	if len(under) > 0 {
		return &UnderReviewError{ChatID: chatID, ToolCallIDs: under}
	}
	return nil
}

// reviewError is the last_error of a chat waiting for an operator's review
// (EnterReview); leaving requires_action clears it.
var reviewError = func() json.RawMessage {
	raw, _ := json.Marshal(sdk.ChatError{
		Kind:    sdk.ChatErrorUnresolvedEffects,
		Message: "A tool call may have run before a crash without its result being recorded; an operator must reconcile it.",
		Detail:  "chatd invocation inspect|reconcile, or POST /api/v2/requests/{request_id}/reconcile (admins)",
	})
	return raw
}()

// UnderReviewResult is the result JSON of a synthetic answer to a tool
// call under review when the user moves on without waiting (interrupt,
// a new message, an edit, a promotion): its outcome is unknown, not
// cancelled, and its journal entry (and request) stay unresolved until an
// operator reconciles them.
type UnderReviewResult struct {
	Outcome     string `json:"outcome"` // "unknown"
	UnderReview bool   `json:"under_review"`
	Error       string `json:"error"`
}

// underReviewResult is the synthetic result of a call under review.
func underReviewResult(reason string) json.RawMessage {
	raw, _ := json.Marshal(UnderReviewResult{Outcome: "unknown", UnderReview: true,
		Error: "tool call outcome unknown: it may have run before a crash and is under operator review (" + reason + ")"})
	return raw
}
