package sdk

import (
	"encoding/json"
	"errors"
	"time"
)

// Error codes of the MCP server admin API.
const (
	// CodeMCPServerExists: POST /chats/mcp-servers with a name in use.
	CodeMCPServerExists = "MCP_SERVER_EXISTS"
	// CodeMCPServerInConfigFile: DELETE of a server the MCP config file
	// still names (it would be seeded again at the next start); disable it
	// or remove it from the file first.
	CodeMCPServerInConfigFile = "MCP_SERVER_IN_CONFIG_FILE"
)

// Where a stored MCP server came from.
const (
	MCPSourceDatabase   = "database"
	MCPSourceConfigFile = "config_file"
)

// MCPServerConfig is an MCP server's stored settings, shown to admins
// only. The values of env and headers are write-only: only their names
// are shown (EnvKeys, HeaderKeys).
type MCPServerConfig struct {
	// Source is database (created through the API) or config_file
	// (seeded from CHATD_MCP_CONFIG).
	Source  string `json:"source"`
	Enabled bool   `json:"enabled"`
	// Command and Args start a stdio server; URL reaches an HTTP one.
	Command    string            `json:"command,omitempty"`
	Args       []string          `json:"args"`
	EnvKeys    []string          `json:"env_keys"`
	URL        string            `json:"url,omitempty"`
	HeaderKeys []string          `json:"header_keys"`
	Tools      MCPToolFilter     `json:"tools"`
	Effects    map[string]string `json:"effects"`
	Approval   string            `json:"approval"`
	Approvals  map[string]string `json:"approvals"`
	// Timeout bounds one tools/call, a Go duration such as "60s".
	Timeout string `json:"timeout"`
	// Access is who may use the server's tools, in force now.
	// AccessDefault: the config gave none, so it follows the default
	// (admins only for a server with env or headers, else all users).
	Access        MCPAccess `json:"access"`
	AccessDefault bool      `json:"access_default"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
	// OAuth is the server's OAuth client registration (null: dynamic
	// client registration only).
	OAuth *MCPOAuthConfig `json:"oauth"`
}

// MCPServerRequest is the body of POST /chats/mcp-servers and PATCH
// /chats/mcp-servers/{id}: name and enabled, then the fields of an entry of
// the MCP config file. On PATCH every field is optional and a field given
// as null returns to its default; in env and headers a value given as null
// keeps that name's stored value (the values are never shown), and a name
// left out is removed.
type MCPServerRequest struct {
	Name      string             `json:"name,omitempty"`
	Enabled   *bool              `json:"enabled,omitempty"`
	Command   string             `json:"command,omitempty"`
	Args      []string           `json:"args,omitempty"`
	Env       map[string]*string `json:"env,omitempty"`
	URL       string             `json:"url,omitempty"`
	Headers   map[string]*string `json:"headers,omitempty"`
	Tools     *MCPToolFilter     `json:"tools,omitempty"`
	Effects   map[string]string  `json:"effects,omitempty"`
	Approval  string             `json:"approval,omitempty"`
	Approvals map[string]string  `json:"approvals,omitempty"`
	// Timeout bounds one tools/call, a Go duration such as "60s".
	Timeout string `json:"timeout,omitempty"`
	// Access is who may use the server's tools (nil: unchanged on PATCH,
	// the default on POST).
	Access *MCPAccess `json:"access,omitempty"`
	// OAuth is the server's OAuth client registration (a URL server).
	OAuth *MCPOAuthRequest `json:"oauth,omitempty"`
}

// Who may use an MCP server's tools (MCPAccess.Mode).
const (
	MCPAccessAll    = "all"
	MCPAccessAdmins = "admins"
	MCPAccessUsers  = "users"
)

// MCPAccess is who may use an MCP server's tools. On the wire it is the
// string "all" or "admins", or an array of usernames: those users and
// every admin.
type MCPAccess struct {
	// Mode is MCPAccessAll, MCPAccessAdmins or MCPAccessUsers.
	Mode string
	// Users are MCPAccessUsers' usernames.
	Users []string
}

// MarshalJSON writes the wire form.
func (a MCPAccess) MarshalJSON() ([]byte, error) {
	if a.Mode == MCPAccessUsers {
		if a.Users == nil {
			return []byte("[]"), nil
		}
		return json.Marshal(a.Users)
	}
	return json.Marshal(a.Mode)
}

// UnmarshalJSON reads the wire form; the server checks the values.
func (a *MCPAccess) UnmarshalJSON(data []byte) error {
	var mode string
	if json.Unmarshal(data, &mode) == nil {
		*a = MCPAccess{Mode: mode}
		return nil
	}
	var users []string
	if err := json.Unmarshal(data, &users); err != nil {
		return errors.New(`MCP access: want "all", "admins" or an array of usernames`)
	}
	*a = MCPAccess{Mode: MCPAccessUsers, Users: users}
	return nil
}

// MCPToolFilter keeps only Include's tools (when not empty), then drops
// Exclude's.
type MCPToolFilter struct {
	Include []string `json:"include"`
	Exclude []string `json:"exclude"`
}

// MCPServerTest is the answer of POST /chats/mcp-servers/{id}/test: a
// fresh connection with the stored settings, its tools, or why it failed.
type MCPServerTest struct {
	OK        bool      `json:"ok"`
	Transport string    `json:"transport,omitempty"`
	Error     *string   `json:"error"`
	Tools     []MCPTool `json:"tools"`
}
