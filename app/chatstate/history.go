package chatstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// Boundary tool names: the visible half of a compaction or clear triplet.
const (
	ToolChatSummarized = "chat_summarized"
	ToolChatCleared    = "chat_cleared"
)

// ToolCall is a tool call found in history.
type ToolCall struct {
	MessageID int64
	ID        string
	Name      string
	Args      json.RawMessage
}

// decodeParts reads a message's content. Rows are written by this package,
// so a decode failure means corruption and is reported, not skipped.
func decodeParts(m store.Message) ([]sdk.ChatMessagePart, error) {
	var parts []sdk.ChatMessagePart
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return nil, fmt.Errorf("decode content of message %d: %w", m.ID, err)
	}
	return parts, nil
}

// EncodeParts marshals message content.
func EncodeParts(parts []sdk.ChatMessagePart) (json.RawMessage, error) {
	if parts == nil {
		parts = []sdk.ChatMessagePart{}
	}
	return json.Marshal(parts)
}

// tail returns the active messages from the last user message on (all of
// them when there is none), oldest first. Tool calls are always answered
// before a user message enters history, so outstanding calls can only be
// here; reading backwards keeps this cheap on long chats.
func tail(ctx context.Context, tx store.Reader, chatID uuid.UUID) ([]store.Message, error) {
	var out []store.Message
	before := int64(0)
	for page := firstTailPage; ; page = min(page*2, maxTailPage) {
		ms, err := tx.MessageList(ctx, chatID, store.MessageListParams{BeforeID: before, Descending: true, Limit: page})
		if err != nil {
			return nil, fmt.Errorf("list messages of chat %s: %w", chatID, err)
		}
		for _, m := range ms {
			out = append(out, m)
			if m.Role == store.RoleUser {
				slices.Reverse(out)
				return out, nil
			}
		}
		if len(ms) < page {
			slices.Reverse(out)
			return out, nil
		}
		before = ms[len(ms)-1].ID
	}
}

// The page sizes of a backwards walk to a turn's start, which is nearly
// always among the last few messages: a small page first, so a turn of two
// messages does not read and decode sixty-four, doubling for a long turn.
const (
	firstTailPage = 4
	maxTailPage   = 64
)

// OutstandingToolCalls returns the tool calls in active history that have
// no result yet, in call order.
func (t *Tx) OutstandingToolCalls(chatID uuid.UUID) ([]ToolCall, error) {
	return OutstandingToolCalls(t.ctx, t.tx, chatID)
}

// OutstandingToolCalls reads, in any transaction, the tool calls in active
// history that have no result yet, in call order.
func OutstandingToolCalls(ctx context.Context, tx store.Reader, chatID uuid.UUID) ([]ToolCall, error) {
	ms, err := tail(ctx, tx, chatID)
	if err != nil {
		return nil, err
	}
	return outstandingIn(ms)
}

// OutstandingIn is OutstandingToolCalls over active messages already read
// (oldest first, ending with the newest): it looks at those from the last
// user message on, as tail reads them.
func OutstandingIn(active []store.Message) ([]ToolCall, error) {
	from := 0
	for i := len(active) - 1; i >= 0; i-- {
		if active[i].Role == store.RoleUser {
			from = i
			break
		}
	}
	return outstandingIn(active[from:])
}

func outstandingIn(ms []store.Message) ([]ToolCall, error) {
	var calls []ToolCall
	answered := map[string]bool{}
	for _, m := range ms {
		parts, err := decodeParts(m)
		if err != nil {
			return nil, err
		}
		for _, p := range parts {
			switch {
			case p.Type == sdk.PartToolCall && !p.ProviderExecuted:
				calls = append(calls, ToolCall{MessageID: m.ID, ID: p.ToolCallID, Name: p.ToolName, Args: p.Args})
			case p.Type == sdk.PartToolResult:
				answered[p.ToolCallID] = true
			}
		}
	}
	return slices.DeleteFunc(calls, func(c ToolCall) bool { return answered[c.ID] }), nil
}

