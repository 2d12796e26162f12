// Package mcp connects chatd to Model Context Protocol servers and offers
// their tools to chats.
//
// The configuration is the mcpServers JSON file users already have for
// Claude Desktop, Cursor or VS Code (ParseConfig). A Manager connects each
// server lazily, once per process, shares it between every chat, keeps its
// tools/list cached (refreshed on notifications/tools/list_changed) and
// reconnects with backoff when it dies. Its tools are tools.Tool values
// named SERVER__TOOL, each with an effect class for the worker's journal.
package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/store"
)

// DefaultTimeout bounds one tools/call when a server sets no timeout.
const DefaultTimeout = 60 * time.Second

// namespace derives the servers' ids from their names (ServerID).
var namespace = uuid.MustParse("d59b39a0-6310-4bda-a293-102441916aa7")

// ServerID is the stable id of the server named name: the same name gives
// the same id on every replica and after every restart.
func ServerID(name string) uuid.UUID {
	return uuid.NewSHA1(namespace, []byte(name))
}

// Config is a parsed MCP configuration file.
type Config struct {
	// Servers are sorted by name.
	Servers []Server
}

// Server is one configured MCP server. Exactly one of Command (stdio) and
// URL (Streamable HTTP, falling back to HTTP+SSE) is set.
type Server struct {
	Name string
	ID   uuid.UUID
	// Command, Args and Env start a stdio server. Env is added to the
	// child's PATH, HOME, LANG and TMPDIR, taken literally.
	Command string
	Args    []string
	Env     map[string]string
	// URL and Headers reach an HTTP server.
	URL     string
	Headers map[string]string
	// Include, when not empty, keeps only these tools (the server's own
	// names); Exclude then drops these.
	Include, Exclude []string
	// Effects sets a tool's effect class (store.EffectPure, EffectIdempotent
	// or EffectEffectful), keyed by the server's own tool name.
	Effects map[string]string
	// Approval is the server's tool approval policy (store.ApprovalNever,
	// ApprovalEffectful or ApprovalAlways; never when unset): whether a
	// person approves a call before it runs.
	Approval string
	// Approvals overrides Approval for single tools, keyed by the server's
	// own tool name.
	Approvals map[string]string
	// Timeout bounds one tools/call (DefaultTimeout when unset).
	Timeout time.Duration
	// Disabled servers are listed but never connected.
	Disabled bool
	// Access says who may use the server's tools, as the config gave it:
	// AccessAll, AccessAdmins, AccessUsers (admins and the users named in
	// Users), or "" when not given (DefaultAccess applies; EffectiveAccess).
	Access string
	// Users are the usernames AccessUsers lets in, sorted.
	Users []string
	// OAuth is how chatd registers with a URL server's authorization
	// server when the server asks for authorization (401): nil uses
	// dynamic client registration only.
	OAuth *OAuth
}

// OAuth is a URL server's client registration for the MCP authorization
// flow. Registration is tried in this order: the Client ID Metadata
// Document URL, the pre-registered client, dynamic client registration.
type OAuth struct {
	ClientID     string `json:"client_id,omitempty"`
	ClientSecret string `json:"client_secret,omitempty"`
	// ClientMetadataURL is a Client ID Metadata Document's https URL (with
	// a path), used as the client id where the authorization server
	// supports it.
	ClientMetadataURL string `json:"client_metadata_url,omitempty"`
	// PerUser says the server's identity is each user's: every user
	// connects it for themselves (their own authorization and tokens),
	// and a chat's calls use its owner's connection only.
	PerUser bool `json:"per_user,omitempty"`
}

// Who may use a server's tools (Server.Access).
const (
	// AccessAll: every user.
	AccessAll = sdk.MCPAccessAll
	// AccessAdmins: admins only.
	AccessAdmins = sdk.MCPAccessAdmins
	// AccessUsers: admins and the users named in Server.Users.
	AccessUsers = sdk.MCPAccessUsers
)

// HasSecrets reports whether the server is given env or header values,
// which may carry an admin's credentials to whoever calls its tools.
func (s Server) HasSecrets() bool { return len(s.Env) > 0 || len(s.Headers) > 0 }

// DefaultAccess is the access of a server whose config gives none:
// admins only when it has env or header values, every user otherwise.
func (s Server) DefaultAccess() string {
	if s.HasSecrets() {
		return AccessAdmins
	}
	return AccessAll
}

