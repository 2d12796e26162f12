package chatstate

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// CompleteRequiresAction inserts the submitted results of the pending
// dynamic tool calls and resumes running. Every pending call needs exactly
// one result.
func (t *Tx) CompleteRequiresAction(chatID uuid.UUID, results []sdk.ToolResult, createdBy uuid.NullUUID) (Result, error) {
	s, err := t.begin(chatID, CompleteRequiresAction)
	if err != nil {
		return Result{}, err
	}
	if err := checkNotAwaitingApproval(s.chat, results); err != nil {
		return Result{}, err
	}
	pending, err := t.OutstandingToolCalls(chatID)
	if err != nil {
		return Result{}, err
	}
	if err := t.refuseUnderReview(chatID, results); err != nil {
		return Result{}, err
	}
	byID := map[string]ToolCall{}
	for _, c := range pending {
		byID[c.ID] = c
	}
	seen := map[string]bool{}
	parts := make([]sdk.ChatMessagePart, 0, len(results))
	for i, r := range results {
		field := fmt.Sprintf("results[%d].tool_call_id", i)
		call, ok := byID[r.ToolCallID]
		if !ok {
			return Result{}, invalid(field, "%q is not a pending tool call", r.ToolCallID)
		}
		if seen[r.ToolCallID] {
			return Result{}, invalid(field, "%q has more than one result", r.ToolCallID)
		}
		seen[r.ToolCallID] = true
		output := r.Output
		if len(output) == 0 {
			output = json.RawMessage("null")
		}
		if !json.Valid(output) {
			return Result{}, invalid(fmt.Sprintf("results[%d].output", i), "must be valid JSON")
		}
		parts = append(parts, sdk.ChatMessagePart{
			Type: sdk.PartToolResult, ToolCallID: r.ToolCallID, ToolName: call.Name, Result: output, IsError: r.IsError,
		})
	}
	for _, c := range pending {
		if !seen[c.ID] {
			return Result{}, invalid("results", "missing a result for tool call %q (%s)", c.ID, c.Name)
		}
	}
	content, err := EncodeParts(parts)
	if err != nil {
		return Result{}, err
	}
	if _, err := t.insertMessage(store.MessageInsertParams{
		ChatID: chatID, Role: store.RoleTool, Content: content, CreatedBy: createdBy, Now: t.now,
	}); err != nil {
		return Result{}, fmt.Errorf("insert tool results: %w", err)
	}
	p := running()
	p.RequiresActionDeadlineAt = store.Some[*time.Time](nil)
	if err := t.update(chatID, p); err != nil {
		return Result{}, err
	}
	return s.end()
}

// EnterRequiresAction parks the chat until the client submits results for
// the committed dynamic tool calls, with a deadline.
func (t *Tx) EnterRequiresAction(chatID uuid.UUID) (Result, error) {
	s, err := t.begin(chatID, EnterRequiresAction)
	if err != nil {
		return Result{}, err
	}
	deadline := t.now.Add(t.m.cfg.RequiresActionTimeout)
	if err := t.update(chatID, store.ChatPatch{
		Status:                   store.Some(store.ChatStatusRequiresAction),
		RequiresActionDeadlineAt: store.Some(&deadline),
		CompactionRequestedAt:    store.Some[*time.Time](nil),
	}); err != nil {
		return Result{}, err
	}
	res, err := s.end()
	return t.emitAfter(res, err, sdk.EventChatRequiresAction, nil)
}

// EnterReview stops a running chat for an operator's review of tool calls
// whose effects are unknown: requires_action with no deadline, so nothing
// cancels the calls; the reviewed results complete the action.
func (t *Tx) EnterReview(chatID uuid.UUID) (Result, error) {
	s, err := t.begin(chatID, EnterReview)
	if err != nil {
		return Result{}, err
	}
	if err := t.update(chatID, store.ChatPatch{
		Status:                   store.Some(store.ChatStatusRequiresAction),
		RequiresActionDeadlineAt: store.Some[*time.Time](nil),
		CompactionRequestedAt:    store.Some[*time.Time](nil),
		LastError:                store.Some(reviewError),
	}); err != nil {
		return Result{}, err
	}
	return s.end()
}

// CancelRequiresAction closes pending dynamic tool calls with synthetic
// cancellations (the deadline passed) and resumes running.
func (t *Tx) CancelRequiresAction(chatID uuid.UUID) (Result, error) {
	s, err := t.begin(chatID, CancelRequiresAction)
	if err != nil {
		return Result{}, err
	}
	if err := t.leaveAction(chatID, reasonActionTimeout); err != nil {
		return Result{}, err
	}
	if err := t.update(chatID, running()); err != nil {
		return Result{}, err
	}
	return s.end()
}
