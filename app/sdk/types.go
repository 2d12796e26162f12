// Package sdk holds chatd's wire types (the JSON of API.md, which follows
// the names of Coder's chats API) and a Go client. It never imports the
// server; the server uses these types.
package sdk

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// ChatStatus is a chat's execution status on the wire.
type ChatStatus string

// Statuses.
const (
	ChatStatusWaiting        ChatStatus = "waiting"
	ChatStatusRunning        ChatStatus = "running"
	ChatStatusInterrupting   ChatStatus = "interrupting"
	ChatStatusRequiresAction ChatStatus = "requires_action"
	ChatStatusError          ChatStatus = "error"
)

// Part types of ChatMessagePart.
const (
	PartText       = "text"
	PartReasoning  = "reasoning"
	PartToolCall   = "tool-call"
	PartToolResult = "tool-result"
	PartSource     = "source"
	PartFile       = "file"
)

// ChatMessagePart is one part of a message's content.
type ChatMessagePart struct {
	Type             string          `json:"type"`
	Text             string          `json:"text,omitempty"`
	ToolCallID       string          `json:"tool_call_id,omitempty"`
	ToolName         string          `json:"tool_name,omitempty"`
	Args             json.RawMessage `json:"args,omitempty"`
	ArgsDelta        string          `json:"args_delta,omitempty"`
	Result           json.RawMessage `json:"result,omitempty"`
	ResultDelta      string          `json:"result_delta,omitempty"`
	IsError          bool            `json:"is_error,omitempty"`
	ProviderExecuted bool            `json:"provider_executed,omitempty"`
	URL              string          `json:"url,omitempty"`
	Title            string          `json:"title,omitempty"`
	MediaType        string          `json:"media_type,omitempty"`
	Name             string          `json:"name,omitempty"`
	FileID           *uuid.UUID      `json:"file_id,omitempty"`
	CreatedAt        *time.Time      `json:"created_at,omitempty"`
	CompletedAt      *time.Time      `json:"completed_at,omitempty"`

	// ServerID and URI name an MCP resource (input part mcp_resource only).
	ServerID *uuid.UUID `json:"server_id,omitempty"`
	URI      string     `json:"uri,omitempty"`
}

// ChatErrorKind classifies a ChatError.
type ChatErrorKind string

// Error kinds.
const (
	ChatErrorGeneric           ChatErrorKind = "generic"
	ChatErrorOverloaded        ChatErrorKind = "overloaded"
	ChatErrorRateLimit         ChatErrorKind = "rate_limit"
	ChatErrorTimeout           ChatErrorKind = "timeout"
	ChatErrorAuth              ChatErrorKind = "auth"
	ChatErrorConfig            ChatErrorKind = "config"
	ChatErrorContentFilter     ChatErrorKind = "content_filter"
	ChatErrorInvalidState      ChatErrorKind = "invalid_state"
	ChatErrorUnresolvedEffects ChatErrorKind = "unresolved_effects"
)

// ChatError is the last error of the agent loop.
type ChatError struct {
	Message    string        `json:"message"`
	Detail     string        `json:"detail,omitempty"`
	Kind       ChatErrorKind `json:"kind"`
	Provider   string        `json:"provider,omitempty"`
	Retryable  bool          `json:"retryable"`
	StatusCode int           `json:"status_code,omitempty"`
}

// ChatRetry is the retry payload clients see while the worker backs off.
type ChatRetry struct {
	Attempt    int64         `json:"attempt"`
	DelayMS    int64         `json:"delay_ms"`
	Error      string        `json:"error"`
	Kind       ChatErrorKind `json:"kind"`
	RetryingAt time.Time     `json:"retrying_at"`
}

// DynamicTool is a tool the client executes (unsafe_dynamic_tools).
type DynamicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
}

// ToolResult is one submitted result of a dynamic tool call.
type ToolResult struct {
	ToolCallID string          `json:"tool_call_id"`
	Output     json.RawMessage `json:"output"`
	IsError    bool            `json:"is_error"`
}

// OrganizationID is the one built-in organization every chat belongs to.
var OrganizationID = uuid.MustParse("00000000-0000-4000-8000-00000000c4a7")

