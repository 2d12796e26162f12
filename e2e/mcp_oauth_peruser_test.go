package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	chatdauth "github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/llmtest"
	chatdmcp "github.com/chatd/chatd/app/mcp"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/worker"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// personVault is an OAuth-protected MCP server whose identity is the
// person's: its authorize endpoint consents as whoever the browser says
// it is (header X-Person), the tokens it issues carry that person, and
// its tool whoami answers the person of the bearer token it was called
// with.
type personVault struct {
	url string

	mu       sync.Mutex
	consents map[string]int
	issued   map[string]string // access token -> person
	n        int
}

func startPersonVault(t *testing.T) *personVault {
	t.Helper()
	v := &personVault{consents: map[string]int{}, issued: map[string]string{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "vault", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "whoami", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			who := "nobody"
			if req.Extra != nil && req.Extra.TokenInfo != nil {
				who = req.Extra.TokenInfo.UserID
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "you are " + who}}}, nil
		})
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	base := hs.URL
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		v.mu.Lock()
		who, ok := v.issued[token]
		v.mu.Unlock()
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: who, Expiration: time.Now().Add(time.Hour)}, nil
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
		who := r.Header.Get("X-Person")
		if who == "" {
			http.Error(w, "who are you?", http.StatusUnauthorized)
			return
		}
		q := r.URL.Query()
		v.mu.Lock()
		v.consents[who]++
		v.mu.Unlock()
		back, _ := url.Parse(q.Get("redirect_uri"))
		bq := back.Query()
		bq.Set("code", "code-"+who)
		bq.Set("state", q.Get("state"))
		back.RawQuery = bq.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		v.mu.Lock()
		defer v.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		var who string
		switch r.PostForm.Get("grant_type") {
		case "authorization_code":
			who, _ = strings.CutPrefix(r.PostForm.Get("code"), "code-")
		case "refresh_token":
			who, _ = strings.CutPrefix(r.PostForm.Get("refresh_token"), "ref-")
			who, _, _ = strings.Cut(who, "-")
		}
		if who == "" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
			return
		}
		v.n++
		tok := fmt.Sprintf("tok-%s-%d", who, v.n)
		v.issued[tok] = who
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer",
			"expires_in": 3600, "refresh_token": fmt.Sprintf("ref-%s-%d", who, v.n)})
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

func (v *personVault) consentsOf(who string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.consents[who]
}

// consent is the person's browser at the authorization URL: the vault
// consents as who and sends the browser back to chatd's callback.
func consent(t *testing.T, authURL, who string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, authURL, nil)
	require.NoError(t, err)
	req.Header.Set("X-Person", who)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
}

