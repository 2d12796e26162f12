package mcp

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
)

// Errors of the resource and prompt calls (besides ErrNotFound: no
// configured server with the id that the user may use).
var (
	// ErrUnavailable: the server is disabled, failed or not connected.
	ErrUnavailable = errors.New("MCP server not connected")
	// ErrUnsupported: the server does not offer resources, or prompts.
	ErrUnsupported = errors.New("MCP server does not support this")
	// ErrItemNotFound: the server has no such resource or prompt.
	ErrItemNotFound = errors.New("no such resource or prompt")
	// ErrInvalidArguments: a prompt's arguments are missing or unknown,
	// or the server refused them.
	ErrInvalidArguments = errors.New("invalid prompt arguments")
	// ErrInvalidCursor: the server refused a list's cursor.
	ErrInvalidCursor = errors.New("invalid cursor")
	// ErrServerError: the server failed the request, or gave no answer
	// in time.
	ErrServerError = errors.New("MCP server error")
)

// Resources, prompts and their reads are fetched from the server on every
// call, never cached: a list_changed notification therefore needs no
// handling, the next call sees the change.

// live is the connected session of server id for u, waiting while it
// connects (at most the connect timeout).
func (m *Manager) live(ctx context.Context, u tools.User, id uuid.UUID) (*server, *session, error) {
	m.cfgMu.RLock()
	s, ok := m.byID[id]
	m.cfgMu.RUnlock()
	if !ok || !s.allows(u) {
		return nil, nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if s.cfg.Disabled {
		return nil, nil, fmt.Errorf("%w: MCP server %s is disabled", ErrUnavailable, s.cfg.Name)
	}
	var c *session
	var err error
	if s.perUser() {
		c, err = m.userSession(ctx, s, u.ID) // the caller's own connection
	} else {
		c, err = m.current(ctx, s)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, fmt.Errorf("%w: %s", ErrUnavailable, s.redact(err.Error()))
	}
	return s, c, nil
}

// capable checks that c's server announced the capability has reports.
func capable(s *server, c *session, what string, has func(*mcp.ServerCapabilities) bool) error {
	init := c.cs.InitializeResult()
	if init == nil || init.Capabilities == nil || !has(init.Capabilities) {
		return fmt.Errorf("%w: MCP server %s offers no %s", ErrUnsupported, s.cfg.Name, what)
	}
	return nil
}

// request bounds one request to s: the server's timeout, while ctx lasts
// and the server is configured.
func (m *Manager) request(ctx context.Context, s *server) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeoutCause(ctx, s.cfg.Timeout, fmt.Errorf("MCP server %s gave no answer within %s", s.cfg.Name, s.cfg.Timeout))
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// callError classifies an error of a request to s: invalid is the kind a
// JSON-RPC invalid params (or the old resource-not-found code) means.
func callError(ctx context.Context, s *server, method string, err error, invalid error) error {
	if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
		err = cause
	}
	msg := s.redact(err.Error())
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		switch we.Code {
		case jsonrpc.CodeMethodNotFound:
			return fmt.Errorf("%w: MCP server %s: %s: %s", ErrUnsupported, s.cfg.Name, method, msg)
		case jsonrpc.CodeInvalidParams, -32002:
			return fmt.Errorf("%w: MCP server %s: %s", invalid, s.cfg.Name, msg)
		}
	}
	return fmt.Errorf("%w: MCP server %s: %s: %s", ErrServerError, s.cfg.Name, method, msg)
}