// Chat is a chat as the API returns it.
type Chat struct {
	// Usage is what the chat's provider calls spent (GET /chats/{chat},
	// the chat list and chat actions; absent when nothing was recorded).
	Usage               *UsageTotals      `json:"usage,omitempty"`
	ID                  uuid.UUID         `json:"id"`
	OrganizationID      uuid.UUID         `json:"organization_id"`
	OwnerID             uuid.UUID         `json:"owner_id"`
	ParentChatID        *uuid.UUID        `json:"parent_chat_id"`
	RootChatID          *uuid.UUID        `json:"root_chat_id"`
	LastModelConfigID   *uuid.UUID        `json:"last_model_config_id"`
	LastReasoningEffort *string           `json:"last_reasoning_effort"`
	Title               string            `json:"title"`
	TitleSource         string            `json:"title_source"`
	TitleUpdatedAt      time.Time         `json:"title_updated_at"`
	Status              ChatStatus        `json:"status"`
	LastError           *ChatError        `json:"last_error"`
	Retry               *ChatRetry        `json:"retry,omitempty"`
	Archived            bool              `json:"archived"`
	PinOrder            int64             `json:"pin_order"`
	Labels              map[string]string `json:"labels"`
	CreatedAt           time.Time         `json:"created_at"`
	UpdatedAt           time.Time         `json:"updated_at"`
	Children            []Chat            `json:"children"`
	WorkspaceID         *uuid.UUID        `json:"workspace_id"`
	// RequiresActionDeadlineAt is set while the chat waits for tool results.
	RequiresActionDeadlineAt *time.Time `json:"requires_action_deadline_at,omitempty"`
	// SnapshotVersion lets clients order chat snapshots.
	SnapshotVersion int64 `json:"snapshot_version"`
	// MCPServerIDs restricts the chat's MCP servers: null means every
	// configured server, [] none.
	MCPServerIDs []uuid.UUID `json:"mcp_server_ids"`
	// ToolApproval is the chat's own approval policy (never, effectful or
	// always); it only ever tightens the configured one.
	ToolApproval string `json:"tool_approval"`
	// ToolApprovals are the calls of the current approval round while the
	// chat is in requires_action for them (answered ones included, with
	// their state); omitted otherwise.
	ToolApprovals []ToolApproval `json:"tool_approvals,omitempty"`
	// ProjectID is the project the chat is in; null when none.
	ProjectID *uuid.UUID `json:"project_id"`
	// SearchSnippet is set in a GET /chats?q= answer on a chat that
	// matched by message text; omitted otherwise.
	SearchSnippet *SearchSnippet `json:"search_snippet,omitempty"`
	// SystemPrompt is the chat's system prompt, in the answers about one
	// chat (GET, POST /chats, import); omitted when none, and in lists.
	SystemPrompt string `json:"system_prompt,omitempty"`
}

// SearchSnippet is the message a chat search matched and the text around
// the first match.
type SearchSnippet struct {
	MessageID int64  `json:"message_id"`
	Text      string `json:"text"`
	// ActiveBranch: the message is on the chat's active branch. Search
	// covers every branch; message_id names the hit's branch (GET
	// /chats/{chat}/messages?message_id=, POST /chats/{chat}/branch).
	ActiveBranch bool `json:"active_branch"`
}

