package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// Sealer seals secrets before they reach the database and opens them
// after. Every env value of a stdio server and every header value of an
// HTTP server is a secret: API keys travel in both, and chatd cannot tell
// which ones do, so none is ever shown again.
type Sealer interface {
	Seal(plain []byte) ([]byte, error)
	Open(sealed []byte) ([]byte, error)
}

// plainPrefix marks secrets stored unencrypted by PlainSealer, so an
// encrypting Sealer can tell them apart and re-seal them.
const plainPrefix = "plain:"

// PlainSealer stores secrets unencrypted (marked "plain:"). chatd itself
// seals with AES-GCM under CHATD_SECRET_KEY (app's mcpSealer), which
// still opens rows that versions before it wrote with PlainSealer;
// NewServers without a Sealer (tests) uses it. The API never returns the
// values either way.
type PlainSealer struct{}

// Seal marks plain.
func (PlainSealer) Seal(plain []byte) ([]byte, error) {
	return append([]byte(plainPrefix), plain...), nil
}

// Open strips the mark.
func (PlainSealer) Open(sealed []byte) ([]byte, error) {
	if len(sealed) < len(plainPrefix) || string(sealed[:len(plainPrefix)]) != plainPrefix {
		return nil, errors.New("open MCP server secrets: not sealed by PlainSealer")
	}
	return sealed[len(plainPrefix):], nil
}

