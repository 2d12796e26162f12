package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/oauth2"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/store"
)

// TokenStore keeps URL servers' OAuth clients and tokens across restarts
// (Options.Tokens), so a server an admin connected stays connected, and a
// refresh goes on from the last refresh token.
type TokenStore interface {
	// LoadToken reads a server's tokens (nil when it has none).
	LoadToken(ctx context.Context, serverID uuid.UUID) (*StoredToken, error)
	// SaveToken stores them, replacing any.
	SaveToken(ctx context.Context, serverID uuid.UUID, t StoredToken) error
	// ForgetToken removes them (a reconnect).
	ForgetToken(ctx context.Context, serverID uuid.UUID) error
}

// UserTokenStore keeps the per-user tokens of servers whose identity is
// each user's (oauth.per_user). A TokenStore without it keeps them in
// memory only.
type UserTokenStore interface {
	LoadUserToken(ctx context.Context, serverID, userID uuid.UUID) (*StoredToken, error)
	SaveUserToken(ctx context.Context, serverID, userID uuid.UUID, t StoredToken) error
	ForgetUserToken(ctx context.Context, serverID, userID uuid.UUID) error
}

// tokenLoad, tokenSave and tokenForget are the token store's methods for
// the server's shared tokens (user uuid.Nil) or a user's.
func (m *Manager) tokenLoad(ctx context.Context, serverID, user uuid.UUID) (*StoredToken, error) {
	if user == uuid.Nil {
		return m.tokens.LoadToken(ctx, serverID)
	}
	if us, ok := m.tokens.(UserTokenStore); ok {
		return us.LoadUserToken(ctx, serverID, user)
	}
	return nil, nil
}

func (m *Manager) tokenSave(ctx context.Context, serverID, user uuid.UUID, t StoredToken) error {
	if user == uuid.Nil {
		return m.tokens.SaveToken(ctx, serverID, t)
	}
	if us, ok := m.tokens.(UserTokenStore); ok {
		return us.SaveUserToken(ctx, serverID, user, t)
	}
	return nil
}

func (m *Manager) tokenForget(ctx context.Context, serverID, user uuid.UUID) error {
	if m.tokens == nil {
		return nil
	}
	if user == uuid.Nil {
		return m.tokens.ForgetToken(ctx, serverID)
	}
	if us, ok := m.tokens.(UserTokenStore); ok {
		return us.ForgetUserToken(ctx, serverID, user)
	}
	return nil
}

// StoredToken is a server's OAuth client (as registered or configured, and
// the authorization server's endpoints) and its current token: what a
// refresh needs without a new discovery.
type StoredToken struct {
	// URL is the MCP server's URL the token was granted for: a server
	// whose URL changed since does not use it.
	URL          string        `json:"url"`
	ClientID     string        `json:"client_id"`
	ClientSecret string        `json:"client_secret,omitempty"`
	AuthURL      string        `json:"auth_url"`
	TokenURL     string        `json:"token_url"`
	AuthStyle    int           `json:"auth_style"`
	RedirectURL  string        `json:"redirect_url"`
	Scopes       []string      `json:"scopes,omitempty"`
	Token        *oauth2.Token `json:"token"`
}

func (t StoredToken) config() *oauth2.Config {
	return &oauth2.Config{
		ClientID: t.ClientID, ClientSecret: t.ClientSecret, RedirectURL: t.RedirectURL, Scopes: t.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: t.AuthURL, TokenURL: t.TokenURL, AuthStyle: oauth2.AuthStyle(t.AuthStyle)},
	}
}

func storedToken(url string, c *oauth2.Config, tok *oauth2.Token) StoredToken {
	return StoredToken{
		URL: url, ClientID: c.ClientID, ClientSecret: c.ClientSecret, AuthURL: c.Endpoint.AuthURL,
		TokenURL: c.Endpoint.TokenURL, AuthStyle: int(c.Endpoint.AuthStyle), RedirectURL: c.RedirectURL,
		Scopes: c.Scopes, Token: tok,
	}
}

// StoreTokens is the TokenStore on the database (table mcp_oauth_tokens):
// each server's StoredToken as one value sealed like the servers' other
// secrets, so neither the client secret nor a token is stored in the
// clear. The row goes with its server.
type StoreTokens struct {
	Store  store.Store
	Sealer Sealer
	Clock  clock.Clock
}

var (
	_ TokenStore     = StoreTokens{}
	_ UserTokenStore = StoreTokens{}
)

// LoadToken reads and opens a server's tokens.
func (s StoreTokens) LoadToken(ctx context.Context, serverID uuid.UUID) (*StoredToken, error) {
	var row store.MCPToken
	err := s.Store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		row, err = tx.MCPTokenGet(ctx, serverID)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return s.open(row.Sealed, serverID)
}

// SaveToken seals and stores a server's tokens; a server no longer stored
// (deleted meanwhile) has none to keep.
func (s StoreTokens) SaveToken(ctx context.Context, serverID uuid.UUID, t StoredToken) error {
	sealed, err := s.seal(t, serverID)
	if err != nil {
		return err
	}
	err = s.Store.InTx(ctx, func(tx store.Tx) error {
		return tx.MCPTokenPut(ctx, store.MCPToken{ServerID: serverID, Sealed: sealed, UpdatedAt: s.now()})
	})
	if errors.Is(err, store.ErrForeignKey) {
		return nil
	}
	return err
}