// EffectiveAccess is the access in force: the given one, else
// DefaultAccess.
func (s Server) EffectiveAccess() string {
	if s.Access == "" {
		return s.DefaultAccess()
	}
	return s.Access
}

// Allows reports whether u may use the server's tools. Admins may use
// every server.
func (s Server) Allows(u tools.User) bool {
	switch {
	case u.Admin:
		return true
	case u.Name == "":
		return false // nobody in particular: only open to the named
	}
	switch s.EffectiveAccess() {
	case AccessAll:
		return true
	case AccessUsers:
		return slices.Contains(s.Users, u.Name)
	}
	return false
}

// ApprovalOf is the approval policy of the server's tool named mcpName (the
// server's own name): its approvals entry, else the server's policy.
func (s Server) ApprovalOf(mcpName string) string {
	if p, ok := s.Approvals[mcpName]; ok {
		return p
	}
	if s.Approval == "" {
		return store.ApprovalNever
	}
	return s.Approval
}

// Stdio reports whether the server is started as a child process.
func (s Server) Stdio() bool { return s.Command != "" }

// validName is the rule for server names. No underscore: the first "__" of
// a tool name then always ends the server's part.
var validName = regexp.MustCompile(`^[a-zA-Z0-9-]{1,32}$`)

// LoadConfig reads and parses the file at path.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("mcp config: %w", err)
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// ParseConfig parses an mcpServers JSON document. Unknown keys are
// ignored; an error names the server and the field at fault.
func ParseConfig(data []byte) (Config, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return Config{}, fmt.Errorf("mcp config: not a JSON object: %w", err)
	}
	raw, ok := top["mcpServers"]
	if !ok {
		return Config{}, errors.New(`mcp config: no "mcpServers" object`)
	}
	names, err := objectKeys(raw)
	if err != nil {
		return Config{}, fmt.Errorf(`mcp config: "mcpServers" must be an object of servers: %w`, err)
	}
	var servers map[string]json.RawMessage
	if err := json.Unmarshal(raw, &servers); err != nil {
		return Config{}, fmt.Errorf(`mcp config: "mcpServers" must be an object of servers: %w`, err)
	}
	var cfg Config
	for _, name := range names {
		s, err := parseServer(name, servers[name])
		if err != nil {
			return Config{}, fmt.Errorf("mcp config: server %q: %w", name, err)
		}
		cfg.Servers = append(cfg.Servers, s)
	}
	slices.SortFunc(cfg.Servers, func(a, b Server) int { return strings.Compare(a.Name, b.Name) })
	return cfg, nil
}

// objectKeys lists the keys of a JSON object in order and refuses a key
// given twice (encoding/json would silently keep the last).
func objectKeys(raw json.RawMessage) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	var keys []string
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key := tok.(string) // an object's tokens alternate key, value
		if seen[key] {
			return nil, fmt.Errorf("server %q is given twice", key)
		}
		seen[key] = true
		keys = append(keys, key)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

