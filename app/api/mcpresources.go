package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
)

// MCPCatalog reads the MCP servers' resources and prompts
// (app/mcp.Manager), live on every call, under the servers' access rules:
// a server u may not use is ErrMCPServerNotFound. Its errors that are the
// caller's or the server's fault are *MCPAdminError of the kinds below.
type MCPCatalog interface {
	Resources(ctx context.Context, u tools.User, id uuid.UUID, cursor string) (sdk.MCPResourceList, error)
	ReadResource(ctx context.Context, u tools.User, id uuid.UUID, uri string) (sdk.MCPResourceRead, error)
	Prompts(ctx context.Context, u tools.User, id uuid.UUID, cursor string) (sdk.MCPPromptList, error)
	GetPrompt(ctx context.Context, u tools.User, id uuid.UUID, name string, args map[string]string) (sdk.MCPPromptResult, error)
}

// Kinds of MCPAdminError the catalog gives (besides ErrMCPServerNotFound).
var (
	ErrMCPServerUnavailable = errors.New("MCP server not connected")
	ErrMCPUnsupported       = errors.New("MCP server does not support this")
	ErrMCPItemNotFound      = errors.New("no such MCP resource or prompt")
	ErrMCPInvalidArguments  = errors.New("invalid MCP prompt arguments")
	ErrMCPInvalidCursor     = errors.New("invalid MCP list cursor")
	ErrMCPServerFailed      = errors.New("MCP server error")
)

func (s *Server) mcpCatalogRoutes(chat func(method, path string, h func(http.ResponseWriter, *http.Request, *caller) error)) {
	chat("GET", "/chats/mcp-servers/{id}/resources", s.listMCPResources)
	chat("GET", "/chats/mcp-servers/{id}/resources/read", s.readMCPResource)
	chat("GET", "/chats/mcp-servers/{id}/prompts", s.listMCPPrompts)
	// Rendering takes its arguments in a body: a POST, ending in a word so
	// that no POST shaped /chats/<word>/{id}/<word> can overlap the
	// /chats/{chat}/<word>/{id} routes in the mux.
	chat("POST", "/chats/mcp-servers/{id}/prompts/{name}/get", s.getMCPPrompt)
}

// mcpCatalogAnswer turns a catalog error into its HTTP answer.
func mcpCatalogAnswer(err error, field string) error {
	var ae *MCPAdminError
	if !errors.As(err, &ae) {
		return err
	}
	switch {
	case errors.Is(ae.Kind, ErrMCPServerNotFound):
		return newError(http.StatusNotFound, sdk.CodeNotFound, "MCP server not found.", ae.Detail)
	case errors.Is(ae.Kind, ErrMCPServerUnavailable):
		return newError(http.StatusConflict, sdk.CodeMCPServerUnavailable,
			"The MCP server is not connected; GET /api/v2/chats/mcp-servers shows its state.", ae.Detail)
	case errors.Is(ae.Kind, ErrMCPUnsupported):
		return newError(http.StatusConflict, sdk.CodeMCPUnsupported, "The MCP server does not offer this.", ae.Detail)
	case errors.Is(ae.Kind, ErrMCPItemNotFound):
		return newError(http.StatusNotFound, sdk.CodeNotFound, "The MCP server has no such resource or prompt.", ae.Detail)
	case errors.Is(ae.Kind, ErrMCPInvalidArguments):
		return validation(field, ae.Detail)
	case errors.Is(ae.Kind, ErrMCPInvalidCursor):
		return validation("cursor", ae.Detail)
	case errors.Is(ae.Kind, ErrMCPServerFailed):
		return newError(http.StatusBadGateway, sdk.CodeMCPServerError, "The MCP server failed the request.", ae.Detail)
	}
	return mcpAdminAnswer(err)
}

