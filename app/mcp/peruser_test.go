package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/mcp/mcptest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
)

// memTokens is a TokenStore and UserTokenStore in memory.
type memTokens struct {
	mu     sync.Mutex
	shared map[uuid.UUID]StoredToken
	users  map[[2]uuid.UUID]StoredToken
}

func (m *memTokens) LoadToken(_ context.Context, id uuid.UUID) (*StoredToken, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.shared[id]; ok {
		return &t, nil
	}
	return nil, nil
}

func (m *memTokens) SaveToken(_ context.Context, id uuid.UUID, t StoredToken) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.shared[id] = t
	return nil
}

func (m *memTokens) ForgetToken(_ context.Context, id uuid.UUID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.shared, id)
	return nil
}

func (m *memTokens) LoadUserToken(_ context.Context, id, user uuid.UUID) (*StoredToken, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.users[[2]uuid.UUID{id, user}]; ok {
		return &t, nil
	}
	return nil, nil
}

func (m *memTokens) SaveUserToken(_ context.Context, id, user uuid.UUID, t StoredToken) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.users[[2]uuid.UUID{id, user}] = t
	return nil
}

func (m *memTokens) ForgetUserToken(_ context.Context, id, user uuid.UUID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.users, [2]uuid.UUID{id, user})
	return nil
}

func (m *memTokens) has(id, user uuid.UUID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.users[[2]uuid.UUID{id, user}]
	return ok
}

// A per-user server: each user connects it for themselves; a call runs
// on its chat owner's session only (a user without one, or a call with
// no owner, gets NeedsUserAuthError); the session closes when idle and
// reopens from the stored tokens without consent; a disconnect closes it
// and forgets the user's tokens, not the other user's; a shared server or
// an unknown one is no user's to connect.
func TestPerUserSessions(t *testing.T) {
	t.Parallel()
	v := mcptest.StartPersonVault(t)
	var m *Manager
	redirect := serveCallback(t, &m)
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	tokens := &memTokens{shared: map[uuid.UUID]StoredToken{}, users: map[[2]uuid.UUID]StoredToken{}}
	id := ServerID("vault")
	m = NewManager(Config{Servers: []Server{
		{Name: "vault", ID: id, URL: v.URL, Timeout: DefaultTimeout, OAuth: &OAuth{PerUser: true}},
		{Name: "shared", ID: ServerID("shared"), URL: v.URL, Timeout: DefaultTimeout},
	}}, Options{OAuthRedirectURL: func() string { return redirect }, Tokens: tokens, Clock: clk})
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	alice := tools.User{ID: uuid.New(), Name: "alice"}
	bob := tools.User{ID: uuid.New(), Name: "bob"}
	vault := func(u tools.User) sdk.MCPServer {
		for _, s := range m.Status(t.Context(), u) {
			if s.Name == "vault" {
				return s
			}
		}
		t.Fatal("no vault")
		return sdk.MCPServer{}
	}
	run := func(owner tools.User) (string, error) {
		t.Helper()
		tool := find(t, m.Tools(t.Context(), owner, []uuid.UUID{id}), "vault__whoami")
		ctx := tools.WithCall(t.Context(), tools.Call{ChatID: uuid.New(), OwnerID: owner.ID, ToolCallID: "c"})
		out, err := tool.Run(ctx, json.RawMessage(`{}`))
		return string(out), err
	}
	needs := func(err error) {
		t.Helper()
		var need *NeedsUserAuthError
		require.True(t, errors.As(err, &need), "%v", err)
		require.Contains(t, err.Error(), "connect vault in Settings")
	}

	// An admin's Test of the server does not wait for a consent nobody
	// gives: it says the server is each user's to connect.
	res := m.Test(t.Context(), m.byID[id].cfg)
	require.False(t, res.OK)
	require.Contains(t, *res.Error, "connect vault in Settings")

	st := vault(alice)
	require.Equal(t, &sdk.MCPAuthStatus{Status: sdk.MCPAuthNeedsUserAuthorization, PerUser: true}, st.Auth)
	require.Equal(t, sdk.MCPStateFailed, st.State)
	require.Empty(t, m.Tools(t.Context(), alice, []uuid.UUID{id}), "no user's session listed the tools yet")

	_, err := m.ConnectUser(t.Context(), ServerID("shared"), alice)
	require.ErrorIs(t, err, ErrNotPerUser)
	_, err = m.ConnectUser(t.Context(), ServerID("nope"), alice)
	require.ErrorIs(t, err, ErrNoSuchServer)

	a, err := m.ConnectUser(t.Context(), id, alice)
	require.NoError(t, err)
	require.Equal(t, sdk.MCPAuthNeedsAuthorization, a.Status)
	require.True(t, a.PerUser)
	mcptest.Consent(t, a.AuthorizationURL, "alice")
	require.Eventually(t, func() bool { return vault(alice).State == sdk.MCPStateConnected }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, sdk.MCPAuthNeedsUserAuthorization, vault(bob).Auth.Status, "alice's connection is not bob's")

	out, err := run(alice)
	require.NoError(t, err)
	require.Contains(t, out, "you are alice")
	_, err = run(bob)
	needs(err)
	// Resources and prompts too ask the caller's own connection.
	_, err = m.Resources(t.Context(), bob, id, "")
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorContains(t, err, "connect vault in Settings")
	_, err = m.Resources(t.Context(), alice, id, "")
	require.ErrorIs(t, err, ErrUnsupported, "alice's session answers: the vault has no resources")
	tool := find(t, m.Tools(t.Context(), alice, []uuid.UUID{id}), "vault__whoami")
	_, err = tool.Run(t.Context(), json.RawMessage(`{}`))
	needs(err) // no chat, no owner: nobody's connection

	// Idle: the session closes, and the next call reopens it from the
	// stored tokens, without consent.
	s := m.byID[id]
	s.usersMu.Lock()
	first := s.users[alice.ID].session
	s.usersMu.Unlock()
	clk.Advance(DefaultUserSessionIdle)
	require.Eventually(t, func() bool {
		s.usersMu.Lock()
		defer s.usersMu.Unlock()
		return s.users[alice.ID].session == nil
	}, 10*time.Second, 10*time.Millisecond, "the idle session closed")
	select {
	case <-first.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the idle session still runs")
	}
	out, err = run(alice)
	require.NoError(t, err)
	require.Contains(t, out, "you are alice")
	require.Equal(t, 1, v.Consents("alice"))

	v.ShortTokens() // bob's expire at once: every use refreshes them
	b, err := m.ConnectUser(t.Context(), id, bob)
	require.NoError(t, err)
	mcptest.Consent(t, b.AuthorizationURL, "bob")
	require.Eventually(t, func() bool { return vault(bob).State == sdk.MCPStateConnected }, 10*time.Second, 10*time.Millisecond)
	tokens.mu.Lock()
	granted := tokens.users[[2]uuid.UUID{id, bob.ID}].Token.RefreshToken
	tokens.mu.Unlock()
	out, err = run(bob)
	require.NoError(t, err)
	require.Contains(t, out, "you are bob")
	require.Positive(t, v.Refreshes("bob"), "bob's expired token was refreshed")
	tokens.mu.Lock()
	refreshed := tokens.users[[2]uuid.UUID{id, bob.ID}].Token.RefreshToken
	tokens.mu.Unlock()
	require.NotEqual(t, granted, refreshed, "and the refreshed pair stored as bob's")
	require.Zero(t, v.Refreshes("alice"))

	s.usersMu.Lock()
	live := s.users[alice.ID].session
	s.usersMu.Unlock()
	require.NoError(t, m.DisconnectUser(id, alice))
	<-live.done
	require.False(t, tokens.has(id, alice.ID), "alice's tokens are forgotten")
	require.True(t, tokens.has(id, bob.ID), "bob's stay")
	_, err = run(alice)
	needs(err)
	out, err = run(bob)
	require.NoError(t, err)
	require.Contains(t, out, "you are bob")
	require.ErrorIs(t, m.DisconnectUser(ServerID("shared"), alice), ErrNotPerUser)
}

