package sdk

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Elicitation actions (MCP): the person's answer to a server's question.
const (
	ElicitationPending = "pending"
	ElicitationAccept  = "accept"
	ElicitationDecline = "decline"
	ElicitationCancel  = "cancel"
)

// Elicitation modes (MCP).
const (
	ElicitationModeForm = "form"
	ElicitationModeURL  = "url"
)

// StreamElicitationUpdate is the chat stream's event that carries the
// chat's pending questions (ChatStreamEvent.Elicitations): at bootstrap
// when there are any, and whenever that set changes (an empty list once
// the last is answered, cancelled or timed out).
const StreamElicitationUpdate = "elicitation_update"

// CodeElicitationAnswered: an elicitation response names a question that
// was already answered (or cancelled).
const CodeElicitationAnswered = "ELICITATION_ANSWERED"

// Elicitation is a question an MCP server asks the chat's person while one
// of its tools runs (MCP elicitation/create): a form generated from
// RequestedSchema, or a URL to open.
type Elicitation struct {
	ID         uuid.UUID `json:"id"`
	ChatID     uuid.UUID `json:"chat_id"`
	ToolCallID string    `json:"tool_call_id"`
	// Server is the MCP server's name.
	Server  string `json:"server"`
	Mode    string `json:"mode"`
	Message string `json:"message"`
	// RequestedSchema is a form's flat JSON Schema (null for a URL).
	RequestedSchema json.RawMessage `json:"requested_schema"`
	// URL is what a URL elicitation asks the person to open ("" for a form).
	URL string `json:"url"`
	// State is pending, accept, decline or cancel.
	State string `json:"state"`
	// Content is an accepted form's answer, defaults filled (null otherwise).
	Content    json.RawMessage `json:"content"`
	CreatedAt  time.Time       `json:"created_at"`
	AnsweredAt *time.Time      `json:"answered_at"`
}

// ElicitationResponse answers one pending question
// (POST /chats/{chat}/elicitation-responses).
type ElicitationResponse struct {
	ElicitationID uuid.UUID `json:"elicitation_id"`
	// Action is accept, decline or cancel.
	Action string `json:"action"`
	// Content is the form's answer with accept: a JSON object; fields
	// left out get the schema's defaults.
	Content json.RawMessage `json:"content,omitempty"`
}