// CancelledResult is the result JSON of a synthetic cancellation.
type CancelledResult struct {
	Cancelled bool   `json:"cancelled"`
	Error     string `json:"error"`
}

// answerOutstanding inserts one synthetic result for every outstanding
// tool call (spec: "Miscellaneous transition rules"), so that every call
// in history has exactly one result once the turn that made it is over.
// What a call gets depends on its tool journal entry:
//   - none (it never started: a dynamic call, one still waiting, one in an
//     interrupted partial step): a cancellation, is_error;
//   - started, pure or idempotent (it was running): the same cancellation,
//     and the entry is completed with it, so the journal and history agree
//     and nothing runs it again;
//   - started and effectful (it was running and may have had its effect),
//     or unresolved: UnderReviewResult, never "cancelled"; the entry and
//     the turn's request become (or stay) unresolved for an operator;
//   - completed or reconciled: the recorded result.
func (t *Tx) answerOutstanding(chatID uuid.UUID, reason string) error {
	calls, err := t.OutstandingToolCalls(chatID)
	if err != nil || len(calls) == 0 {
		return err
	}
	cancelled, _ := json.Marshal(CancelledResult{Cancelled: true, Error: "tool call cancelled: " + reason})
	parts := make([]sdk.ChatMessagePart, 0, len(calls))
	for _, c := range calls {
		part := sdk.ChatMessagePart{Type: sdk.PartToolResult, ToolCallID: c.ID, ToolName: c.Name, Result: cancelled, IsError: true}
		e, err := t.tx.JournalGet(t.ctx, chatID, c.ID)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return fmt.Errorf("read journal entry %s of chat %s: %w", c.ID, chatID, err)
		case e.State == store.JournalCompleted || e.State == store.JournalReconciled:
			part.Result, part.IsError = e.Result, e.IsError
		case e.State == store.JournalStarted && e.Effect != store.EffectEffectful:
			if err := t.JournalComplete(chatID, c.ID, cancelled, true); err != nil {
				return err
			}
		default: // unresolved, or an effectful call that was running
			if e.State == store.JournalStarted {
				if err := t.holdForReview(e); err != nil {
					return err
				}
			}
			part.Result = underReviewResult(reason) // never "cancelled": it may have run
		}
		parts = append(parts, part)
	}
	content, err := EncodeParts(parts)
	if err != nil {
		return err
	}
	_, err = t.insertMessage(store.MessageInsertParams{
		ChatID: chatID, Role: store.RoleTool, Content: content, Now: t.now,
	})
	if err != nil {
		return fmt.Errorf("insert cancellation results: %w", err)
	}
	return nil
}

// holdForReview puts a started effectful call, answered while it may have
// run, under an operator's review: its journal entry becomes unresolved,
// and so does its request while that is still open, as MarkUnresolved
// does after a crash; the chat itself goes on.
func (t *Tx) holdForReview(e store.JournalEntry) error {
	if _, err := t.changeJournal(e, store.JournalUnresolved, store.JournalPatch{}); err != nil {
		return err
	}
	if !e.RequestID.Valid {
		return nil
	}
	inv, err := t.tx.InvocationGet(t.ctx, e.RequestID.UUID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil // the claim is gone: only the journal records the doubt
	case err != nil:
		return fmt.Errorf("read request %s: %w", e.RequestID.UUID, err)
	case !RequestAllowed(inv.State, store.InvocationUnresolved):
		return nil
	}
	_, err = t.changeRequest(inv.RequestID, inv.State, store.InvocationUnresolved, store.InvocationPatch{})
	return err
}

// IsBoundaryAnchor reports whether m is the hidden model-only user row that
// starts a compaction or clear triplet; prompts start at the latest one.
func IsBoundaryAnchor(m store.Message) bool {
	return m.Compressed && m.Role == store.RoleUser && m.Visibility == store.VisibilityModel && !m.Deleted
}