// mcpCatalogCall runs one catalog request: the path {id}, then do,
// answering its value with 200.
func (s *Server) mcpCatalogCall(w http.ResponseWriter, r *http.Request, field string, do func(MCPCatalog, uuid.UUID) (any, error)) error {
	id, err := mcpServerID(r)
	if err != nil {
		return err
	}
	if s.deps.MCPCatalog == nil {
		return newError(http.StatusNotFound, sdk.CodeNotFound, "MCP server not found.", "no MCP servers are configured")
	}
	out, err := do(s.deps.MCPCatalog, id)
	if err != nil {
		return mcpCatalogAnswer(err, field)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// listMCPResources answers GET /chats/mcp-servers/{id}/resources[?cursor=].
func (s *Server) listMCPResources(w http.ResponseWriter, r *http.Request, c *caller) error {
	cursor := r.URL.Query().Get("cursor")
	return s.mcpCatalogCall(w, r, "id", func(cat MCPCatalog, id uuid.UUID) (any, error) {
		return cat.Resources(r.Context(), c.toolUser(), id, cursor)
	})
}

// readMCPResource answers GET /chats/mcp-servers/{id}/resources/read?uri=.
func (s *Server) readMCPResource(w http.ResponseWriter, r *http.Request, c *caller) error {
	uri := r.URL.Query().Get("uri")
	if strings.TrimSpace(uri) == "" {
		return validation("uri", "the query parameter uri names the resource to read")
	}
	return s.mcpCatalogCall(w, r, "uri", func(cat MCPCatalog, id uuid.UUID) (any, error) {
		return cat.ReadResource(r.Context(), c.toolUser(), id, uri)
	})
}

// listMCPPrompts answers GET /chats/mcp-servers/{id}/prompts[?cursor=].
func (s *Server) listMCPPrompts(w http.ResponseWriter, r *http.Request, c *caller) error {
	cursor := r.URL.Query().Get("cursor")
	return s.mcpCatalogCall(w, r, "id", func(cat MCPCatalog, id uuid.UUID) (any, error) {
		return cat.Prompts(r.Context(), c.toolUser(), id, cursor)
	})
}

// getMCPPrompt answers POST /chats/mcp-servers/{id}/prompts/{name}/get
// {arguments}: the rendered prompt.
func (s *Server) getMCPPrompt(w http.ResponseWriter, r *http.Request, c *caller) error {
	var req sdk.MCPPromptGetRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	name := r.PathValue("name")
	return s.mcpCatalogCall(w, r, "arguments", func(cat MCPCatalog, id uuid.UUID) (any, error) {
		return cat.GetPrompt(r.Context(), c.toolUser(), id, name, req.Arguments)
	})
}

// resolveMCPResources replaces every mcp_resource part of content with
// the resource's contents, read from its server now and stored as the
// caller's files (one file part per content, named by its URI): the
// stored message then holds files, which reach the model as attachments
// and replay without the server. Other parts pass unchanged.
//
// A durable request (requestID) already claimed is answered from its
// claim, which the admission finds: its resources are not read again (the
// server may be gone; a 4xx would tell the client nothing happened), and
// each stands in as a text part naming it, never stored.
func (s *Server) resolveMCPResources(ctx context.Context, c *caller, requestID uuid.NullUUID, content []sdk.ChatMessagePart) ([]sdk.ChatMessagePart, error) {
	if !hasMCPResource(content) {
		return content, nil
	}
	if requestID.Valid {
		claimed, err := s.claimed(ctx, requestID.UUID) // admission.go
		if err != nil {
			return nil, err
		}
		if claimed {
			return mcpResourcePlaceholders(content), nil
		}
	}
	out := make([]sdk.ChatMessagePart, 0, len(content))
	for i, p := range content {
		if p.Type != sdk.PartMCPResource {
			out = append(out, p)
			continue
		}
		field := fmt.Sprintf("content[%d]", i)
		parts, err := s.resolveMCPResource(ctx, c, field, p)
		if err != nil {
			return nil, err
		}
		out = append(out, parts...)
	}
	return out, nil
}

// mcpResourcePlaceholders replaces content's mcp_resource parts with text
// parts naming them.
func mcpResourcePlaceholders(content []sdk.ChatMessagePart) []sdk.ChatMessagePart {
	out := make([]sdk.ChatMessagePart, 0, len(content))
	for _, p := range content {
		if p.Type == sdk.PartMCPResource {
			p = sdk.ChatMessagePart{Type: sdk.PartText, Text: "[MCP resource " + p.URI + "]"}
		}
		out = append(out, p)
	}
	return out
}

func hasMCPResource(content []sdk.ChatMessagePart) bool {
	for _, p := range content {
		if p.Type == sdk.PartMCPResource {
			return true
		}
	}
	return false
}

// resolveMCPResource reads one mcp_resource part's resource and stores
// its contents as files.
func (s *Server) resolveMCPResource(ctx context.Context, c *caller, field string, p sdk.ChatMessagePart) ([]sdk.ChatMessagePart, error) {
	switch {
	case p.ServerID == nil || *p.ServerID == uuid.Nil:
		return nil, validation(field+".server_id", "an mcp_resource part needs server_id (GET /api/v2/chats/mcp-servers lists them)")
	case strings.TrimSpace(p.URI) == "":
		return nil, validation(field+".uri", "an mcp_resource part needs uri (GET /api/v2/chats/mcp-servers/{id}/resources lists them)")
	case s.deps.Files == nil:
		return nil, validation(field, "file attachments are not enabled on this server, so MCP resources cannot be attached")
	case s.deps.MCPCatalog == nil:
		return nil, validation(field+".server_id", "no MCP servers are configured")
	}
	read, err := s.deps.MCPCatalog.ReadResource(ctx, c.toolUser(), *p.ServerID, p.URI)
	var ae *MCPAdminError
	switch {
	case errors.As(err, &ae) && errors.Is(ae.Kind, ErrMCPServerNotFound):
		return nil, validation(field+".server_id", fmt.Sprintf("no configured MCP server has id %s (GET /api/v2/chats/mcp-servers lists them)", *p.ServerID))
	case errors.As(err, &ae) && errors.Is(ae.Kind, ErrMCPItemNotFound):
		// Not a 404: the route exists, the part names what does not.
		return nil, validation(field+".uri", ae.Detail)
	}
	if err != nil {
		return nil, mcpCatalogAnswer(err, field+".uri")
	}
	if len(read.Contents) == 0 {
		return nil, validation(field+".uri", fmt.Sprintf("the resource %s has no contents", p.URI))
	}
	out := make([]sdk.ChatMessagePart, 0, len(read.Contents))
	for _, rc := range read.Contents {
		name := rc.URI
		if name == "" {
			name = p.URI
		}
		name = resourceFileName(name)
		content, declared := rc.Blob, rc.MIMEType
		if rc.Blob == nil {
			content = []byte(rc.Text)
			if declared == "" {
				declared = "text/plain"
			}
		}
		f, err := s.deps.Files.Upload(ctx, c.user.ID, name, declared, content)
		if err != nil {
			return nil, fileError(err)
		}
		id := f.ID
		out = append(out, sdk.ChatMessagePart{Type: sdk.PartFile, FileID: &id, Name: f.Name})
	}
	return out, nil
}

// resourceFileName is the file name of a resource's contents: the last
// segment of its URI's path, unescaped ("demo://docs/a%20b.md" gives
// "a b.md"), else the whole URI.
func resourceFileName(uri string) string {
	path := uri
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	path = strings.TrimRight(path, "/")
	last := path[strings.LastIndex(path, "/")+1:]
	if u, err := url.PathUnescape(last); err == nil {
		last = u
	}
	if strings.TrimSpace(last) == "" || strings.ContainsAny(last, `/\`) {
		return uri
	}
	return last
}