// Resources lists one page of the resources of server id: the page
// after cursor ("" for the first), as the server pages them, with the
// server's cursor of the next page. The first page also carries every
// resource template (all their pages, at most sdk.MaxMCPListItems).
func (m *Manager) Resources(ctx context.Context, u tools.User, id uuid.UUID, cursor string) (sdk.MCPResourceList, error) {
	s, c, err := m.live(ctx, u, id)
	if err != nil {
		return sdk.MCPResourceList{}, err
	}
	if err := capable(s, c, "resources", func(c *mcp.ServerCapabilities) bool { return c.Resources != nil }); err != nil {
		return sdk.MCPResourceList{}, err
	}
	rctx, cancel := m.request(ctx, s)
	defer cancel()
	page, err := c.cs.ListResources(rctx, &mcp.ListResourcesParams{Cursor: cursor})
	if err != nil {
		return sdk.MCPResourceList{}, callError(rctx, s, "resources/list", err, ErrInvalidCursor)
	}
	out := sdk.MCPResourceList{Resources: []sdk.MCPResource{}, Templates: []sdk.MCPResourceTemplate{}, NextCursor: page.NextCursor}
	for _, r := range page.Resources {
		if r != nil {
			out.Resources = append(out.Resources, sdk.MCPResource{
				URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType, Size: r.Size,
			})
		}
	}
	if cursor != "" {
		return out, nil
	}
	for t, err := range c.cs.ResourceTemplates(rctx, nil) {
		if err != nil {
			var we *jsonrpc.Error
			if errors.As(err, &we) && we.Code == jsonrpc.CodeMethodNotFound {
				break // templates are optional
			}
			return sdk.MCPResourceList{}, callError(rctx, s, "resources/templates/list", err, ErrServerError)
		}
		if len(out.Templates) == sdk.MaxMCPListItems {
			out.TemplatesTruncated = true
			break
		}
		out.Templates = append(out.Templates, sdk.MCPResourceTemplate{
			URITemplate: t.URITemplate, Name: t.Name, Title: t.Title, Description: t.Description, MIMEType: t.MIMEType,
		})
	}
	return out, nil
}

// ReadResource reads the resource uri of server id.
func (m *Manager) ReadResource(ctx context.Context, u tools.User, id uuid.UUID, uri string) (sdk.MCPResourceRead, error) {
	s, c, err := m.live(ctx, u, id)
	if err != nil {
		return sdk.MCPResourceRead{}, err
	}
	if err := capable(s, c, "resources", func(c *mcp.ServerCapabilities) bool { return c.Resources != nil }); err != nil {
		return sdk.MCPResourceRead{}, err
	}
	rctx, cancel := m.request(ctx, s)
	defer cancel()
	res, err := c.cs.ReadResource(rctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return sdk.MCPResourceRead{}, callError(rctx, s, "resources/read", err, ErrItemNotFound)
	}
	out := sdk.MCPResourceRead{Contents: []sdk.MCPResourceContents{}}
	for _, rc := range res.Contents {
		if rc == nil {
			continue
		}
		out.Contents = append(out.Contents, sdk.MCPResourceContents{URI: rc.URI, MIMEType: rc.MIMEType, Text: rc.Text, Blob: rc.Blob})
	}
	return out, nil
}

// Prompts lists one page of the prompts of server id: the page after
// cursor ("" for the first), as the server pages them, with the server's
// cursor of the next page.
func (m *Manager) Prompts(ctx context.Context, u tools.User, id uuid.UUID, cursor string) (sdk.MCPPromptList, error) {
	s, c, err := m.live(ctx, u, id)
	if err != nil {
		return sdk.MCPPromptList{}, err
	}
	if err := capable(s, c, "prompts", func(c *mcp.ServerCapabilities) bool { return c.Prompts != nil }); err != nil {
		return sdk.MCPPromptList{}, err
	}
	rctx, cancel := m.request(ctx, s)
	defer cancel()
	page, err := c.cs.ListPrompts(rctx, &mcp.ListPromptsParams{Cursor: cursor})
	if err != nil {
		return sdk.MCPPromptList{}, callError(rctx, s, "prompts/list", err, ErrInvalidCursor)
	}
	out := sdk.MCPPromptList{Prompts: []sdk.MCPPrompt{}, NextCursor: page.NextCursor}
	for _, p := range page.Prompts {
		if p != nil {
			out.Prompts = append(out.Prompts, promptOf(p))
		}
	}
	return out, nil
}

// prompt finds the prompt name of c's server, looking through every page.
func (m *Manager) prompt(ctx context.Context, s *server, c *session, name string) (sdk.MCPPrompt, error) {
	if err := capable(s, c, "prompts", func(c *mcp.ServerCapabilities) bool { return c.Prompts != nil }); err != nil {
		return sdk.MCPPrompt{}, err
	}
	rctx, cancel := m.request(ctx, s)
	defer cancel()
	for p, err := range c.cs.Prompts(rctx, nil) {
		if err != nil {
			return sdk.MCPPrompt{}, callError(rctx, s, "prompts/list", err, ErrServerError)
		}
		if p != nil && p.Name == name {
			return promptOf(p), nil
		}
	}
	return sdk.MCPPrompt{}, fmt.Errorf("%w: MCP server %s has no prompt %q", ErrItemNotFound, s.cfg.Name, name)
}