// sinceBoundary returns the active messages after the latest boundary
// anchor (all active messages when there is none), oldest first.
func (t *Tx) sinceBoundary(chatID uuid.UUID) ([]store.Message, error) {
	ms, err := FromBoundary(t.ctx, t.tx, chatID)
	if len(ms) > 0 && IsBoundaryAnchor(ms[0]) {
		ms = ms[1:]
	}
	return ms, err
}

// FromBoundary reads, in any transaction, the active messages from the
// latest boundary anchor on (the anchor first; all active messages when
// there is none), oldest first. It reads backwards in pages, so its cost
// follows the model's context, not the chat's whole history.
func FromBoundary(ctx context.Context, tx store.Reader, chatID uuid.UUID) ([]store.Message, error) {
	const page = 128
	var out []store.Message
	before := int64(0)
	for {
		ms, err := tx.MessageList(ctx, chatID, store.MessageListParams{BeforeID: before, Descending: true, Limit: page})
		if err != nil {
			return nil, fmt.Errorf("list messages of chat %s: %w", chatID, err)
		}
		for _, m := range ms {
			out = append(out, m)
			if IsBoundaryAnchor(m) {
				slices.Reverse(out)
				return out, nil
			}
		}
		if len(ms) < page {
			slices.Reverse(out)
			return out, nil
		}
		before = ms[len(ms)-1].ID
	}
}

// SinceLastAnchor is the suffix of active messages (oldest first) from
// the latest boundary anchor on: what FromBoundary reads, of messages
// already read.
func SinceLastAnchor(active []store.Message) []store.Message {
	for i := len(active) - 1; i >= 0; i-- {
		if IsBoundaryAnchor(active[i]) {
			return active[i:]
		}
	}
	return active
}

// HasSomethingToCompact: an uncompressed assistant message follows the
// latest boundary.
func (t *Tx) HasSomethingToCompact(chatID uuid.UUID) (bool, error) {
	ms, err := t.sinceBoundary(chatID)
	if err != nil {
		return false, err
	}
	return SomethingToCompact(ms), nil
}

// hasSomethingToClear: a model-visible, non-system message follows the
// latest boundary.
func (t *Tx) hasSomethingToClear(chatID uuid.UUID) (bool, error) {
	ms, err := t.sinceBoundary(chatID)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(ms, func(m store.Message) bool {
		return m.Role != store.RoleSystem && m.Visibility != store.VisibilityUser
	}), nil
}

// BoundaryTriplet builds a compressed boundary: a hidden model-only anchor
// carrying text for the model, then a visible tool call and its result.
func BoundaryTriplet(chatID uuid.UUID, anchorText, toolName string, args, result json.RawMessage) ([]store.MessageInsertParams, error) {
	callID := toolName + "_" + uuid.NewString()
	anchor, err := EncodeParts([]sdk.ChatMessagePart{{Type: sdk.PartText, Text: anchorText}})
	if err != nil {
		return nil, err
	}
	call, err := EncodeParts([]sdk.ChatMessagePart{{Type: sdk.PartToolCall, ToolCallID: callID, ToolName: toolName, Args: args}})
	if err != nil {
		return nil, err
	}
	res, err := EncodeParts([]sdk.ChatMessagePart{{Type: sdk.PartToolResult, ToolCallID: callID, ToolName: toolName, Result: result}})
	if err != nil {
		return nil, err
	}
	return []store.MessageInsertParams{
		{ChatID: chatID, Role: store.RoleUser, Content: anchor, Visibility: store.VisibilityModel, Compressed: true},
		{ChatID: chatID, Role: store.RoleAssistant, Content: call, Visibility: store.VisibilityUser, Compressed: true},
		{ChatID: chatID, Role: store.RoleTool, Content: res, Visibility: store.VisibilityUser, Compressed: true},
	}, nil
}
