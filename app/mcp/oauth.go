package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/chatd/chatd/app/sdk"
)

// DefaultAuthorizationTimeout bounds how long a server's authorization
// waits for a person to consent (the callback) before it fails.
const DefaultAuthorizationTimeout = 10 * time.Minute

// ErrUnknownOAuthState is a callback whose state no authorization in this
// process waits for (expired, already used, or begun by another replica).
var ErrUnknownOAuthState = errors.New("no authorization waits for this state")

// oauthCallback is what the authorization server's redirect carried.
type oauthCallback struct {
	code, state, iss string
	err              error
}

// oauthFlows are the authorizations waiting for their callback, by the
// OAuth state parameter of their authorization URL.
type oauthFlows struct {
	mu      sync.Mutex
	waiting map[string]chan oauthCallback
}

func (f *oauthFlows) wait(state string) (<-chan oauthCallback, func()) {
	ch := make(chan oauthCallback, 1)
	f.mu.Lock()
	if f.waiting == nil {
		f.waiting = map[string]chan oauthCallback{}
	}
	f.waiting[state] = ch
	f.mu.Unlock()
	return ch, func() {
		f.mu.Lock()
		delete(f.waiting, state)
		f.mu.Unlock()
	}
}

func (f *oauthFlows) deliver(cb oauthCallback) error {
	f.mu.Lock()
	ch, ok := f.waiting[cb.state]
	delete(f.waiting, cb.state)
	f.mu.Unlock()
	if !ok {
		return ErrUnknownOAuthState
	}
	ch <- cb
	return nil
}

// OAuthCallback completes the authorization whose authorization URL
// carried state: the authorization server redirected the person's browser
// to chatd's callback with code (or with an error). The server's
// connection then exchanges the code for tokens and goes on.
func (m *Manager) OAuthCallback(state, code, iss, errCode, errDesc string) error {
	cb := oauthCallback{code: code, state: state, iss: iss}
	switch {
	case state == "":
		return fmt.Errorf("%w: the callback has no state", ErrUnknownOAuthState)
	case errCode != "":
		cb.err = fmt.Errorf("the authorization server refused: %s %s", errCode, errDesc)
	case code == "":
		cb.err = errors.New("the callback has no code")
	}
	return m.flows.deliver(cb)
}

// serverAuth is a URL server's MCP authorization: the go-sdk's
// authorization code handler (discovery, registration, PKCE, token
// exchange and refresh), kept across reconnections, and its status.
type serverAuth struct {
	handler *auth.AuthorizationCodeHandler
	// user is the user whose authorization this is on a per-user server
	// (uuid.Nil: the server's shared one).
	user uuid.UUID
	// interactive: the user's Connect runs it, so a person is there to
	// consent; a chat's call that needs consent fails at once instead.
	interactive atomic.Bool
	waiting     atomic.Bool // a person's consent is awaited: no connect timeout

	mu     sync.Mutex
	status sdk.MCPAuthStatus
}

func (a *serverAuth) set(st sdk.MCPAuthStatus) {
	a.mu.Lock()
	a.status = st
	a.mu.Unlock()
}

func (a *serverAuth) get() *sdk.MCPAuthStatus {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.status.Status == "" {
		return nil
	}
	st := a.status
	return &st
}

// TokenSource is the handler's (nil until authorized).
func (a *serverAuth) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	return a.handler.TokenSource(ctx)
}

// Authorize runs the handler's flow and records how it ended.
func (a *serverAuth) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	err := a.handler.Authorize(ctx, req, resp)
	if err != nil {
		a.set(sdk.MCPAuthStatus{Status: sdk.MCPAuthFailed, Error: err.Error()})
		return err
	}
	a.set(sdk.MCPAuthStatus{Status: sdk.MCPAuthAuthorized})
	return nil
}

// authOf returns s's authorization, made on first use; nil when the server
// cannot use OAuth: a stdio server, one given an Authorization header, or
// a manager with no callback URL.
func (m *Manager) authOf(s *server) (*serverAuth, error) {
	if m.redirectURL(s) == "" {
		return nil, nil
	}
	s.authMu.Lock()
	defer s.authMu.Unlock()
	if s.auth != nil {
		return s.auth, nil
	}
	a, err := m.newAuth(s, uuid.Nil)
	if err != nil {
		return nil, err
	}
	s.auth = a
	return a, nil
}

// redirectURL is chatd's OAuth callback URL for s; empty when s cannot use
// OAuth: a stdio server, one given an Authorization header, or a manager
// with no callback URL.
func (m *Manager) redirectURL(s *server) string {
	if s.cfg.Stdio() || m.oauthRedirect == nil {
		return ""
	}
	for k := range s.cfg.Headers {
		if http.CanonicalHeaderKey(k) == "Authorization" {
			return ""
		}
	}
	return m.oauthRedirect()
}

