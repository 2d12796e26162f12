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

// RequestNone is the pseudo-state of a request id nobody has claimed yet;
// its row in the request table lists the states a claim is admitted in.
const RequestNone store.InvocationState = ""

// requestTransitions is the life of a durable request claim: from-state ->
// the states it may change to. Every change of invocations.state goes
// through changeRequest, which enforces this table.
var requestTransitions = map[store.InvocationState][]store.InvocationState{
	// AdmitRequest: a claim whose message is in history or queued is
	// admitted; one with nothing to run (a chat created without a message)
	// is completed at once.
	RequestNone: {store.InvocationAdmitted, store.InvocationCompleted},
	// The turn ends (finishRequest), or an effectful call of the turn is in
	// doubt after a crash (MarkUnresolved).
	store.InvocationAdmitted: {store.InvocationCompleted, store.InvocationUnresolved},
	// An operator reviews it (ReconcileRequest), or, when someone other
	// than the operator answered the review, another call of the same turn
	// is in doubt (MarkUnresolved).
	store.InvocationUnresolved: {store.InvocationUnresolved, store.InvocationReconciled},
	// The reviewed turn goes on and another effectful call of it is in
	// doubt after a crash: it needs a new review.
	store.InvocationReconciled: {store.InvocationUnresolved},
	// A completed request's outcome is durable and replayed: final.
	store.InvocationCompleted: nil,
}

// RequestTransitions returns a copy of the request table: from-state (with
// RequestNone for "not claimed yet") -> the states it may change to.
func RequestTransitions() map[store.InvocationState][]store.InvocationState {
	return copyTable(requestTransitions)
}

// RequestAllowed reports whether a request may change from one state to another.
func RequestAllowed(from, to store.InvocationState) bool {
	return slices.Contains(requestTransitions[from], to)
}

// RequestTransitionError is a refused change of a durable request's state.
// It unwraps to ErrTransitionNotAllowed.
type RequestTransitionError struct {
	RequestID uuid.UUID
	From, To  store.InvocationState
	// Reason, when set, says what the caller expected instead.
	Reason string
}

func (e *RequestTransitionError) Error() string {
	from := string(e.From)
	if e.From == RequestNone {
		from = "not claimed"
	}
	if e.Reason != "" {
		return fmt.Sprintf("request %s is %s; %s", e.RequestID, from, e.Reason)
	}
	return fmt.Sprintf("request %s is %s; it cannot become %s", e.RequestID, from, e.To)
}

// Unwrap returns ErrTransitionNotAllowed.
func (e *RequestTransitionError) Unwrap() error { return ErrTransitionNotAllowed }

// changeRequest moves a claim from `from` (as read in this transaction) to
// `to`, writing p with it, when the request table allows it.
func (t *Tx) changeRequest(requestID uuid.UUID, from, to store.InvocationState, p store.InvocationPatch) (store.Invocation, error) {
	if !RequestAllowed(from, to) {
		return store.Invocation{}, &RequestTransitionError{RequestID: requestID, From: from, To: to}
	}
	p.State, p.UpdatedAt = store.Some(to), t.now
	inv, err := t.tx.InvocationUpdate(t.ctx, requestID, p)
	if err != nil {
		return store.Invocation{}, fmt.Errorf("update request %s to %s: %w", requestID, to, err)
	}
	return inv, nil
}

// Claim is a new durable request claim: who asked for what, and where its
// message went.
type Claim struct {
	RequestID     uuid.UUID
	CallerID      uuid.UUID
	ContentSHA256 string // hex SHA-256 of the message text
	RequestSHA256 string // hex SHA-256 of the request's canonical JSON
	Kind          string // "create_chat" or "send_message"
	ChatID        uuid.UUID
	// MessageID is the request's user message when it entered history;
	// QueuedMessageID when it was queued. Neither: nothing to run.
	MessageID       *int64
	QueuedMessageID *int64
	// Response is the admission answer, replayed verbatim.
	Response json.RawMessage
}