// promptOf is p on the wire.
func promptOf(p *mcp.Prompt) sdk.MCPPrompt {
	args := []sdk.MCPPromptArgument{}
	for _, a := range p.Arguments {
		if a != nil {
			args = append(args, sdk.MCPPromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
		}
	}
	return sdk.MCPPrompt{Name: p.Name, Title: p.Title, Description: p.Description, Arguments: args}
}

// GetPrompt renders the prompt name of server id with args, which must
// give every required argument and no unknown one (checked against the
// server's list before the server is asked).
func (m *Manager) GetPrompt(ctx context.Context, u tools.User, id uuid.UUID, name string, args map[string]string) (sdk.MCPPromptResult, error) {
	s, c, err := m.live(ctx, u, id)
	if err != nil {
		return sdk.MCPPromptResult{}, err
	}
	p, err := m.prompt(ctx, s, c, name)
	if err != nil {
		return sdk.MCPPromptResult{}, err
	}
	if err := checkPromptArgs(p, args); err != nil {
		return sdk.MCPPromptResult{}, err
	}
	rctx, cancel := m.request(ctx, s)
	defer cancel()
	res, err := c.cs.GetPrompt(rctx, &mcp.GetPromptParams{Name: name, Arguments: args})
	if err != nil {
		return sdk.MCPPromptResult{}, callError(rctx, s, "prompts/get", err, ErrInvalidArguments)
	}
	out := sdk.MCPPromptResult{Description: res.Description, Messages: []sdk.MCPPromptMessage{}}
	for _, msg := range res.Messages {
		if msg == nil {
			continue
		}
		parts := []sdk.MCPContentPart{}
		if msg.Content != nil {
			parts = append(parts, contentPart(msg.Content))
		}
		out.Messages = append(out.Messages, sdk.MCPPromptMessage{Role: string(msg.Role), Content: parts})
	}
	return out, nil
}

// checkPromptArgs checks args against p's arguments.
func checkPromptArgs(p sdk.MCPPrompt, args map[string]string) error {
	var missing, unknown []string
	known := map[string]bool{}
	for _, a := range p.Arguments {
		known[a.Name] = true
		if a.Required && strings.TrimSpace(args[a.Name]) == "" {
			missing = append(missing, a.Name)
		}
	}
	for k := range args {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	switch {
	case len(missing) > 0:
		return fmt.Errorf("%w: prompt %q needs the argument(s) %s", ErrInvalidArguments, p.Name, strings.Join(missing, ", "))
	case len(unknown) > 0:
		return fmt.Errorf("%w: prompt %q has no argument(s) %s", ErrInvalidArguments, p.Name, strings.Join(unknown, ", "))
	}
	return nil
}

// contentPart is one MCP content block on the wire.
func contentPart(c mcp.Content) sdk.MCPContentPart {
	switch c := c.(type) {
	case *mcp.TextContent:
		return sdk.MCPContentPart{Type: "text", Text: c.Text}
	case *mcp.ImageContent:
		return sdk.MCPContentPart{Type: "image", MIMEType: c.MIMEType, Data: c.Data}
	case *mcp.AudioContent:
		return sdk.MCPContentPart{Type: "audio", MIMEType: c.MIMEType, Data: c.Data}
	case *mcp.ResourceLink:
		return sdk.MCPContentPart{Type: "resource_link", URI: c.URI, Name: c.Name, Title: c.Title, Description: c.Description, MIMEType: c.MIMEType}
	case *mcp.EmbeddedResource:
		p := sdk.MCPContentPart{Type: "resource"}
		if r := c.Resource; r != nil {
			p.URI, p.MIMEType, p.Text, p.Data = r.URI, r.MIMEType, r.Text, r.Blob
		}
		return p
	}
	return sdk.MCPContentPart{Type: "unknown"}
}
