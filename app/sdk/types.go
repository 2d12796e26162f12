// Package sdk holds chatd's wire types (the JSON of API.md, which follows
// the names of Coder's chats API) and a Go client. It never imports the
// server; the server uses these types.
package sdk

import (
	"encoding/json"
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
