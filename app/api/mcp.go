package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
)

// listMCPServers answers GET /chats/mcp-servers: every configured MCP
// server the caller may use with its state and tools (an empty list when
// none is). A server restricted to others is not listed at all.
// The wire type has no env, headers or args, so they cannot leak here.
// An admin also sees each server's stored settings (config; never the
// values of env and headers).
func (s *Server) listMCPServers(w http.ResponseWriter, r *http.Request, c *caller) error {
	out := []sdk.MCPServer{}
	if s.deps.MCP != nil {
		if servers := s.deps.MCP.Status(r.Context(), c.toolUser()); servers != nil {
			out = servers
		}
	}
	var configs map[uuid.UUID]sdk.MCPServerConfig
	if c.user.Admin && s.deps.MCPAdmin != nil {
		var err error
		if configs, err = s.deps.MCPAdmin.Configs(r.Context()); err != nil {
			return err
		}
	}
	for i := range out {
		if out[i].Tools == nil {
			out[i].Tools = []sdk.MCPTool{}
		}
		out[i].Config = nil
		if cfg, ok := configs[out[i].ID]; ok {
			out[i].Config = &cfg
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// MCPAdmin manages the stored MCP servers (app/mcp.Servers). Its errors
// that are the caller's fault are *MCPAdminError.
type MCPAdmin interface {
	// Create stores a server from a body (name, enabled and the fields of
	// an MCP config file entry) and returns it with its config.
	Create(ctx context.Context, body []byte) (sdk.MCPServer, error)
	// Update changes the fields the body gives (null resets one).
	Update(ctx context.Context, id uuid.UUID, body []byte) (sdk.MCPServer, error)
	// Delete removes a server and disconnects it.
	Delete(ctx context.Context, id uuid.UUID) error
	// Test connects to a server afresh and lists its tools.
	Test(ctx context.Context, id uuid.UUID) (sdk.MCPServerTest, error)
	// Configs are the stored settings, by server id.
	Configs(ctx context.Context) (map[uuid.UUID]sdk.MCPServerConfig, error)
}

// Kinds of MCPAdminError.
var (
	ErrMCPServerInvalid      = errors.New("invalid MCP server")
	ErrMCPServerNotFound     = errors.New("MCP server not found")
	ErrMCPServerExists       = errors.New("MCP server exists")
	ErrMCPServerInConfigFile = errors.New("MCP server named by the config file")
)

// MCPAdminError is an MCPAdmin failure the API answers with a 4xx: Kind
// decides the answer, Detail explains it.
type MCPAdminError struct {
	Kind   error
	Detail string
}

func (e *MCPAdminError) Error() string { return e.Detail }

// Unwrap is the kind.
func (e *MCPAdminError) Unwrap() error { return e.Kind }

// mcpAdminAnswer turns an MCPAdminError into its HTTP answer.
func mcpAdminAnswer(err error) error {
	var ae *MCPAdminError
	if !errors.As(err, &ae) {
		return err
	}
	switch {
	case errors.Is(ae.Kind, ErrMCPServerInvalid):
		return validation("body", ae.Detail)
	case errors.Is(ae.Kind, ErrMCPServerNotFound):
		return newError(http.StatusNotFound, sdk.CodeNotFound, "MCP server not found.", ae.Detail)
	case errors.Is(ae.Kind, ErrMCPServerExists):
		return newError(http.StatusConflict, sdk.CodeMCPServerExists, "An MCP server with this name exists.", ae.Detail)
	case errors.Is(ae.Kind, ErrMCPServerInConfigFile):
		return newError(http.StatusConflict, sdk.CodeMCPServerInConfigFile,
			"The MCP config file names this server; disable it, or remove it from the file first.", ae.Detail)
	}
	return err
}

// mcpAdmin checks that the caller may manage MCP servers.
func (s *Server) mcpAdmin(c *caller) (MCPAdmin, error) {
	if !c.user.Admin {
		return nil, errAdminOnly
	}
	if s.deps.MCPAdmin == nil {
		return nil, errNotFoundRoute
	}
	return s.deps.MCPAdmin, nil
}

// mcpServerID reads the {id} of an MCP server route.
func mcpServerID(r *http.Request) (uuid.UUID, error) {
	return pathUUID(r, "id")
}

// mcpAdminCall runs one MCP server admin request: the admin check, the
// path {id} when withID, then do. It answers do's value with status, or
// 204 without a body when do returns nil.
func (s *Server) mcpAdminCall(w http.ResponseWriter, r *http.Request, c *caller, withID bool, status int,
	do func(admin MCPAdmin, id uuid.UUID) (any, error)) error {
	admin, err := s.mcpAdmin(c)
	if err != nil {
		return err
	}
	var id uuid.UUID
	if withID {
		if id, err = mcpServerID(r); err != nil {
			return err
		}
	}
	out, err := do(admin, id)
	if err != nil {
		return mcpAdminAnswer(err)
	}
	if out == nil {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	writeJSON(w, status, out)
	return nil
}

// createMCPServer answers POST /chats/mcp-servers (admins).
func (s *Server) createMCPServer(w http.ResponseWriter, r *http.Request, c *caller) error {
	return s.mcpAdminCall(w, r, c, false, http.StatusCreated, func(admin MCPAdmin, _ uuid.UUID) (any, error) {
		return withBody(r, func(body json.RawMessage) (sdk.MCPServer, error) { return admin.Create(r.Context(), body) })
	})
}

// patchMCPServer answers PATCH /chats/mcp-servers/{id} (admins).
func (s *Server) patchMCPServer(w http.ResponseWriter, r *http.Request, c *caller) error {
	return s.mcpAdminCall(w, r, c, true, http.StatusOK, func(admin MCPAdmin, id uuid.UUID) (any, error) {
		return withBody(r, func(body json.RawMessage) (sdk.MCPServer, error) { return admin.Update(r.Context(), id, body) })
	})
}

// deleteMCPServer answers DELETE /chats/mcp-servers/{id} (admins).
func (s *Server) deleteMCPServer(w http.ResponseWriter, r *http.Request, c *caller) error {
	return s.mcpAdminCall(w, r, c, true, 0, func(admin MCPAdmin, id uuid.UUID) (any, error) {
		return nil, admin.Delete(r.Context(), id)
	})
}

// testMCPServer answers POST /chats/mcp-servers/{id}/test (admins): 200
// whether or not the server answered; ok and error say which.
func (s *Server) testMCPServer(w http.ResponseWriter, r *http.Request, c *caller) error {
	return s.mcpAdminCall(w, r, c, true, http.StatusOK, func(admin MCPAdmin, id uuid.UUID) (any, error) {
		return admin.Test(r.Context(), id)
	})
}

// toolUser is the caller as the MCP servers' access rules see them.
func (c *caller) toolUser() tools.User {
	return tools.User{ID: c.user.ID, Name: c.user.Name, Admin: c.user.Admin}
}

// parseMCPServerIDs reads a body's mcp_server_ids. Absent or null is nil:
// every configured server (the worker offers only those the chat's owner
// may use). A list (an empty one: none) must name configured servers the
// caller may use (one restricted to others answers like an unknown id);
// a repeated id counts once (the first is kept, in order). Anything else
// is a 400 naming the entry.
func (s *Server) parseMCPServerIDs(raw json.RawMessage, c *caller) ([]uuid.UUID, error) {
	const field = "mcp_server_ids"
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, validation(field, "mcp_server_ids must be null or an array of MCP server ids")
	}
	out := make([]uuid.UUID, 0, len(items))
	seen := map[uuid.UUID]bool{}
	for i, item := range items {
		entry := fmt.Sprintf("%s[%d]", field, i)
		var text string
		if err := json.Unmarshal(item, &text); err != nil || string(item) == "null" {
			return nil, validation(entry, fmt.Sprintf("%s must be a UUID string, got %s", entry, item))
		}
		id, err := uuid.Parse(text)
		if err != nil {
			return nil, validation(entry, fmt.Sprintf("%s: %q is not a valid UUID", entry, text))
		}
		if seen[id] {
			continue
		}
		if s.deps.MCP == nil {
			return nil, validation(entry, fmt.Sprintf("%s: no MCP servers are configured, so no server has id %s", entry, id))
		}
		if !s.deps.MCP.Allows(id, c.toolUser()) {
			return nil, validation(entry, fmt.Sprintf("%s: no configured MCP server has id %s (GET /api/v2/chats/mcp-servers lists them)", entry, id))
		}
		seen[id] = true
		out = append(out, id)
	}
	return out, nil
}