// AdmitRequest stores the claim of a request admitted in this transaction,
// with a fresh audit id. A claim with nothing to run is completed at once;
// any other is admitted until its turn ends. A request id that is already
// claimed is store.ErrConflict (a concurrent admission won the race).
func (t *Tx) AdmitRequest(c Claim) (store.Invocation, error) {
	inv := store.Invocation{
		RequestID: c.RequestID, CallerID: c.CallerID, ContentSHA256: c.ContentSHA256, RequestSHA256: c.RequestSHA256, Kind: c.Kind,
		ChatID: c.ChatID, AuditID: uuid.New(), State: store.InvocationAdmitted, MessageID: c.MessageID,
		QueuedMessageID: c.QueuedMessageID, Response: c.Response, CreatedAt: t.now, UpdatedAt: t.now,
	}
	if c.MessageID == nil && c.QueuedMessageID == nil {
		now := t.now
		outcome, err := json.Marshal(Outcome{Status: OutcomeCompleted, MessageIDs: []int64{}})
		if err != nil {
			return store.Invocation{}, fmt.Errorf("encode outcome of request %s: %w", c.RequestID, err)
		}
		inv.State, inv.CompletedAt, inv.Outcome = store.InvocationCompleted, &now, outcome
	}
	if !RequestAllowed(RequestNone, inv.State) {
		return store.Invocation{}, &RequestTransitionError{RequestID: c.RequestID, From: RequestNone, To: inv.State}
	}
	if err := t.tx.InvocationInsert(t.ctx, inv); err != nil {
		return store.Invocation{}, fmt.Errorf("claim request %s: %w", c.RequestID, err)
	}
	return inv, nil
}

// MarkUnresolved stops a chat for review because effectful tool calls of
// its turn may have run before a crash: each call's journal entry becomes
// unresolved, so does the turn's request (when it has one), and the chat
// enters review (requires_action without a deadline).
func (t *Tx) MarkUnresolved(chatID uuid.UUID, requestID uuid.NullUUID, toolCallIDs []string) (Result, error) {
	for _, id := range toolCallIDs {
		e, err := t.tx.JournalGet(t.ctx, chatID, id)
		if err != nil {
			return Result{}, fmt.Errorf("read journal entry %s of chat %s: %w", id, chatID, err)
		}
		if _, err := t.changeJournal(e, store.JournalUnresolved, store.JournalPatch{}); err != nil {
			return Result{}, err
		}
	}
	if requestID.Valid {
		inv, err := t.tx.InvocationGet(t.ctx, requestID.UUID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			// The claim is gone: only the journal records the doubt.
		case err != nil:
			return Result{}, fmt.Errorf("read request %s: %w", requestID.UUID, err)
		default:
			if _, err := t.changeRequest(inv.RequestID, inv.State, store.InvocationUnresolved, store.InvocationPatch{}); err != nil {
				return Result{}, err
			}
		}
	}
	return t.EnterReview(chatID)
}

// Reconciliation is an operator's review of an unresolved request.
type Reconciliation struct {
	// Review is the assessment recorded on the claim.
	Review json.RawMessage
	// Result becomes the result of each unresolved tool call of the request.
	Result  json.RawMessage
	IsError bool
}

// ReconcileRequest records an operator's review without replaying
// anything: the request becomes reconciled (closed to execution), each of
// its unresolved tool calls gets the reviewed result, and a chat still in
// review resumes (the reviewed results complete the action; calls of the
// turn that were never reviewed are answered as not run).
func (t *Tx) ReconcileRequest(requestID uuid.UUID, r Reconciliation) (Result, error) {
	inv, err := t.tx.InvocationGet(t.ctx, requestID)
	if err != nil {
		return Result{}, fmt.Errorf("request %s: %w", requestID, err)
	}
	// Lock the chat before touching the claim and the journal, in the
	// order runners use, then re-read the claim under the lock.
	_, st, err := t.LockState(inv.ChatID)
	if err != nil {
		return Result{}, err
	}
	if inv, err = t.tx.InvocationGet(t.ctx, requestID); err != nil {
		return Result{}, fmt.Errorf("request %s: %w", requestID, err)
	}
	if !RequestAllowed(inv.State, store.InvocationReconciled) {
		return Result{}, &RequestTransitionError{RequestID: requestID, From: inv.State, To: store.InvocationReconciled,
			Reason: "only unresolved requests are reconciled"}
	}
	entries, err := t.tx.JournalList(t.ctx, inv.ChatID, uuid.NullUUID{UUID: requestID, Valid: true})
	if err != nil {
		return Result{}, fmt.Errorf("list journal of request %s: %w", requestID, err)
	}
	if err := t.reconcileEntries(entries, r); err != nil {
		return Result{}, err
	}
	now := t.now
	if _, err := t.changeRequest(requestID, inv.State, store.InvocationReconciled, store.InvocationPatch{
		Review: store.Some(r.Review), CompletedAt: store.Some(&now),
	}); err != nil {
		return Result{}, err
	}
	return t.resumeReviewed(inv.ChatID, st)
}