// newAuth makes an authorization of s: the server's shared one (user
// uuid.Nil) or one user's of a per-user server, with that one's stored
// tokens when there are some.
func (m *Manager) newAuth(s *server, user uuid.UUID) (*serverAuth, error) {
	redirect := m.redirectURL(s)
	if redirect == "" {
		return nil, fmt.Errorf("MCP server %s: chatd has no OAuth callback URL (set its advertised URL) or the server has an Authorization header", s.cfg.Name)
	}
	a := &serverAuth{user: user}
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: redirect,
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName: "chatd", RedirectURIs: []string{redirect},
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
		}},
		RequestRefreshToken:      true,
		AuthorizationCodeFetcher: m.fetcher(s, a),
	}
	if o := s.cfg.OAuth; o != nil {
		if o.ClientMetadataURL != "" {
			cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: o.ClientMetadataURL}
		}
		if o.ClientID != "" {
			cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: o.ClientID}
			if o.ClientSecret != "" {
				cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret}
			}
		}
	}
	if m.tokens != nil {
		// Every token the handler gets (the exchange's, and each refresh)
		// is stored; a stored one lets a restart go on without consent.
		cfg.NewTokenSource = func(_ context.Context, oc *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			return m.savingSource(s, user, oc, tok, false), nil
		}
		if st := m.loadToken(s, user); st != nil {
			cfg.InitialTokenSource = m.savingSource(s, user, st.config(), st.Token, true)
			a.set(sdk.MCPAuthStatus{Status: sdk.MCPAuthAuthorized})
		}
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, fmt.Errorf("oauth: %w", err)
	}
	a.handler = h
	return a, nil
}

// fetcher shows the authorization URL in the server's status and waits
// for the callback that carries the code (OAuthCallback).
func (m *Manager) fetcher(s *server, a *serverAuth) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		u, err := url.Parse(args.URL)
		if err != nil {
			return nil, fmt.Errorf("authorization URL: %w", err)
		}
		if s.perUser() && !a.interactive.Load() {
			// A chat's call (or an admin's Test), not the user's Connect:
			// nobody is there to consent as the user.
			return nil, needsUserAuth(s)
		}
		state := u.Query().Get("state")
		ch, forget := m.flows.wait(state)
		defer forget()
		a.waiting.Store(true)
		defer a.waiting.Store(false)
		a.set(sdk.MCPAuthStatus{Status: sdk.MCPAuthNeedsAuthorization, AuthorizationURL: args.URL})
		if a.user == uuid.Nil {
			m.log.Info("MCP server asks for authorization; an admin connects it from Settings", "mcp_server", s.cfg.Name)
		}
		s.mu.Lock()
		s.notifyLocked()
		s.mu.Unlock()
		timer := m.clock.NewTimer(m.authTimeout)
		defer timer.Stop()
		select {
		case cb := <-ch:
			if cb.err != nil {
				return nil, cb.err
			}
			return &auth.AuthorizationResult{Code: cb.code, State: cb.state, Iss: cb.iss}, nil
		case <-timer.C():
			return nil, fmt.Errorf("nobody completed the authorization within %s", m.authTimeout)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// loadToken reads s's stored token, nil when it has none that applies (its
// URL changed since) or it cannot be read.
func (m *Manager) loadToken(s *server, user uuid.UUID) *StoredToken {
	ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
	defer cancel()
	st, err := m.tokenLoad(ctx, s.cfg.ID, user)
	switch {
	case err != nil:
		m.log.Warn("read an MCP server's OAuth token; it asks for authorization again", "mcp_server", s.cfg.Name, "err", err)
		return nil
	case st == nil || st.Token == nil || st.URL != s.cfg.URL:
		return nil
	}
	return st
}

// Reconnect forgets the server's authorization (its tokens, stored ones
// too) and ends its connection; the connection loop connects again at once, and a server
// that wants authorization asks for it anew. False when no server has id.
func (m *Manager) Reconnect(id uuid.UUID) bool {
	m.cfgMu.RLock()
	s, ok := m.byID[id]
	m.cfgMu.RUnlock()
	if !ok {
		return false
	}
	s.authMu.Lock()
	s.auth = nil
	s.authMu.Unlock()
	if m.tokens != nil {
		ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
		if err := m.tokens.ForgetToken(ctx, id); err != nil {
			m.log.Warn("forget an MCP server's OAuth token", "mcp_server", s.cfg.Name, "err", err)
		}
		cancel()
	}
	s.mu.Lock()
	c := s.session
	s.mu.Unlock()
	if c != nil {
		_ = c.cs.Close() // the loop sees the session end and reconnects
	}
	m.start(s)
	return true
}
