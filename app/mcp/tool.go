package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/store"
)

// emptySchema stands in for a tool without an input schema.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// Tool is one tool of an MCP server, as chatd offers it to the model.
type Tool struct {
	m                    *Manager
	server               *server
	name, mcpName, desc  string
	schema               json.RawMessage
	effect, effectSource string
}

// Name is SERVER__TOOL, valid for every provider.
func (t *Tool) Name() string { return t.name }

// MCPName is the server's own name for the tool.
func (t *Tool) MCPName() string { return t.mcpName }

// ServerName is the configured name of the tool's server.
func (t *Tool) ServerName() string { return t.server.cfg.Name }

// ServerID is the id of the tool's server.
func (t *Tool) ServerID() uuid.UUID { return t.server.cfg.ID }

// Description is the server's description, unchanged.
func (t *Tool) Description() string { return t.desc }

// Schema is the server's input schema, unchanged.
func (t *Tool) Schema() json.RawMessage { return t.schema }

// Effect is the tool's effect class (store.EffectPure, ...).
func (t *Tool) Effect() string { return t.effect }

// Approval is the tool's approval policy from the MCP config
// (store.ApprovalNever, ApprovalEffectful or ApprovalAlways): the tool's
// "approvals" entry, else its server's "approval", else never.
func (t *Tool) Approval() string { return t.server.cfg.ApprovalOf(t.mcpName) }

// EffectSource says where Effect came from: sdk.MCPEffectSourceConfig,
// MCPEffectSourceAnnotation or MCPEffectSourceDefault.
func (t *Tool) EffectSource() string { return t.effectSource }

// Run calls the tool (tools/call with the server's own name), bounded by
// the server's timeout. A timeout or a cancelled ctx sends MCP
// cancellation (notifications/cancelled, done by the go-sdk) and returns
// an error. A result with isError set returns a *ToolError. Errors come
// out with every secret chatd knows masked (the server's env and header
// values too): the worker stores and shows them.
func (t *Tool) Run(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
	out, err := t.run(ctx, args)
	if err == nil {
		return out, nil
	}
	var te *ToolError
	if errors.As(err, &te) {
		return nil, &ToolError{Result: t.m.secrets.JSON(te.Result), msg: t.server.redact(te.msg)}
	}
	if clean := t.server.redact(err.Error()); clean != err.Error() {
		return nil, &maskedError{msg: clean, err: err}
	}
	return nil, err
}

// maskedError is an error whose text had secrets masked; errors.Is still
// sees the original chain, nothing unwraps to the original text.
type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string        { return e.msg }
func (e *maskedError) Is(target error) bool { return errors.Is(e.err, target) }

func (t *Tool) run(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
	var arguments any = map[string]any{}
	if trimmed := strings.TrimSpace(string(args)); trimmed != "" && trimmed != "null" {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(args, &obj); err != nil {
			return nil, errNotObject
		}
		arguments = json.RawMessage(args)
	}
	var c *session
	var err error
	if t.server.perUser() {
		// The chat owner's own connection; never another user's.
		call, _ := tools.CallFrom(ctx)
		c, err = t.m.userSession(ctx, t.server, call.OwnerID)
	} else {
		c, err = t.m.current(ctx, t.server)
	}
	if err != nil {
		return nil, err
	}
	if call, ok := tools.CallFrom(ctx); ok {
		defer t.server.calls.add(ctx, call)()
	}
	timeout := t.server.cfg.Timeout
	errTimeout := fmt.Errorf("MCP tool %s gave no result within %s; the call was cancelled", t.name, timeout)
	// The server's retirement (Apply) or Close cancels the call, which
	// sends MCP cancellation before the session closes.
	errGone := fmt.Errorf("MCP server %s was removed or changed during the call; the call was cancelled and may have run", t.server.cfg.Name)
	serverCtx, cancelServer := context.WithCancelCause(ctx)
	defer cancelServer(nil)
	stop := context.AfterFunc(t.server.ctx, func() { cancelServer(errGone) })
	defer stop()
	callCtx, cancel := context.WithTimeoutCause(serverCtx, timeout, errTimeout)
	defer cancel()
	res, err := c.cs.CallTool(callCtx, &mcp.CallToolParams{Name: t.mcpName, Arguments: arguments})
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return nil, fmt.Errorf("MCP tool %s interrupted; the call was cancelled: %w", t.name, ctx.Err())
	case t.m.ctx.Err() != nil:
		return nil, fmt.Errorf("MCP tool %s: chatd is shutting down; the call was cancelled and may have run: %w", t.name, err)
	case errors.Is(context.Cause(callCtx), errGone):
		return nil, errGone
	case errors.Is(context.Cause(callCtx), errTimeout):
		return nil, errTimeout
	default:
		return nil, fmt.Errorf("MCP tool %s: %w", t.name, err)
	}
	out, err := convertResult(res)
	if err != nil {
		return nil, fmt.Errorf("MCP tool %s: result: %w", t.name, err)
	}
	if res.IsError {
		return nil, &ToolError{Result: out, msg: errorText(res, out)}
	}
	return out, nil
}

