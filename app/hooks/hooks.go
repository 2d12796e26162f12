// Package hooks dispatches lifecycle hook events (spec: "Lifecycle hooks")
// to one external consumer: each event is POSTed as JSON, signed per the
// Standard Webhooks scheme, and the consumer's answer may add context,
// replace the prompt or a tool's input, or deny. Hooks fail closed: a
// consumer that cannot be reached or answers something invalid is an
// error, and the caller stops the operation that triggered the event.
//
// Dispatches are capped per replica; a dispatch that admits new work into
// a chat may hold only part of the cap, so a burst of submissions cannot
// starve work a chat has already admitted. chatd stores no hook state:
// delivery is best-effort and may repeat, and the consumer deduplicates by
// the stable event id.
package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/redact"
	"github.com/chatd/chatd/app/sdk"
)

// Event is a lifecycle event type.
type Event string

// The events of the spec.
const (
	SessionStart     Event = "session_start"
	UserPromptSubmit Event = "user_prompt_submit"
	PreToolUse       Event = "pre_tool_use"
	PostToolUse      Event = "post_tool_use"
	PreCompact       Event = "pre_compact"
	PostCompact      Event = "post_compact"
	Stop             Event = "stop"
)

// AllEvents lists every event type.
var AllEvents = []Event{SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, PreCompact, PostCompact, Stop}

// Decisions a consumer may return (only for user_prompt_submit and
// pre_tool_use).
const (
	DecisionAllow = "allow"
	DecisionDeny  = "deny"
)

// Class says whether a dispatch admits new work into a chat or belongs to
// work the chat already admitted; the caller declares it, because the
// event type does not decide it.
type Class int

// Dispatch classes.
const (
	// Admitted work (a tool call of a running turn, its stop) may use the
	// whole cap.
	Admitted Class = iota
	// Admission (a new prompt, a session start) may use only the cap
	// minus the reserved share.
	Admission
)

// Defaults for Config's zero values.
const (
	DefaultMaxConcurrent = 16
	DefaultTimeout       = 30 * time.Second
	// MaxResponseBytes caps a consumer's answer; a longer one is invalid.
	MaxResponseBytes = 1 << 20
)

// Request is the JSON body POSTed for one event.
type Request struct {
	// ID is the stable event id, <chat_id>:<turn>:<event>[:<tool_call_id>]
	// (EventID); it is also the webhook-id header.
	ID     string    `json:"id"`
	Event  Event     `json:"event"`
	ChatID uuid.UUID `json:"chat_id"`
	// Turn numbers the chat's turns: the history id of the user message
	// that started it.
	Turn    int64     `json:"turn"`
	OwnerID uuid.UUID `json:"owner_id"`
	// Prompt is the submitted prompt (user_prompt_submit).
	Prompt []sdk.ChatMessagePart `json:"prompt,omitempty"`
	// ToolCallID, ToolName and ToolInput describe the call (pre_tool_use,
	// post_tool_use); ToolResult and ToolIsError its result (post_tool_use).
	ToolCallID  string          `json:"tool_call_id,omitempty"`
	ToolName    string          `json:"tool_name,omitempty"`
	ToolInput   json.RawMessage `json:"tool_input,omitempty"`
	ToolResult  json.RawMessage `json:"tool_result,omitempty"`
	ToolIsError bool            `json:"tool_is_error,omitempty"`
	// Source is "manual" or "automatic" (pre_compact, post_compact), or
	// "create" or "edit" (session_start).
	Source string `json:"source,omitempty"`
	// SubmissionID identifies the submission (session_start,
	// user_prompt_submit): a durable request's request_id, so a retry of
	// the same request has the same event id, else a fresh id.
	SubmissionID string `json:"submission_id,omitempty"`
}

// EventID is the stable id of an event: the same event of the same turn
// gets the same id on every delivery, so the consumer can deduplicate.
// suffix is the tool call id (pre_tool_use, post_tool_use) or the
// submission id (session_start, user_prompt_submit), empty for the rest.
func EventID(chatID uuid.UUID, turn int64, e Event, suffix string) string {
	id := chatID.String() + ":" + strconv.FormatInt(turn, 10) + ":" + string(e)
	if suffix != "" {
		id += ":" + suffix
	}
	return id
}