// ForgetToken deletes a server's tokens.
func (s StoreTokens) ForgetToken(ctx context.Context, serverID uuid.UUID) error {
	return s.Store.InTx(ctx, func(tx store.Tx) error {
		_, err := tx.MCPTokenDelete(ctx, serverID)
		return err
	})
}

// LoadUserToken reads and opens a user's tokens for a per-user server.
func (s StoreTokens) LoadUserToken(ctx context.Context, serverID, userID uuid.UUID) (*StoredToken, error) {
	var row store.MCPUserToken
	err := s.Store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		row, err = tx.MCPUserTokenGet(ctx, serverID, userID)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return s.open(row.Sealed, serverID)
}

// SaveUserToken seals and stores a user's tokens for a per-user server; a
// server or user no longer stored has none to keep.
func (s StoreTokens) SaveUserToken(ctx context.Context, serverID, userID uuid.UUID, t StoredToken) error {
	sealed, err := s.seal(t, serverID)
	if err != nil {
		return err
	}
	err = s.Store.InTx(ctx, func(tx store.Tx) error {
		return tx.MCPUserTokenPut(ctx, store.MCPUserToken{ServerID: serverID, UserID: userID, Sealed: sealed, UpdatedAt: s.now()})
	})
	if errors.Is(err, store.ErrForeignKey) {
		return nil
	}
	return err
}

// ForgetUserToken deletes a user's tokens for a per-user server.
func (s StoreTokens) ForgetUserToken(ctx context.Context, serverID, userID uuid.UUID) error {
	return s.Store.InTx(ctx, func(tx store.Tx) error {
		_, err := tx.MCPUserTokenDelete(ctx, serverID, userID)
		return err
	})
}

func (s StoreTokens) open(sealed []byte, serverID uuid.UUID) (*StoredToken, error) {
	plain, err := s.sealer().Open(sealed)
	if err != nil {
		return nil, fmt.Errorf("open the OAuth tokens of MCP server %s: %w", serverID, err)
	}
	var t StoredToken
	if err := json.Unmarshal(plain, &t); err != nil {
		return nil, fmt.Errorf("decode the OAuth tokens of MCP server %s: %w", serverID, err)
	}
	return &t, nil
}

func (s StoreTokens) seal(t StoredToken, serverID uuid.UUID) ([]byte, error) {
	plain, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	sealed, err := s.sealer().Seal(plain)
	if err != nil {
		return nil, fmt.Errorf("seal the OAuth tokens of MCP server %s: %w", serverID, err)
	}
	return sealed, nil
}

func (s StoreTokens) now() time.Time {
	if s.Clock != nil {
		return s.Clock.Now()
	}
	return time.Now()
}

func (s StoreTokens) sealer() Sealer {
	if s.Sealer == nil {
		return PlainSealer{}
	}
	return s.Sealer
}

// savingSource is a server's token source that stores every new token it
// hands out (the first, and each refresh), so a restart goes on with the
// newest refresh token. A refresh the authorization server refuses
// (another replica may have rotated the refresh token since this one
// loaded it) is retried once with the stored tokens.
type savingSource struct {
	m        *Manager
	serverID uuid.UUID
	user     uuid.UUID // uuid.Nil: the server's shared tokens
	url      string

	mu   sync.Mutex
	cfg  *oauth2.Config
	base oauth2.TokenSource
	last *oauth2.Token // the token last stored (nil: none yet)
}

func (m *Manager) savingSource(s *server, user uuid.UUID, cfg *oauth2.Config, tok *oauth2.Token, stored bool) *savingSource {
	p := &savingSource{m: m, serverID: s.cfg.ID, user: user, url: s.cfg.URL, cfg: cfg, base: cfg.TokenSource(refreshContext(), tok)}
	if stored {
		p.last = tok
	}
	return p
}

// refreshContext is what refreshes run under: not a request's context,
// which ends before the token source does.
func refreshContext() context.Context { return context.Background() }

// Token returns a valid token, refreshing an expired one.
func (p *savingSource) Token() (*oauth2.Token, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, err := p.base.Token()
	var refused *oauth2.RetrieveError
	if errors.As(err, &refused) {
		if st := p.load(); st != nil && st.Token != nil && (p.last == nil || st.Token.RefreshToken != p.last.RefreshToken) {
			p.cfg, p.last = st.config(), st.Token
			p.base = p.cfg.TokenSource(refreshContext(), st.Token)
			t, err = p.base.Token()
		}
	}
	if err != nil {
		return nil, err
	}
	if p.last == nil || t.AccessToken != p.last.AccessToken || t.RefreshToken != p.last.RefreshToken {
		// Stored even while the manager closes: the authorization server
		// may have rotated the refresh token already.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(p.m.ctx), 10*time.Second)
		defer cancel()
		if err := p.m.tokenSave(ctx, p.serverID, p.user, storedToken(p.url, p.cfg, t)); err != nil {
			p.m.log.Warn("store an MCP server's OAuth token", "mcp_server_id", p.serverID, "err", err)
		} else {
			p.last = t
		}
	}
	return t, nil
}

// load reads the stored tokens of the server, nil when none apply.
func (p *savingSource) load() *StoredToken {
	ctx, cancel := context.WithTimeout(p.m.ctx, 10*time.Second)
	defer cancel()
	st, err := p.m.tokenLoad(ctx, p.serverID, p.user)
	if err != nil {
		p.m.log.Warn("read an MCP server's OAuth token", "mcp_server_id", p.serverID, "err", err)
		return nil
	}
	if st == nil || st.URL != p.url {
		return nil
	}
	return st
}
