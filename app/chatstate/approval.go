package chatstate

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// MaxApprovalReason caps a denial's reason, in characters.
const MaxApprovalReason = 2000

// approvalRound is chats.tool_approvals: the calls of one approval round.
// It belongs to the history version it was entered at: any history change
// (the calls' results, an edit, a cancellation) ends it, so a stale answer
// can never approve a later call that reuses a tool call id.
type approvalRound struct {
	HistoryVersion int64              `json:"history_version"`
	Calls          []sdk.ToolApproval `json:"calls"`
}

// Approvals returns the chat's current approval round: the calls that await
// or got an answer at its present history version; nil when there is none.
func Approvals(c store.Chat) ([]sdk.ToolApproval, error) {
	if len(c.ToolApprovals) == 0 {
		return nil, nil
	}
	var r approvalRound
	if err := json.Unmarshal(c.ToolApprovals, &r); err != nil {
		return nil, fmt.Errorf("decode tool_approvals of chat %s: %w", c.ID, err)
	}
	if r.HistoryVersion != c.HistoryVersion {
		return nil, nil
	}
	return r.Calls, nil
}

// PendingApprovals returns the calls of the chat's approval round that
// still await an answer.
func PendingApprovals(c store.Chat) ([]sdk.ToolApproval, error) {
	calls, err := Approvals(c)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(calls, func(a sdk.ToolApproval) bool { return a.State != sdk.ApprovalPending }), nil
}

// checkApprovalPolicy refuses a policy that is not never, effectful or
// always (empty is never).
func checkApprovalPolicy(field, policy string) error {
	if policy != "" && !slices.Contains(store.AllApprovalPolicies, policy) {
		return invalid(field, "%q is not never, effectful or always", policy)
	}
	return nil
}

// approvalLevel orders the policies, loosest first; an unknown policy is
// treated as always, the safe side.
func approvalLevel(policy string) int {
	if policy == "" {
		return 0
	}
	if i := slices.Index(store.AllApprovalPolicies, policy); i >= 0 {
		return i
	}
	return len(store.AllApprovalPolicies) - 1
}

// StricterApproval is the strictest of the policies (never when none is
// given): a chat's own policy combines with the configured one this way,
// so it can tighten it but never loosen it.
func StricterApproval(policies ...string) string {
	out := store.ApprovalNever
	for _, p := range policies {
		if approvalLevel(p) > approvalLevel(out) {
			out = store.AllApprovalPolicies[approvalLevel(p)]
		}
	}
	return out
}

// ApprovalRequired reports whether a call of a tool with this effect class
// needs a person's approval under the strictest of policies: always asks
// for every call, effectful for effectful tools only (an unknown class
// counts as effectful), never asks for none.
func ApprovalRequired(effect string, policies ...string) bool {
	switch StricterApproval(policies...) {
	case store.ApprovalAlways:
		return true
	case store.ApprovalEffectful:
		return effect != store.EffectPure && effect != store.EffectIdempotent
	}
	return false
}

// EnterApproval stops a running chat until a person approves or denies the
// given outstanding server-side tool calls: requires_action with no
// deadline. Answers already given in this round are kept.
func (t *Tx) EnterApproval(chatID uuid.UUID, calls []sdk.ToolApproval) (Result, error) {
	s, err := t.begin(chatID, EnterApproval)
	if err != nil {
		return Result{}, err
	}
	if len(calls) == 0 {
		return Result{}, invalid("calls", "no tool call to approve")
	}
	outstanding, err := t.OutstandingToolCalls(chatID)
	if err != nil {
		return Result{}, err
	}
	round, err := Approvals(s.chat)
	if err != nil {
		return Result{}, err
	}
	for _, c := range calls {
		if !slices.ContainsFunc(outstanding, func(o ToolCall) bool { return o.ID == c.ToolCallID }) {
			return Result{}, invalid("calls", "%q is not an outstanding tool call", c.ToolCallID)
		}
		round = slices.DeleteFunc(round, func(a sdk.ToolApproval) bool { return a.ToolCallID == c.ToolCallID })
		c.State, c.Reason = sdk.ApprovalPending, ""
		if len(c.Args) == 0 || !json.Valid(c.Args) {
			c.Args = json.RawMessage("{}")
		}
		round = append(round, c)
	}
	raw, err := json.Marshal(approvalRound{HistoryVersion: s.chat.HistoryVersion, Calls: round})
	if err != nil {
		return Result{}, fmt.Errorf("encode approval round: %w", err)
	}
	if err := t.update(chatID, store.ChatPatch{
		Status:                   store.Some(store.ChatStatusRequiresAction),
		RequiresActionDeadlineAt: store.Some[*time.Time](nil),
		CompactionRequestedAt:    store.Some[*time.Time](nil),
		ToolApprovals:            store.Some(json.RawMessage(raw)),
	}); err != nil {
		return Result{}, err
	}
	res, err := s.end()
	return t.emitAfter(res, err, sdk.EventToolApprovalRequested, nil)
}

