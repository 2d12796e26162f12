package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// MessageReader reads a chat's messages. It is part of Reader.
type MessageReader interface {
	// MessageGet reads one message of a chat.
	MessageGet(ctx context.Context, chatID uuid.UUID, id int64) (Message, error)

	// MessageList returns a chat's messages in id order.
	MessageList(ctx context.Context, chatID uuid.UUID, p MessageListParams) ([]Message, error)
}

// MessageTx writes a chat's messages. It is part of Tx; only app/chatstate
// calls it (DESIGN.md rule 1).
type MessageTx interface {
	// MessageInsert appends a message. The database assigns id and revision.
	MessageInsert(ctx context.Context, p MessageInsertParams) (Message, error)

	// MessageUpdate writes the fields set in p; the revision trigger decides
	// whether history changed.
	MessageUpdate(ctx context.Context, chatID uuid.UUID, id int64, p MessagePatch) (Message, error)

	// MessageSoftDeleteFrom marks every non-deleted message with id >= fromID
	// as deleted and returns their ids.
	MessageSoftDeleteFrom(ctx context.Context, chatID uuid.UUID, fromID int64) ([]int64, error)
}

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message visibilities: who sees a row. "model" rows go to the provider but
// not to people; "user" rows are shown but never sent to the provider.
const (
	VisibilityBoth  = "both"
	VisibilityUser  = "user"
	VisibilityModel = "model"
)

// Usage is the token accounting of one assistant message.
type Usage struct {
	InputTokens         int64 `json:"input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	ReasoningTokens     int64 `json:"reasoning_tokens"`
	CacheCreationTokens int64 `json:"cache_creation_tokens"`
	CacheReadTokens     int64 `json:"cache_read_tokens"`
	ContextLimit        int64 `json:"context_limit"`
}

// Message is one row of chat_messages.
type Message struct {
	ID              int64
	ChatID          uuid.UUID
	Role            string
	Content         json.RawMessage // JSON array of parts
	Visibility      string
	Compressed      bool
	Deleted         bool
	Revision        int64
	QueuedMessageID *int64
	CreatedBy       uuid.NullUUID
	ModelConfigID   uuid.NullUUID
	ReasoningEffort string
	Usage           *Usage
	// RequestID links the user message of a durable request to its claim.
	RequestID uuid.NullUUID
	CreatedAt time.Time
	// ParentID, Pruned and SiblingIDs place the message in its chat's
	// tree of versions (see versions.go).
	ParentID   *int64
	Pruned     bool
	SiblingIDs []int64
}

// MessageInsertParams are the columns of a new message. Revision is
// assigned by the database; setting it is rejected by the store.
type MessageInsertParams struct {
	ChatID          uuid.UUID
	Role            string
	Content         json.RawMessage
	Visibility      string // defaults to VisibilityBoth
	Compressed      bool
	QueuedMessageID *int64
	CreatedBy       uuid.NullUUID
	ModelConfigID   uuid.NullUUID
	ReasoningEffort string
	Usage           *Usage
	RequestID       uuid.NullUUID
	Now             time.Time
}

// MessagePatch names the message columns an update writes.
type MessagePatch struct {
	Content    Opt[json.RawMessage]
	Visibility Opt[string]
	Compressed Opt[bool]
	Deleted    Opt[bool]
	// The model a turn asks for (a regenerate that names another).
	ModelConfigID   Opt[uuid.NullUUID]
	ReasoningEffort Opt[string]
}

// MessageListParams page a chat's messages.
type MessageListParams struct {
	IncludeDeleted bool
	// PeopleOnly skips model-only rows (what people see).
	PeopleOnly bool
	// RevisionAfter keeps rows with revision > this (0 = all).
	RevisionAfter int64
	AfterID       int64 // exclusive; 0 means from the start
	BeforeID      int64 // exclusive; 0 means to the end
	Limit         int   // 0 means no limit
	Descending    bool  // newest first (used with BeforeID for "load older")
}