// ReconcileToolCall records an operator's review of one unresolved tool
// call, for turns sent without a request id. A call whose turn has a
// request is reconciled with its request (ReconcileRequest), so the
// request and every call of it are reviewed together. The chat resumes
// when no call of it remains under review.
func (t *Tx) ReconcileToolCall(chatID uuid.UUID, toolCallID string, r Reconciliation) (Result, error) {
	_, st, err := t.LockState(chatID)
	if err != nil {
		return Result{}, err
	}
	e, err := t.tx.JournalGet(t.ctx, chatID, toolCallID)
	if err != nil {
		return Result{}, fmt.Errorf("tool call %s of chat %s: %w", toolCallID, chatID, err)
	}
	if e.RequestID.Valid {
		if _, err := t.tx.InvocationGet(t.ctx, e.RequestID.UUID); err == nil {
			return t.ReconcileRequest(e.RequestID.UUID, r)
		} else if !errors.Is(err, store.ErrNotFound) {
			return Result{}, fmt.Errorf("read request %s: %w", e.RequestID.UUID, err)
		}
		// The claim is gone (its chat was recreated?): review the call alone.
	}
	if !JournalAllowed(e.State, store.JournalReconciled) {
		return Result{}, &JournalTransitionError{ChatID: chatID, ToolCallID: toolCallID, From: e.State, To: store.JournalReconciled}
	}
	if err := t.reconcileEntries([]store.JournalEntry{e}, r); err != nil {
		return Result{}, err
	}
	return t.resumeReviewed(chatID, st)
}

// reconcileEntries gives each unresolved entry the reviewed result.
func (t *Tx) reconcileEntries(entries []store.JournalEntry, r Reconciliation) error {
	now := t.now
	for _, e := range entries {
		if e.State != store.JournalUnresolved {
			continue
		}
		if _, err := t.changeJournal(e, store.JournalReconciled, store.JournalPatch{
			Result: store.Some(r.Result), IsError: store.Some(r.IsError), CompletedAt: store.Some(&now),
		}); err != nil {
			return err
		}
	}
	return nil
}

// resumeReviewed completes a chat's review once no outstanding call of it
// is under review: a chat still in review (st, read under the lock)
// resumes, each reviewed call answered with its reviewed result and any
// other outstanding call as not run. A chat that moved on, or still has
// calls under review, keeps its state: the review is recorded.
func (t *Tx) resumeReviewed(chatID uuid.UUID, st State) (Result, error) {
	if st == StateA0 || st == StateA1 {
		pending, err := t.OutstandingToolCalls(chatID)
		if err != nil {
			return Result{}, err
		}
		results := make([]sdk.ToolResult, 0, len(pending))
		waiting := false
		for _, c := range pending {
			e, err := t.tx.JournalGet(t.ctx, chatID, c.ID)
			switch {
			case errors.Is(err, store.ErrNotFound):
			case err != nil:
				return Result{}, fmt.Errorf("read journal entry %s of chat %s: %w", c.ID, chatID, err)
			case e.State == store.JournalUnresolved:
				waiting = true
			case e.State == store.JournalReconciled:
				results = append(results, sdk.ToolResult{ToolCallID: c.ID, Output: e.Result, IsError: e.IsError})
				continue
			}
			out, _ := json.Marshal(map[string]string{"error": "not run: the turn was reconciled by an operator"})
			results = append(results, sdk.ToolResult{ToolCallID: c.ID, Output: out, IsError: true})
		}
		if !waiting {
			return t.CompleteRequiresAction(chatID, results, uuid.NullUUID{})
		}
	}
	c, st, err := t.Peek(chatID)
	if err != nil {
		return Result{}, err
	}
	return Result{Chat: c, State: st}, nil
}

// ReconcileTarget names what an operator reviews: a durable request, or
// (for turns sent without a request id) one tool call of a chat.
type ReconcileTarget struct {
	RequestID  uuid.UUID
	ChatID     uuid.UUID
	ToolCallID string
}

