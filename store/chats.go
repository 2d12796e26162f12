package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// ChatReader reads chats. It is part of Reader.
type ChatReader interface {
	// ChatGet reads a chat without locking it.
	ChatGet(ctx context.Context, id uuid.UUID) (Chat, error)

	// ChatGetMany reads the chats with the given ids, in no particular order;
	// missing ids are skipped.
	ChatGetMany(ctx context.Context, ids []uuid.UUID) ([]Chat, error)

	// ChatDescendants returns every chat whose root is rootID (not the root itself).
	ChatDescendants(ctx context.Context, rootID uuid.UUID) ([]Chat, error)

	// ChatList lists chats for the listing endpoint, newest first.
	ChatList(ctx context.Context, p ChatListParams) ([]Chat, error)

	// ChatCountByOwner counts the chats a user owns, archived and
	// subagent chats included (the per-user chat quota).
	ChatCountByOwner(ctx context.Context, ownerID uuid.UUID) (int64, error)

	// ChatListArchivable lists the root chats the auto-archive loop may
	// archive (spec: "Auto-archive loop"), oldest first (created_at, id):
	// unarchived, unpinned, not running, interrupting or requires_action,
	// created before p.Cutoff, no descendant running, interrupting or
	// requires_action, and no non-deleted message in the family created at
	// or after p.Cutoff.
	ChatListArchivable(ctx context.Context, p ArchivableParams) ([]Chat, error)

	// MessageNewestInFamily reads when the newest non-deleted message of a
	// root chat and its descendants was created; false when there is none.
	MessageNewestInFamily(ctx context.Context, rootID uuid.UUID) (time.Time, bool, error)
}

// ChatTx writes chats. It is part of Tx; only app/chatstate calls it
// (DESIGN.md rule 1).
type ChatTx interface {
	// ChatInsert creates a chat with snapshot_version = 1 and every other
	// version at 0.
	ChatInsert(ctx context.Context, p ChatInsertParams) (Chat, error)

	// ChatLock takes the chat's row lock (FOR UPDATE on Postgres; the SQLite
	// write transaction already holds the database write lock) and returns it.
	ChatLock(ctx context.Context, id uuid.UUID) (Chat, error)

	// ChatLockShared takes a shared row lock (FOR SHARE on Postgres).
	ChatLockShared(ctx context.Context, id uuid.UUID) (Chat, error)

	// ChatBumpSnapshot advances snapshot_version by one and returns the new value.
	ChatBumpSnapshot(ctx context.Context, id uuid.UUID) (int64, error)

	// ChatUpdate writes the fields set in p and returns the row as the
	// triggers left it.
	ChatUpdate(ctx context.Context, id uuid.UUID, p ChatPatch) (Chat, error)

	// ChatIncrementGenerationAttempt adds one to generation_attempt.
	ChatIncrementGenerationAttempt(ctx context.Context, id uuid.UUID) (Chat, error)

	// ChatTouchHistory records a history change without a message write:
	// history_version = snapshot_version and generation_attempt = 0
	// (RequestCompaction needs a fresh episode without inserting history).
	ChatTouchHistory(ctx context.Context, id uuid.UUID) (Chat, error)

	// ChatDelete removes a chat; messages, queue, heartbeats and the tool
	// journal cascade. Invocations stay: a claim outlives its chat.
	ChatDelete(ctx context.Context, id uuid.UUID) error
}

// ChatStatus is the chats.status column.
type ChatStatus string

// The five statuses of the spec.
const (
	ChatStatusWaiting        ChatStatus = "waiting"
	ChatStatusRunning        ChatStatus = "running"
	ChatStatusInterrupting   ChatStatus = "interrupting"
	ChatStatusRequiresAction ChatStatus = "requires_action"
	ChatStatusError          ChatStatus = "error"
)

// AllChatStatuses lists every status, for validation and tests.
var AllChatStatuses = []ChatStatus{
	ChatStatusWaiting, ChatStatusRunning, ChatStatusInterrupting,
	ChatStatusRequiresAction, ChatStatusError,
}

// TitleSource ranks title writes: fallback < generated < user.
type TitleSource string

// Title sources in rank order.
const (
	TitleSourceFallback  TitleSource = "fallback"
	TitleSourceGenerated TitleSource = "generated"
	TitleSourceUser      TitleSource = "user"
)

// Rank orders title sources; a write applies when its rank is >= the current one.
func (s TitleSource) Rank() int {
	switch s {
	case TitleSourceFallback:
		return 1
	case TitleSourceGenerated:
		return 2
	case TitleSourceUser:
		return 3
	}
	return 0
}