func parseServer(name string, raw json.RawMessage) (Server, error) {
	s := Server{Name: name, ID: ServerID(name), Timeout: DefaultTimeout}
	if !validName.MatchString(name) {
		return s, errors.New("name: must be 1 to 32 letters, digits or '-'")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return s, errors.New("must be an object")
	}
	get := func(key string, into any, want string) error {
		v, ok := fields[key]
		if !ok || string(v) == "null" {
			return nil
		}
		if err := json.Unmarshal(v, into); err != nil {
			return fmt.Errorf("%s: must be %s", key, want)
		}
		return nil
	}
	var toolsField struct {
		Include []string `json:"include"`
		Exclude []string `json:"exclude"`
	}
	var timeout string
	for _, err := range []error{
		get("command", &s.Command, "a string"),
		get("args", &s.Args, "an array of strings"),
		get("env", &s.Env, "an object of strings"),
		get("url", &s.URL, "a string"),
		get("headers", &s.Headers, "an object of strings"),
		get("tools", &toolsField, `an object {"include": [...], "exclude": [...]} of tool names`),
		get("effects", &s.Effects, "an object of tool name to pure, idempotent or effectful"),
		get("approval", &s.Approval, "never, effectful or always"),
		get("approvals", &s.Approvals, "an object of tool name to never, effectful or always"),
		get("timeout", &timeout, `a duration string such as "60s"`),
		get("disabled", &s.Disabled, "true or false"),
		get("oauth", &s.OAuth, `an object {"client_id", "client_secret", "client_metadata_url", "per_user"}`),
	} {
		if err != nil {
			return s, err
		}
	}
	if raw, ok := fields["access"]; ok && string(raw) != "null" {
		var err error
		if s.Access, s.Users, err = parseAccess(raw); err != nil {
			return s, err
		}
	}
	s.Include, s.Exclude = toolsField.Include, toolsField.Exclude
	switch {
	case s.Command != "" && s.URL != "":
		return s, errors.New("command, url: give one, not both")
	case s.Command == "" && s.URL == "":
		if _, ok := fields["command"]; ok {
			return s, errors.New("command: must not be empty")
		}
		return s, errors.New("command or url: one is required")
	case s.Command != "" && len(s.Headers) > 0:
		return s, errors.New("headers: only for a url server")
	case s.URL != "" && (len(s.Args) > 0 || len(s.Env) > 0):
		return s, errors.New("args, env: only for a command server")
	case s.OAuth != nil && s.URL == "":
		return s, errors.New("oauth: only for a url server")
	}
	if err := checkOAuth(s.OAuth); err != nil {
		return s, err
	}
	if s.URL != "" {
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return s, errors.New("url: must be an http:// or https:// URL")
		}
	}
	for tool, effect := range s.Effects {
		switch effect {
		case store.EffectPure, store.EffectIdempotent, store.EffectEffectful:
		default:
			return s, fmt.Errorf("effects.%s: %q is not pure, idempotent or effectful", tool, effect)
		}
	}
	if s.Approval == "" {
		s.Approval = store.ApprovalNever
	}
	if !slices.Contains(store.AllApprovalPolicies, s.Approval) {
		return s, fmt.Errorf("approval: %q is not never, effectful or always", s.Approval)
	}
	for tool, policy := range s.Approvals {
		if !slices.Contains(store.AllApprovalPolicies, policy) {
			return s, fmt.Errorf("approvals.%s: %q is not never, effectful or always", tool, policy)
		}
	}
	if timeout != "" {
		d, err := time.ParseDuration(timeout)
		if err != nil || d <= 0 {
			return s, fmt.Errorf(`timeout: %q is not a positive duration such as "60s"`, timeout)
		}
		s.Timeout = d
	}
	return s, nil
}

// accessWant describes the access field's forms for error messages.
const accessWant = `"all", "admins", or an array of usernames (those users and the admins)`

// parseAccess reads an access field: "all", "admins", or a non-empty array
// of usernames (returned sorted, without repeats).
func parseAccess(raw json.RawMessage) (access string, users []string, err error) {
	var word string
	if json.Unmarshal(raw, &word) == nil {
		switch word {
		case AccessAll, AccessAdmins:
			return word, nil, nil
		}
		return "", nil, fmt.Errorf("access: %q is not %s", word, accessWant)
	}
	var names []string
	if err := json.Unmarshal(raw, &names); err != nil {
		return "", nil, fmt.Errorf("access: must be %s", accessWant)
	}
	if len(names) == 0 {
		return "", nil, errors.New(`access: an empty list lets no user in; give "admins" for admins only`)
	}
	for i, name := range names {
		if err := auth.ValidateUserName(name); err != nil {
			var ve *auth.ValidationError
			if errors.As(err, &ve) {
				return "", nil, fmt.Errorf("access[%d]: %q is not a username: %s", i, name, ve.Detail)
			}
			return "", nil, fmt.Errorf("access[%d]: %q is not a username", i, name)
		}
	}
	slices.Sort(names)
	return AccessUsers, slices.Compact(names), nil
}

// checkOAuth validates a server's oauth field.
func checkOAuth(o *OAuth) error {
	if o == nil {
		return nil
	}
	if o.ClientSecret != "" && o.ClientID == "" {
		return errors.New("oauth.client_secret: goes with a client_id")
	}
	if o.ClientMetadataURL != "" {
		u, err := url.Parse(o.ClientMetadataURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" {
			return errors.New("oauth.client_metadata_url: must be an https:// URL with a path")
		}
	}
	return nil
}