// TestMCPOAuthPerUser: a server whose identity is each user's
// (oauth.per_user). Alice connects it herself and her chat's call carries
// her token; Bob's chat, before he connects, gets a clear error (never
// Alice's token) and his status says he must connect; once he connects
// his calls carry his token; Alice disconnects (Bob's connection stays);
// Bob's tokens survive a restart. Both stores.
func TestMCPOAuthPerUser(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		v := startPersonVault(t)
		mcpConfig, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
			"vault": map[string]any{"url": v.url, "oauth": map[string]any{"per_user": true}}}})
		require.NoError(t, err)
		cfgPath := writeMCPConfig(t, string(mcpConfig))
		s := newStore(t)
		t.Cleanup(func() { _ = s.Close() })
		llm := llmtest.NewOpenAI(t)
		adminTok := "bootstrap-" + t.Name()
		vaultID := chatdmcp.ServerID("vault")

		start := func() (srvURL string, stop func()) {
			a, err := app.NewWithStore(ctx, config.Config{
				BootstrapToken: adminTok, MCPConfig: cfgPath, SecretKey: testSecretKey,
				OpenAIBaseURL: llm.URL, DefaultModel: "openai/test-model",
				Worker: worker.Config{SyncInterval: 50 * time.Millisecond},
			}, keptStore{s}, io.Discard)
			require.NoError(t, err)
			srv := httptest.NewServer(a.Handler())
			a.SetAdvertiseURL(srv.URL)
			require.NoError(t, a.Start(ctx))
			var once sync.Once
			stop = func() {
				once.Do(func() {
					srv.CloseClientConnections()
					srv.Close()
					a.Stop()
					require.NoError(t, a.Close())
				})
			}
			t.Cleanup(stop)
			return srv.URL, stop
		}
		srvURL, stop := start()
		tokens := map[string]string{}
		for _, name := range []string{"alice", "bob"} {
			tok, _, err := chatdauth.CreateToken(ctx, s, name, false, "test", time.Now())
			require.NoError(t, err)
			tokens[name] = tok
		}
		clients := func(base string) (alice, bob *sdk.Client) {
			return sdk.New(base, tokens["alice"]), sdk.New(base, tokens["bob"])
		}
		alice, bob := clients(srvURL)

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
				return last.State == sdk.MCPStateConnected && last.Auth != nil && last.Auth.Status == sdk.MCPAuthAuthorized && last.Auth.PerUser
			}, 30*time.Second, 20*time.Millisecond, "never connected as the user: %+v %+v", last, last.Auth)
			require.Equal(t, "vault__whoami", last.Tools[0].Name)
		}
		needsConnect := func(c *sdk.Client) {
			t.Helper()
			st := vault(c)
			require.NotNil(t, st.Auth)
			require.Equal(t, sdk.MCPAuthNeedsUserAuthorization, st.Auth.Status, "%+v", st.Auth)
			require.True(t, st.Auth.PerUser)
			require.Equal(t, sdk.MCPStateFailed, st.State)
			require.NotNil(t, st.LastError)
			require.Contains(t, *st.LastError, "connect vault in Settings")
		}
		connect := func(c *sdk.Client, who string) {
			t.Helper()
			st, err := c.ConnectMCPServer(ctx, vaultID)
			require.NoError(t, err)
			require.Equal(t, sdk.MCPAuthNeedsAuthorization, st.Status, "%+v", st)
			require.True(t, st.PerUser)
			require.NotEmpty(t, st.AuthorizationURL)
			consent(t, st.AuthorizationURL, who)
			connected(c)
		}
		// whoami runs a chat of c whose model calls vault__whoami and
		// returns the call's result.
		whoami := func(c *sdk.Client) sdk.ChatMessagePart {
			t.Helper()
			llm.Enqueue(llmtest.ToolCall("call_who", "vault__whoami", `{}`))
			llm.Enqueue(llmtest.TextChunks("done"))
			chat, err := c.CreateChat(ctx, sdk.CreateChatRequest{Content: sdk.Text("who am I?"), Title: "whoami"})
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				got, err := c.Chat(ctx, chat.ID)
				return err == nil && got.Status == sdk.ChatStatusWaiting
			}, 30*time.Second, 10*time.Millisecond, "the turn never finished")
			page, err := c.ChatMessages(ctx, chat.ID, sdk.MessagesOptions{})
			require.NoError(t, err)
			for _, m := range page.Messages {
				for _, p := range m.Content {
					if p.Type == sdk.PartToolResult && p.ToolCallID == "call_who" {
						return p
					}
				}
			}
			raw, _ := json.Marshal(page.Messages)
			t.Fatalf("whoami has no result: %s", raw)
			return sdk.ChatMessagePart{}
		}
		asUser := func(c *sdk.Client, who string) {
			t.Helper()
			res := whoami(c)
			require.False(t, res.IsError, "%s", res.Result)
			require.Contains(t, string(res.Result), "you are "+who)
		}
		refused := func(c *sdk.Client) {
			t.Helper()
			res := whoami(c)
			require.True(t, res.IsError, "%s", res.Result)
			require.Contains(t, string(res.Result), "connect vault in Settings")
			require.NotContains(t, string(res.Result), "you are")
		}

		needsConnect(alice)
		needsConnect(bob)
		// A shared server is no user's to connect; an unknown one is 404.
		_, err = alice.ConnectMCPServer(ctx, chatdmcp.ServerID("nope"))
		requireCode(t, err, http.StatusNotFound, sdk.CodeNotFound)

		connect(alice, "alice")
		asUser(alice, "alice")
		needsConnect(bob)
		refused(bob) // offered the tool alice's session listed, but never with her token

		connect(bob, "bob")
		asUser(bob, "bob")
		asUser(alice, "alice")

		require.NoError(t, alice.DisconnectMCPServer(ctx, vaultID))
		needsConnect(alice)
		refused(alice)
		asUser(bob, "bob")

		stop()
		srvURL, _ = start()
		alice, bob = clients(srvURL)
		asUser(bob, "bob")
		connected(bob)
		needsConnect(alice)
		require.Equal(t, 1, v.consentsOf("bob"), "bob's tokens survived the restart: no new consent")
		require.Equal(t, 1, v.consentsOf("alice"))
	})
}