// secrets are the parts of a server's settings stored sealed.
type secrets struct {
	Env     map[string]string `json:"env,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// OAuthClientSecret is the pre-registered OAuth client's secret.
	OAuthClientSecret string `json:"oauth_client_secret,omitempty"`
}

// policy is the server's own approval policy (never when unset).
func (s Server) policy() string {
	if s.Approval == "" {
		return store.ApprovalNever
	}
	return s.Approval
}

// object is s as a config-file server object; ParseConfig reads it back
// to s (the name aside).
func (s Server) object() map[string]any {
	o := map[string]any{"approval": s.policy(), "timeout": s.Timeout.String()}
	if s.Command != "" {
		o["command"] = s.Command
	}
	if len(s.Args) > 0 {
		o["args"] = s.Args
	}
	if len(s.Env) > 0 {
		o["env"] = s.Env
	}
	if s.URL != "" {
		o["url"] = s.URL
	}
	if len(s.Headers) > 0 {
		o["headers"] = s.Headers
	}
	if len(s.Include) > 0 || len(s.Exclude) > 0 {
		o["tools"] = map[string][]string{"include": s.Include, "exclude": s.Exclude}
	}
	if len(s.Effects) > 0 {
		o["effects"] = s.Effects
	}
	if len(s.Approvals) > 0 {
		o["approvals"] = s.Approvals
	}
	if s.Disabled {
		o["disabled"] = true
	}
	if s.OAuth != nil {
		o["oauth"] = *s.OAuth
	}
	// Only when given: a server left to the default follows it when its
	// env or headers change.
	switch s.Access {
	case AccessUsers:
		o["access"] = s.Users
	case AccessAll, AccessAdmins:
		o["access"] = s.Access
	}
	return o
}

// Row is s as a stored server: its env and headers sealed, the rest in
// the spec. now stamps a new row.
func (s Server) Row(source string, sealer Sealer, now time.Time) (store.MCPServer, error) {
	o := s.object()
	delete(o, "env")
	delete(o, "headers")
	delete(o, "disabled")
	var oauthSecret string
	if s.OAuth != nil {
		public := *s.OAuth
		oauthSecret, public.ClientSecret = public.ClientSecret, ""
		o["oauth"] = public
	}
	spec, err := json.Marshal(o)
	if err != nil {
		return store.MCPServer{}, fmt.Errorf("MCP server %s: encode: %w", s.Name, err)
	}
	row := store.MCPServer{
		ID: s.ID, Name: s.Name, Source: source, Enabled: !s.Disabled, Transport: store.MCPTransportHTTP,
		Spec: spec, CreatedAt: now, UpdatedAt: now,
	}
	if s.Stdio() {
		row.Transport = store.MCPTransportStdio
	}
	if len(s.Env) > 0 || len(s.Headers) > 0 || oauthSecret != "" {
		plain, err := json.Marshal(secrets{Env: s.Env, Headers: s.Headers, OAuthClientSecret: oauthSecret})
		if err != nil {
			return store.MCPServer{}, fmt.Errorf("MCP server %s: encode secrets: %w", s.Name, err)
		}
		if row.Secrets, err = sealer.Seal(plain); err != nil {
			return store.MCPServer{}, fmt.Errorf("MCP server %s: seal secrets: %w", s.Name, err)
		}
	}
	return row, nil
}

// FromRow is the server a stored row describes, validated like a config
// file entry.
func FromRow(row store.MCPServer, sealer Sealer) (Server, error) {
	var o map[string]json.RawMessage
	if err := json.Unmarshal(row.Spec, &o); err != nil {
		return Server{}, fmt.Errorf("MCP server %s: spec: %w", row.Name, err)
	}
	if row.Secrets != nil {
		plain, err := sealer.Open(row.Secrets)
		if err != nil {
			return Server{}, fmt.Errorf("MCP server %s: %w", row.Name, err)
		}
		var sec secrets
		if err := json.Unmarshal(plain, &sec); err != nil {
			return Server{}, fmt.Errorf("MCP server %s: secrets: %w", row.Name, err)
		}
		for key, v := range map[string]map[string]string{"env": sec.Env, "headers": sec.Headers} {
			if len(v) > 0 {
				raw, _ := json.Marshal(v) // a map of strings always encodes
				o[key] = raw
			}
		}
		if raw, ok := o["oauth"]; ok && sec.OAuthClientSecret != "" {
			var oa OAuth
			if err := json.Unmarshal(raw, &oa); err != nil {
				return Server{}, fmt.Errorf("MCP server %s: oauth: %w", row.Name, err)
			}
			oa.ClientSecret = sec.OAuthClientSecret
			o["oauth"], _ = json.Marshal(oa) // strings always encode
		}
	}
	o["disabled"] = json.RawMessage(fmt.Sprint(!row.Enabled))
	data, _ := json.Marshal(o) // raw messages that were just decoded
	s, err := parseServer(row.Name, data)
	if err != nil {
		return Server{}, fmt.Errorf("MCP server %s: %w", row.Name, err)
	}
	s.ID = row.ID
	return s, nil
}

// configOf is the admin view of a stored server: env and header values
// left out.
func configOf(s Server, row store.MCPServer) sdk.MCPServerConfig {
	nonNil := func(v []string) []string {
		if v == nil {
			return []string{}
		}
		return v
	}
	orEmpty := func(m map[string]string) map[string]string {
		if m == nil {
			return map[string]string{}
		}
		return m
	}
	return sdk.MCPServerConfig{
		Source: row.Source, Enabled: row.Enabled, Command: s.Command, Args: nonNil(s.Args),
		EnvKeys: nonNil(slices.Sorted(maps.Keys(s.Env))), URL: s.URL, HeaderKeys: nonNil(slices.Sorted(maps.Keys(s.Headers))),
		Tools:   sdk.MCPToolFilter{Include: nonNil(s.Include), Exclude: nonNil(s.Exclude)},
		Effects: orEmpty(s.Effects), Approval: s.policy(), Approvals: orEmpty(s.Approvals),
		Timeout: s.Timeout.String(), CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt,
		Access: sdk.MCPAccess{Mode: s.EffectiveAccess(), Users: s.Users}, AccessDefault: s.Access == "",
		OAuth: oauthConfigOf(s.OAuth),
	}
}

// oauthConfigOf is the admin view of a server's OAuth registration: the
// client secret left out.
func oauthConfigOf(o *OAuth) *sdk.MCPOAuthConfig {
	if o == nil {
		return nil
	}
	return &sdk.MCPOAuthConfig{ClientID: o.ClientID, HasClientSecret: o.ClientSecret != "", ClientMetadataURL: o.ClientMetadataURL, PerUser: o.PerUser}
}