// A PATCH's "oauth": {"client_secret": null} keeps the stored secret (the
// edit form's per-user checkbox sends the registration back that way); a
// null with no stored secret is refused; a given secret or none is left.
func TestKeepOAuthSecret(t *testing.T) {
	t.Parallel()
	stored := &OAuth{ClientID: "id-1", ClientSecret: "s3cret"}
	fields := map[string]json.RawMessage{"oauth": json.RawMessage(`{"client_id":"id-1","client_secret":null,"per_user":true}`)}
	require.NoError(t, keepOAuthSecret(fields, stored))
	require.JSONEq(t, `{"client_id":"id-1","client_secret":"s3cret","per_user":true}`, string(fields["oauth"]))

	fields = map[string]json.RawMessage{"oauth": json.RawMessage(`{"client_secret":null}`)}
	require.ErrorIs(t, keepOAuthSecret(fields, nil), ErrInvalid)

	for _, raw := range []string{`{"client_id":"x","client_secret":"new"}`, `{"per_user":true}`, `null`} {
		fields = map[string]json.RawMessage{"oauth": json.RawMessage(raw)}
		require.NoError(t, keepOAuthSecret(fields, stored))
		require.Equal(t, raw, string(fields["oauth"]))
	}
	cfg, err := ParseConfig([]byte(`{"mcpServers": {"gh": {"url": "https://example.com/mcp", "oauth": {"per_user": true}}}}`))
	require.NoError(t, err)
	require.True(t, cfg.Servers[0].OAuth.PerUser)
	require.Equal(t, &sdk.MCPOAuthConfig{PerUser: true}, oauthConfigOf(cfg.Servers[0].OAuth))
}