// ApprovalError is an answer for a call that is not awaiting approval. It
// unwraps to ErrNotAwaitingApproval.
type ApprovalError struct {
	ToolCallID string
	Reason     string
}

func (e *ApprovalError) Error() string {
	return fmt.Sprintf("tool call %q is not awaiting approval: %s", e.ToolCallID, e.Reason)
}

// Unwrap returns ErrNotAwaitingApproval.
func (e *ApprovalError) Unwrap() error { return ErrNotAwaitingApproval }

// AnswerApproval records a person's answers to calls awaiting approval.
// Partial answers keep the chat waiting for the rest; the last answer
// resumes running, and the worker then runs the approved calls through the
// journal and answers the denied ones with an error result.
func (t *Tx) AnswerApproval(chatID uuid.UUID, answers []sdk.ToolApprovalAnswer) (Result, error) {
	s, err := t.begin(chatID, AnswerApproval)
	if err != nil {
		return Result{}, err
	}
	if len(answers) == 0 {
		return Result{}, invalid("approvals", "approvals is empty")
	}
	round, err := Approvals(s.chat)
	if err != nil {
		return Result{}, err
	}
	seen := map[string]bool{}
	for i, a := range answers {
		field := fmt.Sprintf("approvals[%d]", i)
		if a.ToolCallID == "" {
			return Result{}, invalid(field+".tool_call_id", "is required")
		}
		if seen[a.ToolCallID] {
			return Result{}, invalid(field+".tool_call_id", "%q is answered more than once", a.ToolCallID)
		}
		seen[a.ToolCallID] = true
		if utf8.RuneCountInString(a.Reason) > MaxApprovalReason {
			return Result{}, invalid(field+".reason", "is longer than %d characters", MaxApprovalReason)
		}
		j := slices.IndexFunc(round, func(c sdk.ToolApproval) bool { return c.ToolCallID == a.ToolCallID })
		switch {
		case j < 0:
			return Result{}, &ApprovalError{ToolCallID: a.ToolCallID, Reason: "the chat has no such call awaiting approval"}
		case round[j].State != sdk.ApprovalPending:
			return Result{}, &ApprovalError{ToolCallID: a.ToolCallID, Reason: "it was already " + round[j].State}
		}
		if a.Approved {
			round[j].State = sdk.ApprovalApproved
		} else {
			round[j].State, round[j].Reason = sdk.ApprovalDenied, a.Reason
		}
	}
	raw, err := json.Marshal(approvalRound{HistoryVersion: s.chat.HistoryVersion, Calls: round})
	if err != nil {
		return Result{}, fmt.Errorf("encode approval round: %w", err)
	}
	p := store.ChatPatch{ToolApprovals: store.Some(json.RawMessage(raw))}
	if !slices.ContainsFunc(round, func(c sdk.ToolApproval) bool { return c.State == sdk.ApprovalPending }) {
		p = running()
		p.ToolApprovals = store.Some(json.RawMessage(raw))
	}
	if err := t.update(chatID, p); err != nil {
		return Result{}, err
	}
	return s.end()
}

// DeniedResult is the error result a denied call gets: "denied: <reason>".
func DeniedResult(reason string) json.RawMessage {
	msg := "denied"
	if reason != "" {
		msg += ": " + reason
	}
	out, _ := json.Marshal(map[string]string{"error": msg})
	return out
}

// checkNotAwaitingApproval refuses client results while the chat waits on
// a person's approval of a tool call.
func checkNotAwaitingApproval(c store.Chat, results []sdk.ToolResult) error {
	pending, err := PendingApprovals(c)
	if err != nil || len(pending) == 0 {
		return err
	}
	id := pending[0].ToolCallID
	for _, r := range results {
		if slices.ContainsFunc(pending, func(a sdk.ToolApproval) bool { return a.ToolCallID == r.ToolCallID }) {
			id = r.ToolCallID
			break
		}
	}
	return fmt.Errorf("tool call %q: %w; answer it with POST /chats/{chat}/tool-approvals", id, ErrToolCallAwaitingApproval)
}
