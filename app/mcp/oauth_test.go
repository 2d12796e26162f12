package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/mcp/mcptest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
)

// protected is an MCP server behind bearer tokens with its own small
// authorization server: metadata, dynamic registration, an authorize
// endpoint that consents at once (redirecting with a code) and a token
// endpoint that checks the PKCE verifier's presence.
type protected struct {
	url string

	mu         sync.Mutex
	registered []string // redirect URIs registered dynamically
	challenges []string // code_challenge of each authorization
	verifiers  []string // code_verifier of each token request
	clientIDs  []string // client_id of each token request
	issued     int      // tokens issued: the nth is tok-n, with refresh token ref-n
	refreshes  int      // refresh_token grants
	current    string   // the one access token the server accepts
	expiresIn  int      // of the tokens it issues (3600 when 0)
}

// issue makes the next token pair and makes it the current one (p.mu held).
func (p *protected) issue(w http.ResponseWriter) {
	p.issued++
	p.current = fmt.Sprintf("tok-%d", p.issued)
	expires := p.expiresIn
	if expires == 0 {
		expires = 3600
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": p.current, "token_type": "Bearer", "expires_in": expires,
		"refresh_token": fmt.Sprintf("ref-%d", p.issued)})
}

// serveCallback serves chatd's OAuth callback for the manager *m (set
// after: the manager is made with the URL) and returns its redirect URL.
func serveCallback(t *testing.T, m **Manager) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if err := (*m).OAuthCallback(q.Get("state"), q.Get("code"), q.Get("iss"), q.Get("error"), q.Get("error_description")); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/cb"
}

func startProtected(t *testing.T) *protected {
	t.Helper()
	p := &protected{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "vault", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "secret", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "42"}}}, nil
		})
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		p.mu.Lock()
		ok := token != "" && token == p.current
		p.mu.Unlock()
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}
	ps := mcptest.ServeProtected(t, srv, verify, func(uris []string) {
		p.mu.Lock()
		p.registered = append(p.registered, uris...)
		p.mu.Unlock()
	})
	ps.Mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		p.mu.Lock()
		p.challenges = append(p.challenges, q.Get("code_challenge")+"/"+q.Get("code_challenge_method"))
		p.mu.Unlock()
		mcptest.RedirectWithCode(w, r, "code-1")
	})
	ps.Mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		p.mu.Lock()
		defer p.mu.Unlock()
		if r.PostForm.Get("grant_type") == "refresh_token" {
			// Only the newest refresh token works, once (rotation).
			if r.PostForm.Get("refresh_token") != fmt.Sprintf("ref-%d", p.issued) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
				return
			}
			p.refreshes++
			p.issue(w)
			return
		}
		p.verifiers = append(p.verifiers, r.PostForm.Get("code_verifier"))
		p.clientIDs = append(p.clientIDs, r.PostForm.Get("client_id"))
		if r.PostForm.Get("code") != "code-1" {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		p.issue(w)
	})
	p.url = ps.Base + "/mcp"
	return p
}

// A server that answers 401 is authorized through the MCP flow: the
// admin's status shows the authorization URL, the browser's trip through
// the authorization server lands on the callback (OAuthCallback), and the
// connection goes on with the token (PKCE and dynamic registration on the
// way). A callback with an unknown state is refused.
func TestOAuthAuthorizesAServer(t *testing.T) {
	t.Parallel()
	p := startProtected(t)
	var m *Manager
	redirect := serveCallback(t, &m)
	m = NewManager(Config{Servers: []Server{{Name: "vault", ID: ServerID("vault"), URL: p.url, Timeout: DefaultTimeout}}},
		Options{OAuthRedirectURL: func() string { return redirect }})
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	require.ErrorIs(t, m.OAuthCallback("nobody-asked", "c", "", "", ""), ErrUnknownOAuthState)

	var authURL string
	require.Eventually(t, func() bool {
		st := m.Status(t.Context(), anAdmin)
		if st[0].Auth != nil && st[0].Auth.Status == sdk.MCPAuthNeedsAuthorization {
			authURL = st[0].Auth.AuthorizationURL
		}
		return authURL != ""
	}, 10*time.Second, 10*time.Millisecond)
	require.Nil(t, m.Status(t.Context(), tools.User{Name: "bob"})[0].Auth, "only admins see the authorization")

	resp, err := http.Get(authURL) // the person's browser: consent, redirect to chatd
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)

	out, err := find(t, m.Tools(t.Context(), anAdmin, nil), "vault__secret").Run(t.Context(), json.RawMessage(`{}`))
	require.NoError(t, err)
	require.JSONEq(t, `"42"`, string(out))
	st := m.Status(t.Context(), anAdmin)[0]
	require.Equal(t, sdk.MCPStateConnected, st.State)
	require.Equal(t, &sdk.MCPAuthStatus{Status: sdk.MCPAuthAuthorized}, st.Auth)
	p.mu.Lock()
	require.Equal(t, []string{redirect}, p.registered)
	require.Len(t, p.challenges, 1)
	require.Regexp(t, `^.{43,}/S256$`, p.challenges[0])
	require.Len(t, p.verifiers, 1)
	require.NotEmpty(t, p.verifiers[0])
	require.Equal(t, []string{"dyn-1"}, p.clientIDs)
	p.mu.Unlock()

	// Reconnect forgets the token: the server asks for a new authorization.
	require.False(t, m.Reconnect(ServerID("nope")))
	require.True(t, m.Reconnect(ServerID("vault")))
	require.Eventually(t, func() bool {
		a := m.Status(t.Context(), anAdmin)[0].Auth
		return a != nil && a.Status == sdk.MCPAuthNeedsAuthorization && a.AuthorizationURL != authURL
	}, 10*time.Second, 10*time.Millisecond)
}

