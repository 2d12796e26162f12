// Package tools is the registry of tools the worker runs itself. Each tool
// declares its effect class, which decides what happens when a crash or a
// takeover leaves a call started but not recorded as done: pure and
// idempotent calls run again; an effectful call never runs twice, and the
// chat stops for review instead.
package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// Tool is a server-side tool.
type Tool interface {
	Name() string
	Description() string
	// Schema is the JSON Schema of the arguments.
	Schema() json.RawMessage
	// Effect is store.EffectPure, EffectIdempotent or EffectEffectful.
	Effect() string
	// Run executes the call. An error becomes an error result for the model.
	Run(ctx context.Context, args json.RawMessage) (json.RawMessage, error)
}

// Source supplies tools that come and go at run time: the MCP servers'.
type Source interface {
	// Tools lists the tools a chat of owner may use now: only those of
	// servers owner may use. servers restricts the MCP servers further:
	// nil means every configured server, empty none. A server still
	// connecting may be waited for briefly (bounded by ctx); one that
	// failed is left out.
	Tools(ctx context.Context, owner User, servers []uuid.UUID) []Tool
}

// User is whom a chat's tools are for: its owner (a subagent's is its
// parent's). Admins may restrict a Source's tools to admins or to named
// users.
type User struct {
	ID    uuid.UUID
	Name  string
	Admin bool
}

// Registry holds the server's tools by name.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]Tool
}

// NewRegistry returns a registry with the given tools.
func NewRegistry(ts ...Tool) *Registry {
	r := &Registry{tools: map[string]Tool{}}
	for _, t := range ts {
		r.Add(t)
	}
	return r
}

// Add registers (or replaces) a tool.
func (r *Registry) Add(t Tool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tools[t.Name()] = t
}

// Get finds a tool by name.
func (r *Registry) Get(name string) (Tool, bool) {
	if r == nil {
		return nil, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tools[name]
	return t, ok
}

// List returns the tools sorted by name.
func (r *Registry) List() []Tool {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Tool, 0, len(r.tools))
	for _, t := range r.tools {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// Offered reports whether the model is told about the tool: a tool with a
// Deprecated method that says true still runs (so old history resolves)
// but is not offered.
func Offered(t Tool) bool {
	d, ok := t.(interface{ Deprecated() bool })
	return !ok || !d.Deprecated()
}

// Func adapts a function to a Tool.
type Func struct {
	ToolName, Desc, EffectClass string
	InputSchema                 json.RawMessage
	Fn                          func(ctx context.Context, args json.RawMessage) (json.RawMessage, error)
}

var _ Tool = (*Func)(nil)

// Name is the tool's name.
func (f *Func) Name() string { return f.ToolName }

// Description tells the model what the tool does.
func (f *Func) Description() string { return f.Desc }

// Effect is the tool's effect class.
func (f *Func) Effect() string { return f.EffectClass }

// Schema returns the input schema ({"type":"object"} when unset).
func (f *Func) Schema() json.RawMessage {
	if len(f.InputSchema) == 0 {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return f.InputSchema
}

// Run calls Fn.
func (f *Func) Run(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
	return f.Fn(ctx, args)
}

// DecodeArgs reads a built-in tool call's arguments into v: an empty input
// is {}, and an unknown field is refused, so a model's misspelt argument is
// an error it can fix rather than ignored.
func DecodeArgs(raw json.RawMessage, v any) error {
	if len(strings.TrimSpace(string(raw))) == 0 {
		raw = json.RawMessage(`{}`)
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid arguments: %w", err)
	}
	return nil
}

// Clock is the built-in pure tool "current_time".
func Clock(now func() time.Time) Tool {
	return &Func{
		ToolName: "current_time", EffectClass: store.EffectPure,
		Desc: "Returns the current date and time in UTC (RFC 3339).",
		Fn: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.Marshal(map[string]string{"utc": now().UTC().Format(time.RFC3339)})
		},
	}
}

// Webhook is the built-in effectful tool "send_webhook": it POSTs the
// model's JSON payload to a configured URL. It is the example of a side
// effect that must never run twice by accident.
func Webhook(url string, client *http.Client) Tool {
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	return &Func{
		ToolName: "send_webhook", EffectClass: store.EffectEffectful,
		Desc:        "Sends a JSON payload to the operator's webhook. This has real-world effects; call it once per request.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"payload":{"type":"object"}},"required":["payload"]}`),
		Fn: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(args)))
			if err != nil {
				return nil, err
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			if resp.StatusCode >= 300 {
				return nil, fmt.Errorf("webhook answered %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
			}
			return json.Marshal(map[string]any{"status": resp.StatusCode, "body": string(body)})
		},
	}
}

// Call describes the tool call a Run serves: which chat called, for which
// owner, on which model. The worker puts it on the context of every
// server-side call; the tools that act on the calling chat itself (the
// subagent tools) read it with CallFrom. Other tools ignore it.
type Call struct {
	// ChatID is the chat whose turn made the call.
	ChatID uuid.UUID
	// OwnerID owns that chat.
	OwnerID uuid.UUID
	// ToolCallID is the model's id of the call, unique within the chat.
	ToolCallID string
	// ModelConfigID and ReasoningEffort are what the calling turn runs on
	// (unset: the chat's default).
	ModelConfigID   uuid.NullUUID
	ReasoningEffort string
}

type callKey struct{}

// WithCall returns ctx carrying c.
func WithCall(ctx context.Context, c Call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// CallFrom returns the call ctx carries, if any.
func CallFrom(ctx context.Context) (Call, bool) {
	c, ok := ctx.Value(callKey{}).(Call)
	return c, ok
}
