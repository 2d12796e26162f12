package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// rotatingVault is an MCP server behind bearer tokens with its own
// authorization server (metadata, dynamic registration, an authorize
// endpoint that consents at once) whose tokens expire within the refresh
// margin, so every use refreshes, and whose refresh tokens rotate: only
// the newest one works, once.
type rotatingVault struct {
	url string

	mu        sync.Mutex
	consents  int
	refreshes int
	issued    int
}

func startRotatingVault(t *testing.T) *rotatingVault {
	t.Helper()
	v := &rotatingVault{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "vault", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "secret", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "42"}}}, nil
		})
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	base := hs.URL
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		v.mu.Lock()
		ok := v.issued > 0 && token == fmt.Sprintf("tok-%d", v.issued)
		v.mu.Unlock()
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: base + "/.well-known/oauth-protected-resource/mcp",
	})(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: base + "/mcp", AuthorizationServers: []string{base},
	}))
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": base, "authorization_endpoint": base + "/authorize", "token_endpoint": base + "/token",
			"registration_endpoint": base + "/register", "response_types_supported": []string{"code"},
			"code_challenge_methods_supported": []string{"S256"}, "grant_types_supported": []string{"authorization_code", "refresh_token"},
			"token_endpoint_auth_methods_supported": []string{"none"},
		})
	})
	mux.HandleFunc("/register", func(w http.ResponseWriter, r *http.Request) {
		var meta struct {
			RedirectURIs []string `json:"redirect_uris"`
		}
		_ = json.NewDecoder(r.Body).Decode(&meta)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"client_id": "dyn-1", "redirect_uris": meta.RedirectURIs, "token_endpoint_auth_method": "none"})
	})
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		v.mu.Lock()
		v.consents++
		v.mu.Unlock()
		back, _ := url.Parse(q.Get("redirect_uri"))
		bq := back.Query()
		bq.Set("code", "code-1")
		bq.Set("state", q.Get("state"))
		back.RawQuery = bq.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		v.mu.Lock()
		defer v.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.PostForm.Get("grant_type") == "refresh_token" && r.PostForm.Get("refresh_token") == fmt.Sprintf("ref-%d", v.issued):
			v.refreshes++
		case r.PostForm.Get("grant_type") == "authorization_code" && r.PostForm.Get("code") == "code-1":
		default:
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
			return
		}
		v.issued++
		// Within oauth2's 10 s expiry margin: the next use refreshes.
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": fmt.Sprintf("tok-%d", v.issued), "token_type": "Bearer",
			"expires_in": 5, "refresh_token": fmt.Sprintf("ref-%d", v.issued)})
	})
	t.Cleanup(func() {
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
		hs.CloseClientConnections()
		hs.Close()
	})
	v.url = base + "/mcp"
	return v
}

func (v *rotatingVault) counts() (consents, refreshes int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.consents, v.refreshes
}

// TestMCPOAuthSurvivesRestart: an admin connects an OAuth server once; the
// app restarted on the same database connects it again without asking,
// refreshing the stored (expired) token with the stored refresh token,
// which only works when every rotated refresh token was stored. Both
// stores.
func TestMCPOAuthSurvivesRestart(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		v := startRotatingVault(t)
		mcpConfig, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"vault": map[string]any{"url": v.url}}})
		require.NoError(t, err)
		cfgPath := writeMCPConfig(t, string(mcpConfig))
		// start runs the app (the next one on the same database after the
		// first) behind a server whose URL it advertises (the
		// authorization server sends the browser back there).
		var h *apptest.Harness
		start := func() (*sdk.Client, func()) {
			if h == nil {
				h = apptest.Start(t, apptest.Options{Store: newStore, Config: config.Config{MCPConfig: cfgPath, SecretKey: testSecretKey}})
			} else {
				h = h.Reopen(t)
			}
			this := h
			return h.Admin, func() { this.Stop(t) }
		}
		vault := func(c *sdk.Client) sdk.MCPServer {
			t.Helper()
			list, err := c.MCPServers(ctx)
			require.NoError(t, err)
			require.Len(t, list, 1)
			return list[0]
		}
		connected := func(c *sdk.Client) {
			t.Helper()
			var last sdk.MCPServer
			require.Eventually(t, func() bool {
				last = vault(c)
				return last.State == sdk.MCPStateConnected && last.Auth != nil && last.Auth.Status == sdk.MCPAuthAuthorized
			}, 30*time.Second, 20*time.Millisecond, "the server never connected authorized: %+v %+v", last, last.Auth)
		}

		admin, stop := start()
		var authURL string
		require.Eventually(t, func() bool {
			if a := vault(admin).Auth; a != nil && a.Status == sdk.MCPAuthNeedsAuthorization {
				authURL = a.AuthorizationURL
			}
			return authURL != ""
		}, time.Minute, 20*time.Millisecond)
		resp, err := http.Get(authURL) // the admin's browser: consent, back to chatd's callback
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode)
		connected(admin)
		stop()
		consents, before := v.counts()
		require.Equal(t, 1, consents)

		admin, _ = start()
		connected(admin)
		consents, after := v.counts()
		require.Equal(t, 1, consents, "no new consent after the restart")
		require.Greater(t, after, before, "the stored, expired token was refreshed")
	})
}