// While a shared server waits for an admin's consent, neither a turn's
// tool list nor a call on the server waits for it: with a connect timeout
// of an hour, the tool list comes back at once without its tools, and a
// catalog read says what is missing instead of "connecting".
func TestOAuthConsentIsNotWaitedFor(t *testing.T) {
	t.Parallel()
	p := startProtected(t)
	var m *Manager
	redirect := serveCallback(t, &m)
	m = NewManager(Config{Servers: []Server{{Name: "vault", ID: ServerID("vault"), URL: p.url, Timeout: DefaultTimeout}}},
		Options{OAuthRedirectURL: func() string { return redirect }, ConnectTimeout: time.Hour})
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	require.Eventually(t, func() bool {
		a := m.Status(t.Context(), anAdmin)[0].Auth
		return a != nil && a.Status == sdk.MCPAuthNeedsAuthorization
	}, 10*time.Second, 10*time.Millisecond)

	// The deadline only guards the test: waiting for the consent would
	// reach it (and the connect timeout never would).
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	require.Empty(t, m.Tools(ctx, anAdmin, nil))
	require.NoError(t, ctx.Err(), "the tool list waited for the consent")
	_, err := m.Resources(ctx, anAdmin, ServerID("vault"), "")
	require.NoError(t, ctx.Err(), "the catalog read waited for the consent")
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorContains(t, err, "MCP server vault needs authorization: an admin connects it in Settings")
}

// The oauth field parses, keeps its client secret out of the stored spec
// (sealed with the other secrets) and comes back whole from the row.
func TestOAuthConfigIsSealed(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig([]byte(`{"mcpServers": {"gh": {"url": "https://example.com/mcp",
		"oauth": {"client_id": "id-1", "client_secret": "s3cret-value", "client_metadata_url": "https://chatd.example/client.json"}}}}`))
	require.NoError(t, err)
	s := cfg.Servers[0]
	require.Equal(t, &OAuth{ClientID: "id-1", ClientSecret: "s3cret-value", ClientMetadataURL: "https://chatd.example/client.json"}, s.OAuth)
	require.Contains(t, s.secretValues(), "s3cret-value")
	row, err := s.Row("database", PlainSealer{}, time.Now())
	require.NoError(t, err)
	require.NotContains(t, string(row.Spec), "s3cret-value")
	require.Contains(t, string(row.Secrets), "s3cret-value")
	back, err := FromRow(row, PlainSealer{})
	require.NoError(t, err)
	require.Equal(t, s.OAuth, back.OAuth)

	for body, want := range map[string]string{
		`{"command": "x", "oauth": {"client_id": "a"}}`:                            "oauth: only for a url server",
		`{"url": "https://h/mcp", "oauth": {"client_secret": "a"}}`:                "oauth.client_secret: goes with a client_id",
		`{"url": "https://h/mcp", "oauth": {"client_metadata_url": "http://h/x"}}`: "oauth.client_metadata_url",
		`{"url": "https://h/mcp", "oauth": "yes"}`:                                 "oauth: must be",
	} {
		_, err := ParseConfig([]byte(`{"mcpServers": {"s": ` + body + `}}`))
		require.ErrorContains(t, err, want, body)
	}
}