// Validate reports a target that names neither a request nor a tool call,
// or both.
func (g ReconcileTarget) Validate() error {
	byCall := g.ChatID != uuid.Nil || g.ToolCallID != ""
	switch {
	case g.RequestID != uuid.Nil && byCall:
		return invalid("request_id", "give a request id, or a chat and a tool call id, not both")
	case g.RequestID != uuid.Nil:
		return nil
	case g.ChatID == uuid.Nil || g.ToolCallID == "":
		return invalid("tool_call_id", "give a request id, or a chat and a tool call id")
	}
	return nil
}

// Reconciled is what Reconcile did.
type Reconciled struct {
	Result
	// Request is the reviewed request after the review, when the target
	// has one.
	Request *store.Invocation
	// ToolCallIDs are the calls that got the reviewed result.
	ToolCallIDs []string
}

// Reconcile is the one way an operator's review is recorded, whoever asks
// (the CLI directly or over the admin socket, or an admin over HTTP): it
// validates the review and reconciles the target's request
// (ReconcileRequest) or tool call (ReconcileToolCall).
func (t *Tx) Reconcile(g ReconcileTarget, review sdk.ReconcileRequest) (Reconciled, error) {
	if err := g.Validate(); err != nil {
		return Reconciled{}, err
	}
	if err := review.Validate(); err != nil {
		return Reconciled{}, invalid("review", "%v", err)
	}
	raw, err := json.Marshal(review)
	if err != nil {
		return Reconciled{}, fmt.Errorf("encode review: %w", err)
	}
	r := Reconciliation{Review: raw, Result: review.Result, IsError: review.IsError}
	if len(r.Result) == 0 {
		r.Result, _ = json.Marshal(map[string]string{"reviewed": review.Assessment})
	}
	if g.RequestID == uuid.Nil {
		// Lock the chat first, as every transition does.
		if _, _, err := t.LockState(g.ChatID); err != nil {
			return Reconciled{}, err
		}
		e, err := t.tx.JournalGet(t.ctx, g.ChatID, g.ToolCallID)
		if err != nil {
			return Reconciled{}, fmt.Errorf("tool call %s of chat %s: %w", g.ToolCallID, g.ChatID, err)
		}
		if e.RequestID.Valid {
			if _, err := t.tx.InvocationGet(t.ctx, e.RequestID.UUID); err == nil {
				g = ReconcileTarget{RequestID: e.RequestID.UUID} // reviewed with its request
			}
		}
	}
	var entries []store.JournalEntry
	if g.RequestID != uuid.Nil {
		inv, err := t.tx.InvocationGet(t.ctx, g.RequestID)
		if err != nil {
			return Reconciled{}, fmt.Errorf("request %s: %w", g.RequestID, err)
		}
		if _, _, err := t.LockState(inv.ChatID); err != nil {
			return Reconciled{}, err
		}
		if entries, err = t.tx.JournalList(t.ctx, inv.ChatID, uuid.NullUUID{UUID: g.RequestID, Valid: true}); err != nil {
			return Reconciled{}, fmt.Errorf("list journal of request %s: %w", g.RequestID, err)
		}
	} else {
		e, err := t.tx.JournalGet(t.ctx, g.ChatID, g.ToolCallID)
		if err != nil {
			return Reconciled{}, fmt.Errorf("tool call %s of chat %s: %w", g.ToolCallID, g.ChatID, err)
		}
		entries = []store.JournalEntry{e}
	}
	out := Reconciled{ToolCallIDs: []string{}}
	for _, e := range entries {
		if e.State == store.JournalUnresolved {
			out.ToolCallIDs = append(out.ToolCallIDs, e.ToolCallID)
		}
	}
	if g.RequestID != uuid.Nil {
		if out.Result, err = t.ReconcileRequest(g.RequestID, r); err != nil {
			return Reconciled{}, err
		}
		inv, err := t.tx.InvocationGet(t.ctx, g.RequestID)
		if err != nil {
			return Reconciled{}, fmt.Errorf("request %s: %w", g.RequestID, err)
		}
		out.Request = &inv
		return out, nil
	}
	out.Result, err = t.ReconcileToolCall(g.ChatID, g.ToolCallID, r)
	return out, err
}
