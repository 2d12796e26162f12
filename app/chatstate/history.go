package chatstate

import (
	"context"
	"encoding/json"
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
func (t *Tx) tail(chatID uuid.UUID) ([]store.Message, error) {
	return tail(t.ctx, t.tx, chatID)
}

func tail(ctx context.Context, tx store.Reader, chatID uuid.UUID) ([]store.Message, error) {
	const page = 64
	var out []store.Message
	before := int64(0)
	for {
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

// answerOutstanding inserts synthetic cancellation results for every
// outstanding tool call (spec: "Miscellaneous transition rules"); a call
// under review gets UnderReviewResult instead and stays unresolved.
func (t *Tx) answerOutstanding(chatID uuid.UUID, reason string) error {
	calls, err := t.OutstandingToolCalls(chatID)
	if err != nil || len(calls) == 0 {
		return err
	}
	ids := make([]string, 0, len(calls))
	for _, c := range calls {
		ids = append(ids, c.ID)
	}
	under, err := t.UnderReview(chatID, ids)
	if err != nil {
		return err
	}
	parts := make([]sdk.ChatMessagePart, 0, len(calls))
	for _, c := range calls {
		result, _ := json.Marshal(CancelledResult{Cancelled: true, Error: "tool call cancelled: " + reason})
		if slices.Contains(under, c.ID) {
			result = underReviewResult(reason) // never "cancelled": it may have run
		}
		parts = append(parts, sdk.ChatMessagePart{
			Type: sdk.PartToolResult, ToolCallID: c.ID, ToolName: c.Name, Result: result, IsError: true,
		})
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
