// Package llm is the provider interface of chatd's agent loop. Providers
// (openai/, anthropic/, demo/) turn a prompt into a streamed assistant
// message; they know nothing of storage. llmtest/ holds fake wire servers;
// modelinfo/ is the table of well-known models (context window, reasoning
// efforts, vision).
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/chatd/chatd/app/sdk"
)

// Roles of prompt messages.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Instructions of chatd's auxiliary model calls. They are exported so the
// offline demo model can recognise them and answer in kind.
const (
	// TitleInstruction is the system message of a title generation call.
	TitleInstruction = "Write a short title (at most six words) for a conversation that starts with the user's message below. " +
		"Answer with the title only: no quotes, no punctuation at the end."
	// SummaryInstruction is the last user message of a compaction call.
	SummaryInstruction = "Summarize the conversation so far for your own future reference. " +
		"Keep every fact, decision, open question, file name and code detail needed to continue the work. " +
		"Write only the summary."
)

// Message is one prompt message. Parts use the wire part shapes:
// text, reasoning, tool-call (ToolCallID, ToolName, Args) on assistant
// messages and tool-result (ToolCallID, ToolName, Result, IsError) on tool
// messages. User messages may carry images and PDFs as file parts whose
// URL is a base64 data: URL with the file's MediaType (IsImagePart,
// IsPDFPart); the worker has already turned every other attachment into
// text. A tool result may hold image and audio blocks with their data
// (SplitToolResult).
type Message struct {
	Role  string
	Parts []sdk.ChatMessagePart
}

// Tool is a function the model may call.
type Tool struct {
	Name        string
	Description string
	InputSchema json.RawMessage // a JSON Schema object; {"type":"object"} when empty
}

// Request is one model invocation.
type Request struct {
	Model           string // the provider's model name
	Messages        []Message
	Tools           []Tool
	ReasoningEffort string // "", minimal, low, medium, high, xhigh
	MaxOutputTokens int    // 0 = provider default
}

// Usage is the token accounting of one invocation.
type Usage struct {
	InputTokens         int64
	OutputTokens        int64
	ReasoningTokens     int64
	CacheCreationTokens int64
	CacheReadTokens     int64
}

// Response is the complete assistant message of one invocation.
type Response struct {
	// Parts are the assembled parts: text and reasoning joined, tool calls
	// with complete Args.
	Parts        []sdk.ChatMessagePart
	Usage        Usage
	FinishReason string // "stop", "tool_calls", "length", "content_filter", ...
	// ID and Model are the provider's id of the response and the model
	// that answered, as it reports them ("" when it does not).
	ID    string
	Model string
}

// ToolCalls returns the response's tool-call parts.
func (r Response) ToolCalls() []sdk.ChatMessagePart {
	var out []sdk.ChatMessagePart
	for _, p := range r.Parts {
		if p.Type == sdk.PartToolCall {
			out = append(out, p)
		}
	}
	return out
}

// Provider streams a model's answer. onPart receives deltas as they arrive:
// text and reasoning parts carrying the new text, tool-call parts carrying
// ToolCallID and ToolName first and then ArgsDelta pieces. onPart may be nil.
// Errors are *Error (use Classify for any error).
type Provider interface {
	// Name is the provider's name in model ids ("openai", "anthropic", "demo").
	Name() string
	Stream(ctx context.Context, req Request, onPart func(sdk.ChatMessagePart)) (Response, error)
}

// ListedModel is one model a provider's server lists.
type ListedModel struct {
	// ID is the model's name in requests (Request.Model).
	ID string
	// DisplayName is the server's human name for it ("" when none).
	DisplayName string
	// ContextLimit is the context window the server reports in tokens; 0
	// when it reports none.
	ContextLimit int64
}

// ModelLister is a Provider that can list its server's models (the
// connection test, "discover models"). Errors are *Error, as Stream's.
type ModelLister interface {
	ListModels(ctx context.Context) ([]ListedModel, error)
}

// Error is a classified provider failure.
type Error struct {
	Kind       sdk.ChatErrorKind
	Retryable  bool
	StatusCode int
	Provider   string
	Message    string
	Err        error
}

