package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chatd/chatd/app/tools"
)

// Elicitor puts a server's question (MCP elicitation) to the person of
// the chat whose tool call it came with, and waits for the answer.
type Elicitor interface {
	Elicit(ctx context.Context, q Elicitation) (ElicitationAnswer, error)
}

// Elicitation is one question of a server during a chat's tool call.
type Elicitation struct {
	ChatID     uuid.UUID
	ToolCallID string
	Server     string
	// Mode is "form" (Schema set) or "url" (URL set).
	Mode    string
	Message string
	Schema  json.RawMessage
	URL     string
}

// ElicitationAnswer is the person's answer: accept (with Content for a
// form), decline or cancel.
type ElicitationAnswer struct {
	Action  string
	Content map[string]any
}

// inflight are the chat tool calls running on one server, so a question
// the server asks can be put to the chat that made the call.
type inflight struct {
	mu    sync.Mutex
	calls map[*runningCall]struct{}
}

// runningCall is a chat's tool call and the context it runs in.
type runningCall struct {
	tools.Call
	ctx context.Context
}

// add records a running call and returns the function that forgets it.
func (f *inflight) add(ctx context.Context, c tools.Call) func() {
	p := &runningCall{Call: c, ctx: ctx}
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[*runningCall]struct{}{}
	}
	f.calls[p] = struct{}{}
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		delete(f.calls, p)
		f.mu.Unlock()
	}
}

// only returns the one chat call running on the server. A server shared
// by several chats that has several calls in flight does not say which
// of them a question belongs to (the protocol's requests carry no link to
// the tools/call they serve), so such a question is not asked.
func (f *inflight) only() (runningCall, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch len(f.calls) {
	case 0:
		return runningCall{}, fmt.Errorf("no chat tool call is running on the server")
	case 1:
		for c := range f.calls {
			return *c, nil
		}
	}
	return runningCall{}, fmt.Errorf("%d chat tool calls are running on the server; the question cannot be put to one chat", len(f.calls))
}

// elicitationHandler answers a server's elicitation/create through the
// Manager's Elicitor. The go-sdk validates a form's schema before and the
// accepted content after (and fills the schema's defaults, SEP-1034).
func (m *Manager) elicitationHandler(s *server) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		call, err := s.calls.only()
		if err != nil {
			m.log.Warn("MCP elicitation declined", "mcp_server", s.cfg.Name, "reason", err)
			return &mcp.ElicitResult{Action: "cancel"}, nil
		}
		q := Elicitation{
			ChatID: call.ChatID, ToolCallID: call.ToolCallID, Server: s.cfg.Name,
			Mode: req.Params.Mode, Message: req.Params.Message, URL: req.Params.URL,
		}
		if q.Mode == "" {
			q.Mode = "form"
			if q.URL != "" {
				q.Mode = "url"
			}
		}
		if req.Params.RequestedSchema != nil {
			if q.Schema, err = json.Marshal(req.Params.RequestedSchema); err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestedSchema: " + err.Error()}
			}
		}
		// The question lives as long as the call that asked it.
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(call.ctx, cancel)
		defer stop()
		a, err := m.elicitor.Elicit(ctx, q)
		if err != nil {
			return nil, err
		}
		return &mcp.ElicitResult{Action: a.Action, Content: a.Content}, nil
	}
}
