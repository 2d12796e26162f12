package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/mcp/mcptest"
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
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		v.mu.Lock()
		ok := v.issued > 0 && token == fmt.Sprintf("tok-%d", v.issued)
		v.mu.Unlock()
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}
	ps := mcptest.ServeProtected(t, srv, verify, nil)
	ps.Mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		v.mu.Lock()
		v.consents++
		v.mu.Unlock()
		mcptest.RedirectWithCode(w, r, "code-1")
	})
	ps.Mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
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
	v.url = ps.Base + "/mcp"
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