func (e *Error) Error() string {
	msg := e.Message
	if e.Provider != "" {
		msg = e.Provider + ": " + msg
	}
	if e.StatusCode != 0 {
		msg = fmt.Sprintf("%s (HTTP %d)", msg, e.StatusCode)
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// ChatError is the error as clients see it.
func (e *Error) ChatError() sdk.ChatError {
	return sdk.ChatError{Message: e.Message, Kind: e.Kind, Provider: e.Provider, Retryable: e.Retryable, StatusCode: e.StatusCode}
}

// FromStatus classifies an HTTP error answer of a provider.
func FromStatus(provider string, status int, message string, err error) *Error {
	e := &Error{Provider: provider, StatusCode: status, Message: message, Err: err, Kind: sdk.ChatErrorGeneric}
	if e.Message == "" {
		e.Message = http.StatusText(status)
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Kind = sdk.ChatErrorAuth
	case status == http.StatusTooManyRequests:
		e.Kind, e.Retryable = sdk.ChatErrorRateLimit, true
	case status == 529 || status == http.StatusServiceUnavailable:
		e.Kind, e.Retryable = sdk.ChatErrorOverloaded, true
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		e.Kind, e.Retryable = sdk.ChatErrorTimeout, true
	case status >= 500:
		e.Retryable = true
	case status == http.StatusNotFound || status == http.StatusBadRequest || status == http.StatusUnprocessableEntity:
		e.Kind = sdk.ChatErrorConfig
	}
	return e
}

// Classify turns any error from a provider call into an *Error. Context
// cancellation is returned unchanged (it is not a provider failure).
func Classify(provider string, err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return err
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return &Error{Provider: provider, Kind: sdk.ChatErrorTimeout, Retryable: true, Message: err.Error(), Err: err}
	case errors.As(err, &netErr):
		return &Error{Provider: provider, Kind: sdk.ChatErrorGeneric, Retryable: true, Message: err.Error(), Err: err}
	}
	return &Error{Provider: provider, Kind: sdk.ChatErrorGeneric, Retryable: true, Message: err.Error(), Err: err}
}

// Assembler joins streamed deltas into complete parts, in arrival order.
// Providers use it to build Response.Parts from what they streamed.
type Assembler struct {
	parts []sdk.ChatMessagePart
	calls map[string]int // tool_call_id -> index in parts
	args  map[string][]byte
}

// Add records one delta.
func (a *Assembler) Add(p sdk.ChatMessagePart) {
	if a.calls == nil {
		a.calls, a.args = map[string]int{}, map[string][]byte{}
	}
	switch p.Type {
	case sdk.PartText, sdk.PartReasoning:
		if n := len(a.parts); n > 0 && a.parts[n-1].Type == p.Type {
			a.parts[n-1].Text += p.Text
			return
		}
		a.parts = append(a.parts, sdk.ChatMessagePart{Type: p.Type, Text: p.Text})
	case sdk.PartToolCall:
		i, ok := a.calls[p.ToolCallID]
		if !ok {
			a.calls[p.ToolCallID] = len(a.parts)
			a.parts = append(a.parts, sdk.ChatMessagePart{Type: sdk.PartToolCall, ToolCallID: p.ToolCallID, ToolName: p.ToolName})
			i = len(a.parts) - 1
		}
		if p.ToolName != "" {
			a.parts[i].ToolName = p.ToolName
		}
		a.args[p.ToolCallID] = append(a.args[p.ToolCallID], p.ArgsDelta...)
		if len(p.Args) > 0 {
			a.args[p.ToolCallID] = append([]byte(nil), p.Args...)
		}
	default:
		a.parts = append(a.parts, p)
	}
}

// Parts returns the assembled parts; tool-call args that are empty become
// {} and args that are not valid JSON are kept as a JSON string.
func (a *Assembler) Parts() []sdk.ChatMessagePart {
	out := make([]sdk.ChatMessagePart, len(a.parts))
	copy(out, a.parts)
	for id, i := range a.calls {
		raw := a.args[id]
		switch {
		case len(raw) == 0:
			raw = []byte("{}")
		case !json.Valid(raw):
			raw, _ = json.Marshal(string(raw))
		}
		out[i].Args = json.RawMessage(raw)
	}
	return out
}

// IsImagePart reports whether p is an image for the model: a file part
// carrying its bytes as a base64 data: URL.
func IsImagePart(p sdk.ChatMessagePart) bool {
	_, _, ok := ImageData(p)
	return ok
}

// Images returns the image parts of parts.
func Images(parts []sdk.ChatMessagePart) []sdk.ChatMessagePart {
	var out []sdk.ChatMessagePart
	for _, p := range parts {
		if IsImagePart(p) {
			out = append(out, p)
		}
	}
	return out
}

// ImageData splits an image part's data URL into its media type and its
// base64 data.
func ImageData(p sdk.ChatMessagePart) (mediaType, base64Data string, ok bool) {
	mediaType, base64Data, ok = FileData(p)
	if !ok || !strings.HasPrefix(mediaType, "image/") {
		return "", "", false
	}
	return mediaType, base64Data, true
}