// Response is a consumer's answer. An empty body is an empty Response: no
// effect.
type Response struct {
	// ModelContext is added to the conversation for the model only.
	ModelContext string `json:"model_context,omitempty"`
	// UserContext is added to the conversation where people see it.
	UserContext string `json:"user_context,omitempty"`
	// Decision is "allow", "deny" or empty (allow), on user_prompt_submit
	// and pre_tool_use only.
	Decision string `json:"decision,omitempty"`
	// Reason explains a decision (user_prompt_submit and pre_tool_use
	// only); a denied tool call's result says "denied: <reason>".
	Reason string `json:"reason,omitempty"`
	// UpdatedPrompt replaces the prompt's text (user_prompt_submit only).
	UpdatedPrompt *string `json:"updated_prompt,omitempty"`
	// UpdatedInput replaces the tool's input, a JSON object (pre_tool_use
	// only).
	UpdatedInput json.RawMessage `json:"updated_input,omitempty"`
}

// Denied reports whether the consumer denied the prompt or tool call.
func (r Response) Denied() bool { return r.Decision == DecisionDeny }

// Sentinel conditions of a failed dispatch; *Error wraps one.
var (
	// ErrUnreachable: the consumer could not be reached, timed out or
	// answered with a non-2xx status.
	ErrUnreachable = errors.New("consumer unreachable")
	// ErrInvalidResponse: the consumer's answer is not a valid response
	// for the event.
	ErrInvalidResponse = errors.New("invalid response")
)

// Error is a failed dispatch; its message names the hook.
type Error struct {
	Event Event
	Err   error
}

func (e *Error) Error() string { return fmt.Sprintf("lifecycle hook %s: %v", e.Event, e.Err) }

// Unwrap returns the cause (it wraps ErrUnreachable or ErrInvalidResponse).
func (e *Error) Unwrap() error { return e.Err }

// Config configures a Dispatcher.
type Config struct {
	// URL is the consumer's endpoint.
	URL string
	// Secret signs the requests: a Standard Webhooks secret, base64 with an
	// optional "whsec_" prefix.
	Secret string
	// MaxConcurrent caps concurrent dispatches of this replica.
	MaxConcurrent int
	// Reserved is the share of MaxConcurrent only admitted work may use
	// (half of it, at least one, when zero).
	Reserved int
	// Timeout bounds one dispatch.
	Timeout time.Duration
	// Client sends the requests (http.DefaultClient when nil).
	Client *http.Client
	// Clock stamps webhook-timestamp (clock.Real when nil).
	Clock clock.Clock
	// Secrets learns Secret and masks every secret chatd knows out of a
	// failed dispatch's error and a decision's reason (nil: nothing).
	Secrets *redact.Secrets
}

// Dispatcher sends events to the consumer. A nil *Dispatcher has hooks
// off: Dispatch answers an empty Response at once.
type Dispatcher struct {
	cfg     Config
	signer  *standardwebhooks.Webhook
	all     chan struct{} // one token per dispatch in flight
	admit   chan struct{} // one token per admission dispatch in flight
	waiting atomic.Int64
}

