package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
)

// listMCPServers answers GET /chats/mcp-servers: every configured MCP
// server with its state and tools (an empty list when none is configured).
// The wire type has no env, headers or args, so they cannot leak here.
func (s *Server) listMCPServers(w http.ResponseWriter, r *http.Request, c *caller) error {
	out := []sdk.MCPServer{}
	if s.deps.MCP != nil {
		if servers := s.deps.MCP.Status(r.Context()); servers != nil {
			out = servers
		}
	}
	for i := range out {
		if out[i].Tools == nil {
			out[i].Tools = []sdk.MCPTool{}
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// parseMCPServerIDs reads a body's mcp_server_ids. Absent or null is nil:
// every configured server. A list (an empty one: none) must name
// configured servers; a repeated id counts once (the first is kept, in
// order). Anything else is a 400 naming the entry.
func (s *Server) parseMCPServerIDs(raw json.RawMessage) ([]uuid.UUID, error) {
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
		if !s.deps.MCP.Has(id) {
			return nil, validation(entry, fmt.Sprintf("%s: no configured MCP server has id %s (GET /api/v2/chats/mcp-servers lists them)", entry, id))
		}
		seen[id] = true
		out = append(out, id)
	}
	return out, nil
}
