package mcptest

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
)

// Protected is an MCP server's Streamable HTTP endpoint (Base + "/mcp")
// behind bearer tokens, with what an MCP client discovers before it
// authorizes: the protected resource metadata, the authorization server
// metadata (PKCE S256, authorization code and refresh grants, public
// clients) and dynamic client registration. The test adds the
// authorization server's own /authorize and /token to Mux.
type Protected struct {
	Mux  *http.ServeMux
	Base string
}

// ServeProtected serves srv as Protected, tokens checked by verify;
// registered (when set) hears the redirect URIs of each registration. It
// stops when the test ends.
func ServeProtected(t testing.TB, srv *mcp.Server, verify auth.TokenVerifier, registered func(redirectURIs []string)) *Protected {
	t.Helper()
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	base := hs.URL
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
		if registered != nil {
			registered(meta.RedirectURIs)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"client_id": "dyn-1", "redirect_uris": meta.RedirectURIs, "token_endpoint_auth_method": "none"})
	})
	t.Cleanup(func() {
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
		hs.CloseClientConnections()
		hs.Close()
	})
	return &Protected{Mux: mux, Base: base}
}

// RedirectWithCode is an authorize endpoint's consent: it sends the
// browser back to the request's redirect_uri with code and its state.
func RedirectWithCode(w http.ResponseWriter, r *http.Request, code string) {
	q := r.URL.Query()
	back, err := url.Parse(q.Get("redirect_uri"))
	if err != nil {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	bq := back.Query()
	bq.Set("code", code)
	bq.Set("state", q.Get("state"))
	back.RawQuery = bq.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// PersonVault is an OAuth-protected MCP server whose identity is the
// person's: its authorize endpoint consents as whoever the browser says
// it is (header X-Person), the tokens it issues carry that person, and
// its tool whoami answers the person of the bearer token it was called
// with.
type PersonVault struct {
	// URL is the MCP endpoint.
	URL string

	mu        sync.Mutex
	expiresIn int            // of the tokens it issues (3600 when 0)
	refreshes map[string]int // refresh grants, by person
	consents  map[string]int
	issued    map[string]string // access token -> person
	n         int
}

// StartPersonVault starts one, stopped when the test ends.
func StartPersonVault(t testing.TB) *PersonVault {
	t.Helper()
	v := &PersonVault{consents: map[string]int{}, issued: map[string]string{}, refreshes: map[string]int{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "vault", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "whoami", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			who := "nobody"
			if req.Extra != nil && req.Extra.TokenInfo != nil {
				who = req.Extra.TokenInfo.UserID
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "you are " + who}}}, nil
		})
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		v.mu.Lock()
		who, ok := v.issued[token]
		v.mu.Unlock()
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: who, Expiration: time.Now().Add(time.Hour)}, nil
	}
	ps := ServeProtected(t, srv, verify, nil)
	ps.Mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		who := r.Header.Get("X-Person")
		if who == "" {
			http.Error(w, "who are you?", http.StatusUnauthorized)
			return
		}
		v.mu.Lock()
		v.consents[who]++
		v.mu.Unlock()
		RedirectWithCode(w, r, "code-"+who)
	})
	ps.Mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
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
			if who != "" {
				v.refreshes[who]++
			}
		}
		if who == "" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
			return
		}
		v.n++
		tok := fmt.Sprintf("tok-%s-%d", who, v.n)
		v.issued[tok] = who
		expires := v.expiresIn
		if expires == 0 {
			expires = 3600
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer",
			"expires_in": expires, "refresh_token": fmt.Sprintf("ref-%s-%d", who, v.n)})
	})
	v.URL = ps.Base + "/mcp"
	return v
}

// ShortTokens makes the tokens issued from now on expire within oauth2's
// expiry margin, so that every use refreshes them.
func (v *PersonVault) ShortTokens() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.expiresIn = 5
}

// Refreshes is how many refresh grants who's tokens had.
func (v *PersonVault) Refreshes(who string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.refreshes[who]
}

// Consents is how many times who consented.
func (v *PersonVault) Consents(who string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.consents[who]
}

// Consent is the person's browser at the authorization URL: the vault
// consents as who and sends the browser back to chatd's callback, which
// must answer 200.
func Consent(t testing.TB, authURL, who string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, authURL, nil)
	require.NoError(t, err)
	req.Header.Set("X-Person", who)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
}