// New returns a Dispatcher for cfg, or an error naming the bad setting.
func New(cfg Config) (*Dispatcher, error) {
	if cfg.URL == "" {
		return nil, errors.New("hooks: a consumer URL is required")
	}
	if cfg.Secret == "" {
		return nil, errors.New("hooks: a signing secret is required")
	}
	signer, err := standardwebhooks.NewWebhook(cfg.Secret)
	if err != nil {
		return nil, fmt.Errorf("hooks: the signing secret must be base64 (optionally prefixed whsec_): %w", err)
	}
	if cfg.MaxConcurrent == 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	if cfg.Reserved == 0 {
		cfg.Reserved = max(cfg.MaxConcurrent/2, 1)
	}
	if cfg.MaxConcurrent < 2 || cfg.Reserved < 1 || cfg.Reserved >= cfg.MaxConcurrent {
		return nil, fmt.Errorf("hooks: need 1 <= reserved (%d) < max concurrent (%d)", cfg.Reserved, cfg.MaxConcurrent)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Client == nil {
		cfg.Client = http.DefaultClient
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	cfg.Secrets.Set("hooks", redact.LabelSecret, cfg.Secret, strings.TrimPrefix(cfg.Secret, "whsec_"))
	return &Dispatcher{
		cfg: cfg, signer: signer,
		all:   make(chan struct{}, cfg.MaxConcurrent),
		admit: make(chan struct{}, cfg.MaxConcurrent-cfg.Reserved),
	}, nil
}

// Enabled reports whether hooks are on.
func (d *Dispatcher) Enabled() bool { return d != nil }

// Waiting counts the dispatches blocked on the concurrency cap.
func (d *Dispatcher) Waiting() int { return int(d.waiting.Load()) }

// Dispatch sends req (its ID is filled from its fields when empty) and
// returns the consumer's validated response. It waits for a slot of the
// cap for class. Any failure is an *Error naming the event: the caller
// must stop the triggering operation (fail closed).
func (d *Dispatcher) Dispatch(ctx context.Context, class Class, req Request) (Response, error) {
	if d == nil {
		return Response{}, nil
	}
	if req.ID == "" {
		suffix := req.ToolCallID
		if suffix == "" {
			suffix = req.SubmissionID
		}
		req.ID = EventID(req.ChatID, req.Turn, req.Event, suffix)
	}
	release, err := d.acquire(ctx, class)
	if err != nil {
		return Response{}, &Error{Event: req.Event, Err: fmt.Errorf("wait for a dispatch slot: %w", err)}
	}
	defer release()
	resp, err := d.send(ctx, req)
	if err != nil {
		return Response{}, &Error{Event: req.Event, Err: d.cfg.Secrets.Error(err)}
	}
	resp.Reason = d.cfg.Secrets.Text(resp.Reason)
	return resp, nil
}

// acquire takes a slot: admission dispatches first take one of the
// admission share, so they never hold the reserved part of the cap.
func (d *Dispatcher) acquire(ctx context.Context, class Class) (release func(), err error) {
	d.waiting.Add(1)
	defer d.waiting.Add(-1)
	if class == Admission {
		select {
		case d.admit <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	select {
	case d.all <- struct{}{}:
	case <-ctx.Done():
		if class == Admission {
			<-d.admit
		}
		return nil, ctx.Err()
	}
	return func() {
		<-d.all
		if class == Admission {
			<-d.admit
		}
	}, nil
}

func (d *Dispatcher) send(ctx context.Context, req Request) (Response, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return Response{}, fmt.Errorf("encode event: %w", err)
	}
	now := d.cfg.Clock.Now()
	signature, err := d.signer.Sign(req.ID, now, body)
	if err != nil {
		return Response{}, fmt.Errorf("sign event: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, d.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return Response{}, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set(standardwebhooks.HeaderWebhookID, req.ID)
	hreq.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
	hreq.Header.Set(standardwebhooks.HeaderWebhookSignature, signature)
	res, err := d.cfg.Client.Do(hreq)
	if err != nil {
		return Response{}, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, MaxResponseBytes+1))
	if err != nil {
		return Response{}, fmt.Errorf("%w: read the answer: %w", ErrUnreachable, err)
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return Response{}, fmt.Errorf("%w: status %d", ErrUnreachable, res.StatusCode)
	}
	if len(raw) > MaxResponseBytes {
		return Response{}, fmt.Errorf("%w: longer than %d bytes", ErrInvalidResponse, MaxResponseBytes)
	}
	return parseResponse(req.Event, raw)
}

// parseResponse decodes and validates an answer for event e.
func parseResponse(e Event, raw []byte) (Response, error) {
	var r Response
	if len(bytes.TrimSpace(raw)) == 0 {
		return r, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Response{}, fmt.Errorf("%w: %w", ErrInvalidResponse, err)
	}
	if dec.More() {
		return Response{}, fmt.Errorf("%w: trailing data after the JSON object", ErrInvalidResponse)
	}
	decides := e == UserPromptSubmit || e == PreToolUse
	switch r.Decision {
	case "", DecisionAllow, DecisionDeny:
	default:
		return Response{}, fmt.Errorf("%w: decision must be %q or %q, got %q", ErrInvalidResponse, DecisionAllow, DecisionDeny, r.Decision)
	}
	switch {
	case r.Decision != "" && !decides:
		return Response{}, fmt.Errorf("%w: %s does not accept a decision", ErrInvalidResponse, e)
	case r.Reason != "" && !decides:
		return Response{}, fmt.Errorf("%w: %s does not accept a reason (it takes no decision)", ErrInvalidResponse, e)
	case r.UpdatedPrompt != nil && e != UserPromptSubmit:
		return Response{}, fmt.Errorf("%w: %s does not accept updated_prompt", ErrInvalidResponse, e)
	case len(r.UpdatedInput) > 0 && e != PreToolUse:
		return Response{}, fmt.Errorf("%w: %s does not accept updated_input", ErrInvalidResponse, e)
	case len(r.UpdatedInput) > 0 && !isObject(r.UpdatedInput):
		return Response{}, fmt.Errorf("%w: updated_input must be a JSON object", ErrInvalidResponse)
	case r.Denied() && (r.UpdatedPrompt != nil || len(r.UpdatedInput) > 0):
		return Response{}, fmt.Errorf("%w: a denial cannot also override the input", ErrInvalidResponse)
	}
	return r, nil
}

func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}