// listTools fetches s's tools (every page) and turns them into Tools:
// filtered by include/exclude, named, with their effect classes.
func (m *Manager) listTools(ctx context.Context, s *server, cs *mcp.ClientSession) ([]*Tool, error) {
	var listed []*mcp.Tool
	served := map[string]bool{}
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		served[t.Name] = true
		if len(s.cfg.Include) > 0 && !slices.Contains(s.cfg.Include, t.Name) || slices.Contains(s.cfg.Exclude, t.Name) {
			continue
		}
		listed = append(listed, t)
	}
	m.warnUnknown(s, served)
	mcpNames := make([]string, len(listed))
	for i, t := range listed {
		mcpNames[i] = t.Name
	}
	names := toolNames(s.cfg.Name, mcpNames)
	out := make([]*Tool, 0, len(listed))
	for _, t := range listed {
		schema := emptySchema
		if t.InputSchema != nil {
			raw, err := json.Marshal(t.InputSchema)
			if err != nil {
				return nil, fmt.Errorf("tool %s: input schema: %w", t.Name, err)
			}
			schema = raw
		}
		tool := &Tool{m: m, server: s, name: names[t.Name], mcpName: t.Name, desc: t.Description, schema: schema}
		tool.effect, tool.effectSource = effectOf(s.cfg, t)
		out = append(out, tool)
	}
	slices.SortFunc(out, func(a, b *Tool) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// effectOf is a tool's effect class: the config's entry, else the
// server's annotations (hints: readOnlyHint -> pure, idempotentHint ->
// idempotent), else effectful.
func effectOf(cfg Server, t *mcp.Tool) (effect, source string) {
	if e, ok := cfg.Effects[t.Name]; ok {
		return e, sdk.MCPEffectSourceConfig
	}
	if a := t.Annotations; a != nil {
		switch {
		case a.ReadOnlyHint:
			return store.EffectPure, sdk.MCPEffectSourceAnnotation
		case a.IdempotentHint:
			return store.EffectIdempotent, sdk.MCPEffectSourceAnnotation
		}
	}
	return store.EffectEffectful, sdk.MCPEffectSourceDefault
}

// warnUnknown logs the config's tool names the server does not list: a
// typo in exclude would otherwise offer a tool silently.
func (m *Manager) warnUnknown(s *server, served map[string]bool) {
	var unknown []string
	for _, group := range [][]string{s.cfg.Include, s.cfg.Exclude, slices.Sorted(maps.Keys(s.cfg.Effects)), slices.Sorted(maps.Keys(s.cfg.Approvals))} {
		for _, name := range group {
			if !served[name] && !slices.Contains(unknown, name) {
				unknown = append(unknown, name)
			}
		}
	}
	if len(unknown) > 0 {
		m.log.Warn("MCP config names tools the server does not list (tools.include, tools.exclude, effects or approvals)",
			"mcp_server", s.cfg.Name, "tools", unknown)
	}
}