// ChatMessageUsage is the token accounting of a message.
type ChatMessageUsage struct {
	InputTokens         int64 `json:"input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	ReasoningTokens     int64 `json:"reasoning_tokens"`
	CacheCreationTokens int64 `json:"cache_creation_tokens"`
	CacheReadTokens     int64 `json:"cache_read_tokens"`
	ContextLimit        int64 `json:"context_limit"`
}

// ChatMessage is a message of a chat's history.
type ChatMessage struct {
	ID              int64             `json:"id"`
	ChatID          uuid.UUID         `json:"chat_id"`
	CreatedBy       *uuid.UUID        `json:"created_by"`
	ModelConfigID   *uuid.UUID        `json:"model_config_id"`
	CreatedAt       time.Time         `json:"created_at"`
	Role            string            `json:"role"`
	Content         []ChatMessagePart `json:"content"`
	Usage           *ChatMessageUsage `json:"usage,omitempty"`
	QueuedMessageID *int64            `json:"queued_message_id,omitempty"`
	ReasoningEffort *string           `json:"reasoning_effort,omitempty"`
	// Compressed marks the visible half of a compaction or clear boundary.
	Compressed bool `json:"compressed,omitempty"`
	// RequestID is the durable request that admitted this user message
	// (absent for messages sent without one, and for replies), so clients
	// can match stream events to their requests.
	RequestID *uuid.UUID `json:"request_id,omitempty"`
	// ParentID and SiblingIDs place the message in its chat's tree of
	// versions (see versions.go).
	ParentID   *int64  `json:"parent_id"`
	SiblingIDs []int64 `json:"sibling_ids"`
	// RawContent, when set, is sent as content in place of Content: the
	// server passes a stored message's JSON through without decoding it
	// (it must be a valid JSON array of parts). Decoding never sets it;
	// read the parts of either form with Parts.
	RawContent json.RawMessage `json:"-"`
}

// MarshalJSON writes the message with RawContent as its content when set.
func (m ChatMessage) MarshalJSON() ([]byte, error) {
	type plain ChatMessage // the fields, without this method
	if m.RawContent == nil {
		return json.Marshal(plain(m))
	}
	// The outer content field is shallower, so it replaces plain's.
	return json.Marshal(struct {
		plain
		Content json.RawMessage `json:"content"`
	}{plain(m), m.RawContent})
}

// Parts returns the message's content parts, decoding RawContent when
// that is how it is held.
func (m ChatMessage) Parts() ([]ChatMessagePart, error) {
	if m.RawContent == nil {
		return m.Content, nil
	}
	var parts []ChatMessagePart
	err := json.Unmarshal(m.RawContent, &parts)
	return parts, err
}

// ChatQueuedMessage is a message waiting in a chat's queue.
type ChatQueuedMessage struct {
	ID            int64             `json:"id"`
	ChatID        uuid.UUID         `json:"chat_id"`
	ModelConfigID *uuid.UUID        `json:"model_config_id"`
	Content       []ChatMessagePart `json:"content"`
	CreatedAt     time.Time         `json:"created_at"`
	// RequestID is the durable request that admitted this message, if any.
	RequestID *uuid.UUID `json:"request_id,omitempty"`
}

// CreateChatRequest is the body of POST /chats.
type CreateChatRequest struct {
	OrganizationID     uuid.UUID         `json:"organization_id,omitempty"`
	Content            []ChatMessagePart `json:"content"`
	Title              string            `json:"title,omitempty"`
	SystemPrompt       string            `json:"system_prompt,omitempty"`
	ModelConfigID      *uuid.UUID        `json:"model_config_id,omitempty"`
	ReasoningEffort    string            `json:"reasoning_effort,omitempty"`
	Labels             map[string]string `json:"labels,omitempty"`
	UnsafeDynamicTools []DynamicTool     `json:"unsafe_dynamic_tools,omitempty"`
	ParentChatID       *uuid.UUID        `json:"parent_chat_id,omitempty"`
	RequestID          *uuid.UUID        `json:"request_id,omitempty"`
	// MCPServerIDs restricts the chat's MCP servers: nil (sent as null)
	// is every configured server, an empty slice none.
	MCPServerIDs []uuid.UUID `json:"mcp_server_ids"`
	// ToolApproval tightens the chat's tool approval policy: never (the
	// default), effectful or always.
	ToolApproval string `json:"tool_approval,omitempty"`
	// ProjectID puts the chat in one of its owner's projects.
	ProjectID *uuid.UUID `json:"project_id,omitempty"`
}

// UpdateChatRequest is the body of PATCH /chats/{chat}.
type UpdateChatRequest struct {
	Title    *string            `json:"title,omitempty"`
	Archived *bool              `json:"archived,omitempty"`
	PinOrder *int64             `json:"pin_order,omitempty"`
	Labels   *map[string]string `json:"labels,omitempty"`
	// MCPServerIDs changes the chat's MCP servers when Set.
	MCPServerIDs MCPServerSelection `json:"mcp_server_ids,omitzero"`
	// ToolApproval changes the chat's tool approval policy when set.
	ToolApproval *string `json:"tool_approval,omitempty"`
	// ProjectID moves a root chat and its family into a project, or out
	// of any (null), when Set.
	ProjectID ProjectSelection `json:"project_id,omitzero"`
	// SystemPrompt replaces the chat's system prompt when set ("" clears
	// it); it applies from the chat's next model call.
	SystemPrompt *string `json:"system_prompt,omitempty"`
}

// MCPServerSelection is an optional, nullable list of MCP server ids, as
// PATCH /chats/{chat} takes mcp_server_ids: unset (the zero value) leaves
// the chat's selection alone; Set with nil IDs sends null, every configured
// server; Set with a list replaces the selection (an empty one: none).
type MCPServerSelection struct {
	Set bool
	IDs []uuid.UUID
}

// SelectMCPServers is a set selection of ids; no ids (nil) is every
// configured server, and SelectMCPServers([]uuid.UUID{}...) none.
func SelectMCPServers(ids ...uuid.UUID) MCPServerSelection {
	return MCPServerSelection{Set: true, IDs: ids}
}

// IsZero reports an unset selection, which omitzero leaves out.
func (s MCPServerSelection) IsZero() bool { return !s.Set }

// MarshalJSON writes null for nil IDs and the list otherwise.
func (s MCPServerSelection) MarshalJSON() ([]byte, error) {
	if s.IDs == nil {
		return []byte("null"), nil
	}
	return json.Marshal(s.IDs)
}

// UnmarshalJSON reads null as nil IDs and a list as it is; either sets it.
func (s *MCPServerSelection) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*s = MCPServerSelection{Set: true}
		return nil
	}
	ids := []uuid.UUID{}
	if err := json.Unmarshal(b, &ids); err != nil {
		return fmt.Errorf("mcp_server_ids: %w", err)
	}
	*s = MCPServerSelection{Set: true, IDs: ids}
	return nil
}

// Busy behaviours of CreateChatMessageRequest.
const (
	BusyBehaviorQueue     = "queue"
	BusyBehaviorInterrupt = "interrupt"
)

// CreateChatMessageRequest is the body of POST /chats/{chat}/messages.
type CreateChatMessageRequest struct {
	Content         []ChatMessagePart `json:"content"`
	BusyBehavior    string            `json:"busy_behavior,omitempty"`
	ModelConfigID   *uuid.UUID        `json:"model_config_id,omitempty"`
	ReasoningEffort string            `json:"reasoning_effort,omitempty"`
	RequestID       *uuid.UUID        `json:"request_id,omitempty"`
}

// CreateChatMessageResponse is the answer of POST /chats/{chat}/messages.
type CreateChatMessageResponse struct {
	Message       *ChatMessage       `json:"message,omitempty"`
	Messages      []ChatMessage      `json:"messages,omitempty"`
	QueuedMessage *ChatQueuedMessage `json:"queued_message,omitempty"`
	Queued        bool               `json:"queued"`
	RequestID     *uuid.UUID         `json:"request_id,omitempty"`
	AuditID       *uuid.UUID         `json:"audit_id,omitempty"`
	Replayed      *bool              `json:"replayed,omitempty"`
	// Outcome is set on a replay: how the request's turn ended.
	Outcome *RequestOutcome `json:"outcome,omitempty"`
}

// RequestOutcome is how a durable request's turn ended.
type RequestOutcome struct {
	Status     string     `json:"status"` // completed, interrupted, error, superseded, cancelled
	MessageIDs []int64    `json:"message_ids"`
	LastError  *ChatError `json:"last_error,omitempty"`
}

// CreateChatResponse is the answer of POST /chats: the chat, plus the
// durable-request fields when request_id was set.
type CreateChatResponse struct {
	Chat
	RequestID *uuid.UUID      `json:"request_id,omitempty"`
	AuditID   *uuid.UUID      `json:"audit_id,omitempty"`
	Replayed  *bool           `json:"replayed,omitempty"`
	Outcome   *RequestOutcome `json:"outcome,omitempty"`
	Messages  []ChatMessage   `json:"messages,omitempty"`
}

// EditChatMessageRequest is the body of PATCH /chats/{chat}/messages/{message}.
type EditChatMessageRequest struct {
	Content         []ChatMessagePart `json:"content"`
	ModelConfigID   *uuid.UUID        `json:"model_config_id,omitempty"`
	ReasoningEffort string            `json:"reasoning_effort,omitempty"`
}

// EditChatMessageResponse is the answer of PATCH /chats/{chat}/messages/{message}.
type EditChatMessageResponse struct {
	Message           ChatMessage   `json:"message"`
	Messages          []ChatMessage `json:"messages,omitempty"`
	DeletedMessageIDs []int64       `json:"deleted_message_ids,omitempty"`
}

// ChatMessagesResponse is the answer of GET /chats/{chat}/messages.
type ChatMessagesResponse struct {
	Messages       []ChatMessage       `json:"messages"`
	QueuedMessages []ChatQueuedMessage `json:"queued_messages"`
	HasMore        bool                `json:"has_more"`
}

// SubmitToolResultsRequest is the body of POST /chats/{chat}/tool-results.
type SubmitToolResultsRequest struct {
	Results []ToolResult `json:"results"`
}

// User is the authenticated user (GET /users/me).
type User struct {
	ID        uuid.UUID `json:"id"`
	Name      string    `json:"username"`
	Admin     bool      `json:"admin"`
	Disabled  bool      `json:"disabled"` // its tokens and sessions do not authenticate
	CreatedAt time.Time `json:"created_at"`
}

// LoginRequest exchanges an API token, or a login link's one-time code,
// for a session cookie. Exactly one is set.
type LoginRequest struct {
	Token string `json:"token,omitempty"`
	Code  string `json:"code,omitempty"`
}

// ValidationError names one bad field.
type ValidationError struct {
	Field  string `json:"field"`
	Detail string `json:"detail"`
}

// Response is the body of every non-2xx answer.
type Response struct {
	Message     string            `json:"message"`
	Detail      string            `json:"detail,omitempty"`
	Code        string            `json:"code"`
	Validations []ValidationError `json:"validations,omitempty"`
	// RequestID and AuditID accompany durable-request errors.
	RequestID *uuid.UUID `json:"request_id,omitempty"`
	AuditID   *uuid.UUID `json:"audit_id,omitempty"`
	// ChatID accompanies INVOCATION_IN_PROGRESS for the request's caller,
	// so a client that lost a create answer can still act on the chat.
	ChatID *uuid.UUID `json:"chat_id,omitempty"`
}

// Error codes of API.md.
const (
	CodeValidation           = "VALIDATION"
	CodeChatArchived         = "CHAT_ARCHIVED"
	CodeUnauthorized         = "UNAUTHORIZED"
	CodeForbidden            = "FORBIDDEN"
	CodeNotFound             = "NOT_FOUND"
	CodeTransitionNotAllowed = "TRANSITION_NOT_ALLOWED"
	CodeInvalidState         = "INVALID_STATE"
	CodeNothingToCompact     = "NOTHING_TO_COMPACT"
	CodeNothingToClear       = "NOTHING_TO_CLEAR"
	CodeTooLarge             = "TOO_LARGE"
	CodeQueueFull            = "QUEUE_FULL"
	// CodeToolCallAwaitingApproval: tool-results named (or the chat waits
	// on) a call that awaits a person's approval, not a client's result.
	CodeToolCallAwaitingApproval = "TOOL_CALL_AWAITING_APPROVAL"
	// CodeToolCallNotAwaitingApproval: tool-approvals named a call that is
	// not awaiting approval (unknown, a dynamic call, or already answered).
	CodeToolCallNotAwaitingApproval = "TOOL_CALL_NOT_AWAITING_APPROVAL"
	CodeMethodNotAllowed            = "METHOD_NOT_ALLOWED"
	CodeInternal                    = "INTERNAL"
	CodeAuditUnavailable            = "AUDIT_UNAVAILABLE"
	CodeInvocationInProgress        = "INVOCATION_IN_PROGRESS"
	CodeInvocationUnresolved        = "INVOCATION_UNRESOLVED"
	CodeInvocationReconciled        = "INVOCATION_RECONCILED"
	CodeInvocationConflict          = "INVOCATION_CONFLICT"
	CodeInvocationNotFound          = "INVOCATION_NOT_FOUND"
	CodeInvalidInvocationID         = "INVALID_INVOCATION_ID"
	CodeRateLimited                 = "RATE_LIMITED"
	CodeStorageFull                 = "STORAGE_FULL"
	CodeLimitReached                = "LIMIT_REACHED"
	// CodeModelConfigConflict: a provider already has a config for that model.
	CodeModelConfigConflict = "MODEL_CONFIG_CONFLICT"
)

// Stream event types of GET /chats/{chat}/stream.
const (
	StreamMessagePart    = "message_part"
	StreamMessage        = "message"
	StreamStatus         = "status"
	StreamError          = "error"
	StreamQueueUpdate    = "queue_update"
	StreamActionRequired = "action_required"
	StreamRetry          = "retry"
	StreamPreviewReset   = "preview_reset"
	StreamHistoryReset   = "history_reset"
	// StreamApprovalRequired lists the tool calls awaiting a person's
	// approval (POST /chats/{chat}/tool-approvals).
	StreamApprovalRequired = "approval_required"
)

// ChatStreamEvent is one event of the chat stream; each WebSocket text
// frame is a JSON array of them.
type ChatStreamEvent struct {
	Type        string                 `json:"type"`
	ChatID      uuid.UUID              `json:"chat_id"`
	Message     *ChatMessage           `json:"message,omitempty"`
	MessagePart *ChatStreamMessagePart `json:"message_part,omitempty"`
	Status      *ChatStreamStatus      `json:"status,omitempty"`
	Error       *ChatError             `json:"error,omitempty"`
	Retry       *ChatRetry             `json:"retry,omitempty"`
	// QueuedMessages is set (possibly empty) on queue_update only.
	QueuedMessages []ChatQueuedMessage       `json:"queued_messages,omitzero"`
	ActionRequired *ChatStreamActionRequired `json:"action_required,omitempty"`
	// ApprovalRequired is set on approval_required only.
	ApprovalRequired *ChatStreamApprovalRequired `json:"approval_required,omitempty"`
	// Elicitations is set (possibly empty) on elicitation_update only.
	Elicitations []Elicitation `json:"elicitations,omitzero"`
}

// ChatStreamApprovalRequired lists the tool calls still awaiting approval.
type ChatStreamApprovalRequired struct {
	ToolCalls []ToolApproval `json:"tool_calls"`
}

// ChatStreamMessagePart is a live part of the episode (history_version,
// generation_attempt). Seq numbers the episode's parts from 1 and only
// increases; for a viewer that is behind, consecutive text (or reasoning)
// deltas arrive merged, carrying the last one's seq (API.md, Stream).
type ChatStreamMessagePart struct {
	Role              string          `json:"role"`
	Part              ChatMessagePart `json:"part"`
	HistoryVersion    int64           `json:"history_version"`
	GenerationAttempt int64           `json:"generation_attempt"`
	Seq               int64           `json:"seq"`
}

// ChatStreamStatus carries the chat's status.
type ChatStreamStatus struct {
	Status ChatStatus `json:"status"`
}

// ChatStreamActionRequired lists the dynamic tool calls waiting for results.
type ChatStreamActionRequired struct {
	ToolCalls []ChatStreamToolCall `json:"tool_calls"`
}

// ChatStreamToolCall is one pending dynamic tool call. Args is the JSON
// arguments as a string, as Coder's clients read it.
type ChatStreamToolCall struct {
	ToolCallID string `json:"tool_call_id"`
	ToolName   string `json:"tool_name"`
	Args       string `json:"args"`
}

// PartFrame is one part on the replica-to-replica parts stream.
type PartFrame struct {
	HistoryVersion    int64           `json:"history_version"`
	GenerationAttempt int64           `json:"generation_attempt"`
	Seq               int64           `json:"seq"`
	Part              ChatMessagePart `json:"part"`
}

// EpisodeSelect is the control message of the parts stream.
type EpisodeSelect struct {
	HistoryVersion    int64 `json:"history_version"`
	GenerationAttempt int64 `json:"generation_attempt"`
}

// MCP server transports.
const (
	MCPTransportStdio          = "stdio"
	MCPTransportStreamableHTTP = "streamable_http"
	MCPTransportSSE            = "sse"
)

// MCP server states.
const (
	MCPStateConnected  = "connected"
	MCPStateConnecting = "connecting"
	MCPStateFailed     = "failed"
	MCPStateDisabled   = "disabled"
)

// Where an MCP tool's effect class came from.
const (
	MCPEffectSourceConfig     = "config"
	MCPEffectSourceAnnotation = "annotation"
	MCPEffectSourceDefault    = "default"
)

// MCPServer is a configured MCP server, as GET /api/v2/chats/mcp-servers
// lists it. It never carries the server's env, headers or args.
type MCPServer struct {
	// ID is stable: a UUID derived from the name.
	ID        uuid.UUID `json:"id"`
	Name      string    `json:"name"`
	Transport string    `json:"transport"`
	State     string    `json:"state"`
	// LastError is the last connection failure (null when none).
	LastError *string   `json:"last_error"`
	Tools     []MCPTool `json:"tools"`
	// Config is the server's stored settings, shown to admins only.
	Config *MCPServerConfig `json:"config,omitempty"`
	// Auth is the server's MCP authorization (OAuth) status, shown to
	// admins only; absent while the server asked for none. For a server
	// whose identity is each user's (PerUser) it is the caller's own
	// connection, shown to every user who may use it.
	Auth *MCPAuthStatus `json:"auth,omitempty"`
}

// MCPTool is one tool of an MCP server.
type MCPTool struct {
	// Name is what the model sees: SERVER__TOOL.
	Name string `json:"name"`
	// MCPName is the server's own name for the tool.
	MCPName     string `json:"mcp_name"`
	Description string `json:"description"`
	// Effect is pure, idempotent or effectful.
	Effect       string `json:"effect"`
	EffectSource string `json:"effect_source"`
}

// Approval states of a tool call in an approval round.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
)

// ToolApproval is a server-side tool call that needs (or had) a person's
// approval before it runs.
type ToolApproval struct {
	ToolCallID string `json:"tool_call_id"`
	// ToolName is the name the model called (SERVER__TOOL for MCP tools).
	ToolName string `json:"tool_name"`
	// Server is the MCP server's name; empty for chatd's built-in tools.
	Server string `json:"server"`
	// Args are the call's JSON arguments.
	Args json.RawMessage `json:"args"`
	// Effect is the tool's effect class: pure, idempotent or effectful.
	Effect string `json:"effect"`
	// State is pending, approved or denied.
	State string `json:"state"`
	// Reason is a denial's reason (empty otherwise).
	Reason string `json:"reason,omitempty"`
}

// ToolApprovalAnswer answers one call awaiting approval.
type ToolApprovalAnswer struct {
	ToolCallID string `json:"tool_call_id"`
	Approved   bool   `json:"approved"`
	// Reason is told to the model with a denial ("denied: <reason>").
	Reason string `json:"reason,omitempty"`
}

// SubmitToolApprovalsRequest is the body of POST /chats/{chat}/tool-approvals.
type SubmitToolApprovalsRequest struct {
	Approvals []ToolApprovalAnswer `json:"approvals"`
}

// ChatWatchEventKind says what changed in a ChatWatchEvent.
type ChatWatchEventKind string

// The kinds of GET /chats/watch (codersdk's ChatWatchEventKind names).
// Archive and unarchive arrive as status_change with chat.archived.
const (
	ChatWatchEventKindCreated        ChatWatchEventKind = "created"
	ChatWatchEventKindTitleChange    ChatWatchEventKind = "title_change"
	ChatWatchEventKindStatusChange   ChatWatchEventKind = "status_change"
	ChatWatchEventKindActionRequired ChatWatchEventKind = "action_required"
	ChatWatchEventKindDeleted        ChatWatchEventKind = "deleted"
)

// ChatWatchEvent is one message of GET /chats/watch: one JSON object per
// WebSocket message, shaped like codersdk's ChatWatchEvent.
type ChatWatchEvent struct {
	Kind ChatWatchEventKind `json:"kind"`
	Chat Chat               `json:"chat"`
}

// Files (attachments).

// CodeFileQuotaExceeded: an upload would take the user past their file
// quota (409).
const CodeFileQuotaExceeded = "FILE_QUOTA_EXCEEDED"

// UploadFileResponse answers POST /files (and Coder's POST /chats/files).
type UploadFileResponse struct {
	ID        uuid.UUID `json:"id"`
	Name      string    `json:"name"`
	MediaType string    `json:"media_type"`
	Size      int64     `json:"size"`
	CreatedAt time.Time `json:"created_at"`
}

// FileLimits answers GET /files/limits: what an upload may be.
type FileLimits struct {
	MaxFileBytes     int64    `json:"max_file_bytes"`
	QuotaBytes       int64    `json:"quota_bytes"`
	UsedBytes        int64    `json:"used_bytes"`
	MaxFilesPerChat  int      `json:"max_files_per_chat"`
	RetentionSeconds int64    `json:"retention_seconds"`
	ImageTypes       []string `json:"image_types"`
	// DocumentTypes are the documents (application/pdf) a model that reads
	// them natively is given as they are (ChatModel.PDFInput).
	DocumentTypes []string `json:"document_types"`
}

// ChatProviderTest answers POST /chats/providers/{id}/test: whether the
// provider answered its model list, the failure when it did not, and the
// models it lists (with their context window when known).
type ChatProviderTest struct {
	OK     bool              `json:"ok"`
	Error  string            `json:"error"`
	Models []DiscoveredModel `json:"models"`
}

// DiscoveredModel is one model a provider lists.
type DiscoveredModel struct {
	ID           string `json:"id"`
	DisplayName  string `json:"display_name,omitempty"`
	ContextLimit int64  `json:"context_limit"`
}