// Chat is one row of chats.
type Chat struct {
	ID                       uuid.UUID
	OwnerID                  uuid.UUID
	ParentChatID             uuid.NullUUID
	RootChatID               uuid.NullUUID
	Title                    string
	TitleSource              TitleSource
	TitleUpdatedAt           time.Time
	Status                   ChatStatus
	Archived                 bool
	WorkerID                 uuid.NullUUID
	RunnerID                 uuid.NullUUID
	LastError                json.RawMessage // nil when NULL
	RetryState               json.RawMessage // nil when NULL
	SnapshotVersion          int64
	HistoryVersion           int64
	QueueVersion             int64
	RetryStateVersion        int64
	GenerationAttempt        int64
	RequiresActionDeadlineAt *time.Time
	CompactionRequestedAt    *time.Time
	Labels                   map[string]string
	PinOrder                 int64
	LastModelConfigID        uuid.NullUUID
	LastReasoningEffort      string
	DynamicTools             json.RawMessage // nil when NULL
	// MCPServerIDs restricts the chat's MCP servers: nil (NULL) means every
	// configured server, an empty non-nil slice none.
	MCPServerIDs []uuid.UUID
	// ToolApproval is the chat's own tool approval policy (ApprovalNever,
	// ApprovalEffectful or ApprovalAlways); it only ever tightens the
	// configured one.
	ToolApproval string
	// ToolApprovals is the approval round of the tool calls the chat waits
	// on, a JSON object (nil when NULL); app/chatstate owns its shape.
	ToolApprovals json.RawMessage
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// ProjectID is the project the chat is in, if any.
	ProjectID uuid.NullUUID
}

// Root returns the id of the chat's family root (itself for a root chat).
func (c Chat) Root() uuid.UUID {
	if c.RootChatID.Valid {
		return c.RootChatID.UUID
	}
	return c.ID
}

// ChatInsertParams are the columns a new chat is created with.
type ChatInsertParams struct {
	ID                  uuid.UUID
	OwnerID             uuid.UUID
	ParentChatID        uuid.NullUUID
	RootChatID          uuid.NullUUID
	Title               string
	TitleSource         TitleSource
	Status              ChatStatus
	Labels              map[string]string
	LastModelConfigID   uuid.NullUUID
	LastReasoningEffort string
	DynamicTools        json.RawMessage
	// MCPServerIDs: nil is every configured MCP server, empty none.
	MCPServerIDs []uuid.UUID
	// ToolApproval is the chat's approval policy (ApprovalNever when empty).
	ToolApproval string
	Now          time.Time
	// ProjectID puts the chat in a project.
	ProjectID uuid.NullUUID
}

// ChatPatch names the chat columns an update writes. The version columns are
// not here: snapshot_version moves with ChatBumpSnapshot, generation_attempt
// with ChatIncrementGenerationAttempt, and the others only through triggers.
type ChatPatch struct {
	Status                   Opt[ChatStatus]
	Archived                 Opt[bool]
	WorkerID                 Opt[uuid.NullUUID]
	RunnerID                 Opt[uuid.NullUUID]
	LastError                Opt[json.RawMessage] // nil value writes NULL
	RetryState               Opt[json.RawMessage] // nil value writes NULL
	RequiresActionDeadlineAt Opt[*time.Time]
	CompactionRequestedAt    Opt[*time.Time]
	Title                    Opt[string]
	TitleSource              Opt[TitleSource]
	TitleUpdatedAt           Opt[time.Time]
	Labels                   Opt[map[string]string]
	PinOrder                 Opt[int64]
	LastModelConfigID        Opt[uuid.NullUUID]
	LastReasoningEffort      Opt[string]
	// MCPServerIDs: a nil value writes NULL (every configured server), an
	// empty one none.
	MCPServerIDs Opt[[]uuid.UUID]
	ToolApproval Opt[string]
	// ToolApprovals: a nil value writes NULL.
	ToolApprovals Opt[json.RawMessage]
	UpdatedAt     Opt[time.Time]
	// ProjectID moves the chat into a project (an unset value: out of any).
	ProjectID Opt[uuid.NullUUID]
}

// ArchivableParams select auto-archive candidates (ChatListArchivable).
type ArchivableParams struct {
	// Cutoff: a candidate was created, and its family last messaged,
	// before this instant.
	Cutoff time.Time
	Limit  int // see ListLimit
}

// ChatListParams filter and page the chat listing.
type ChatListParams struct {
	OwnerID  uuid.NullUUID // unset lists every owner (admins)
	Archived *bool
	Query    string            // case-insensitive substring of the title or message text, see SearchIndexMinRunes
	Labels   map[string]string // every pair must match
	AfterID  uuid.NullUUID     // keyset: chats listed after this one
	Limit    int               // see ListLimit
	// ProjectID lists only the chats in this project.
	ProjectID uuid.NullUUID
}

// Tool approval policies (chats.tool_approval, the MCP config's approval
// keys, CHATD_TOOL_APPROVAL), loosest first: never asks; effectful asks
// for calls of effectful tools; always asks for every call.
const (
	ApprovalNever     = "never"
	ApprovalEffectful = "effectful"
	ApprovalAlways    = "always"
)

// AllApprovalPolicies lists the approval policies, loosest first.
var AllApprovalPolicies = []string{ApprovalNever, ApprovalEffectful, ApprovalAlways}
