// Package wire projects store rows to the API's wire types (app/sdk). The
// HTTP handlers and the stream loop share it.
package wire

import (
	"bytes"
	"encoding/json"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

func uuidPtr(u uuid.NullUUID) *uuid.UUID {
	if !u.Valid {
		return nil
	}
	id := u.UUID
	return &id
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// ToChat projects a chat row to its wire form.
func ToChat(c store.Chat) sdk.Chat {
	out := sdk.Chat{
		ID: c.ID, OrganizationID: sdk.OrganizationID, OwnerID: c.OwnerID,
		ParentChatID: uuidPtr(c.ParentChatID), RootChatID: uuidPtr(c.RootChatID),
		LastModelConfigID: uuidPtr(c.LastModelConfigID), LastReasoningEffort: strPtr(c.LastReasoningEffort),
		Title: c.Title, TitleSource: string(c.TitleSource), TitleUpdatedAt: c.TitleUpdatedAt,
		Status: sdk.ChatStatus(c.Status), Archived: c.Archived, PinOrder: c.PinOrder,
		Labels: c.Labels, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt, Children: []sdk.Chat{},
		RequiresActionDeadlineAt: c.RequiresActionDeadlineAt, SnapshotVersion: c.SnapshotVersion,
		MCPServerIDs: c.MCPServerIDs, // nil is null: every configured server
		ToolApproval: c.ToolApproval,
		ProjectID:    uuidPtr(c.ProjectID),
	}
	if c.Status == store.ChatStatusRequiresAction {
		// A row the machine wrote always decodes; a broken one shows none.
		out.ToolApprovals, _ = chatstate.Approvals(c)
	}
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	if c.LastError != nil {
		var e sdk.ChatError
		if json.Unmarshal(c.LastError, &e) == nil {
			out.LastError = &e
		}
	}
	if c.RetryState != nil {
		var r sdk.ChatRetry
		if json.Unmarshal(c.RetryState, &r) == nil {
			out.Retry = &r
		}
	}
	return out
}

// ToMessage projects a message row to its wire form.
func ToMessage(m store.Message) sdk.ChatMessage {
	out := messageFields(m)
	if err := json.Unmarshal(m.Content, &out.Content); err != nil || out.Content == nil {
		out.Content = []sdk.ChatMessagePart{}
	}
	return out
}

// messageFields projects every field of a message row but its content.
func messageFields(m store.Message) sdk.ChatMessage {
	out := sdk.ChatMessage{
		ID: m.ID, ChatID: m.ChatID, CreatedBy: uuidPtr(m.CreatedBy), ModelConfigID: uuidPtr(m.ModelConfigID),
		CreatedAt: m.CreatedAt, Role: m.Role, QueuedMessageID: m.QueuedMessageID,
		ReasoningEffort: strPtr(m.ReasoningEffort), Compressed: m.Compressed, RequestID: uuidPtr(m.RequestID),
		ParentID: m.ParentID, SiblingIDs: m.SiblingIDs,
	}
	if len(out.SiblingIDs) == 0 {
		out.SiblingIDs = []int64{m.ID} // a row read without its versions is its only one
	}
	if m.Usage != nil {
		u := sdk.ChatMessageUsage(*m.Usage)
		out.Usage = &u
	}
	return out
}

// ToMessageRaw projects a message row to its wire form for sending only:
// the stored content is passed through as RawContent instead of being
// decoded into parts and encoded again, which was most of the cost of a
// long chat's stream bootstrap. Content that is not a JSON array (a row
// written around the store) takes ToMessage's way, which sends []. The
// stream's writer splices RawContent in (appendEvent); encoding/json
// would scan it twice more (sdk.ChatMessage.MarshalJSON).
func ToMessageRaw(m store.Message) sdk.ChatMessage {
	if !isArray(m.Content) {
		return ToMessage(m)
	}
	out := messageFields(m)
	out.RawContent = m.Content
	return out
}

// isArray reports whether raw is a JSON array. The stores only hold
// valid JSON content (SQLite's writes check it, a jsonb column cannot hold
// anything else), so the brackets are checked and the rest is trusted:
// scanning a long chat's content again cost more than decoding it.
func isArray(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) >= 2 && raw[0] == '[' && raw[len(raw)-1] == ']'
}

// ToMessages projects rows people may see: model-only rows are hidden.
func ToMessages(ms []store.Message) []sdk.ChatMessage {
	out := make([]sdk.ChatMessage, 0, len(ms))
	for _, m := range ms {
		if m.Deleted || m.Visibility == store.VisibilityModel {
			continue
		}
		out = append(out, ToMessage(m))
	}
	return out
}

// ToQueued projects a queued message row to its wire form.
func ToQueued(q store.QueuedMessage) sdk.ChatQueuedMessage {
	out := sdk.ChatQueuedMessage{ID: q.ID, ChatID: q.ChatID, ModelConfigID: uuidPtr(q.ModelConfigID), CreatedAt: q.CreatedAt,
		RequestID: uuidPtr(q.RequestID)}
	if err := json.Unmarshal(q.Content, &out.Content); err != nil || out.Content == nil {
		out.Content = []sdk.ChatMessagePart{}
	}
	return out
}

// ToQueue projects a queue.
func ToQueue(qs []store.QueuedMessage) []sdk.ChatQueuedMessage {
	out := make([]sdk.ChatQueuedMessage, 0, len(qs))
	for _, q := range qs {
		out = append(out, ToQueued(q))
	}
	return out
}
