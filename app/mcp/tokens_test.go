package mcp

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// A server an admin authorized stays authorized across a restart on the
// same database: its client and tokens are stored sealed, a new manager
// connects with them without asking for consent, an expired access token
// is refreshed with the stored refresh token (and the new pair stored),
// and a reconnect forgets them. Both stores.
func TestOAuthTokensSurviveARestart(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		p := startProtected(t)
		st := newStore(t)
		tokens := StoreTokens{Store: st, Sealer: reverseSealer{}}
		var m *Manager
		redirect := serveCallback(t, &m)
		closers := map[*Manager]func() error{}
		// start runs a process's manager on st, with its stored servers.
		start := func() *Manager {
			t.Helper()
			m = NewManager(Config{}, Options{OAuthRedirectURL: func() string { return redirect }, Tokens: tokens})
			a := NewServers(m, ServersOptions{Store: st, Sealer: reverseSealer{},
				File: Config{Servers: []Server{{Name: "vault", ID: ServerID("vault"), URL: p.url, Timeout: DefaultTimeout}}}})
			require.NoError(t, a.Seed(t.Context()))
			require.NoError(t, a.Reload(t.Context()))
			mm := m
			var once sync.Once
			// Closed here too should the test fail first: the servers'
			// Close waits for the manager's open streams.
			t.Cleanup(func() { once.Do(func() { _ = mm.Close() }) })
			closers[mm] = func() error {
				var err error
				once.Do(func() { err = mm.Close() })
				return err
			}
			return m
		}
		call := func(m *Manager) {
			t.Helper()
			out, err := find(t, m.Tools(t.Context(), anAdmin, nil), "vault__secret").Run(t.Context(), json.RawMessage(`{}`))
			require.NoError(t, err)
			require.JSONEq(t, `"42"`, string(out))
		}
		stored := func() *StoredToken {
			t.Helper()
			tok, err := tokens.LoadToken(t.Context(), ServerID("vault"))
			require.NoError(t, err)
			return tok
		}

		m1 := start()
		require.Nil(t, stored())
		var authURL string
		require.Eventually(t, func() bool {
			if a := m1.Status(t.Context(), anAdmin)[0].Auth; a != nil && a.Status == sdk.MCPAuthNeedsAuthorization {
				authURL = a.AuthorizationURL
			}
			return authURL != ""
		}, 10*time.Second, 10*time.Millisecond)
		resp, err := http.Get(authURL)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		call(m1)
		tok := stored()
		require.NotNil(t, tok, "the token is stored")
		require.Equal(t, "tok-1", tok.Token.AccessToken)
		require.Equal(t, "ref-1", tok.Token.RefreshToken)
		require.Equal(t, "dyn-1", tok.ClientID, "with the registered client")
		require.Equal(t, p.url, tok.URL)
		require.NoError(t, st.ReadTx(t.Context(), func(tx store.Reader) error {
			row, err := tx.MCPTokenGet(t.Context(), ServerID("vault"))
			require.NotContains(t, string(row.Sealed), "tok-1", "sealed")
			require.NotContains(t, string(row.Sealed), "ref-1", "sealed")
			return err
		}))
		require.NoError(t, closers[m1]())

		// A restart: connected with the stored token, no consent asked.
		m2 := start()
		call(m2)
		require.Equal(t, sdk.MCPStateConnected, m2.Status(t.Context(), anAdmin)[0].State)
		require.Equal(t, &sdk.MCPAuthStatus{Status: sdk.MCPAuthAuthorized}, m2.Status(t.Context(), anAdmin)[0].Auth)
		require.NoError(t, closers[m2]())
		p.mu.Lock()
		require.Len(t, p.challenges, 1, "one consent in all")
		require.Zero(t, p.refreshes)
		p.mu.Unlock()

		// The stored access token has expired by the next start: it is
		// refreshed, and the new pair is stored.
		tok = stored()
		tok.Token.Expiry = time.Now().Add(-time.Minute)
		require.NoError(t, tokens.SaveToken(t.Context(), ServerID("vault"), *tok))
		m3 := start()
		call(m3)
		p.mu.Lock()
		require.Equal(t, 1, p.refreshes)
		require.Len(t, p.challenges, 1)
		p.mu.Unlock()
		tok = stored()
		require.Equal(t, "tok-2", tok.Token.AccessToken)
		require.Equal(t, "ref-2", tok.Token.RefreshToken)

		// Reconnect forgets the stored tokens.
		require.True(t, m3.Reconnect(ServerID("vault")))
		require.Nil(t, stored())
		require.Eventually(t, func() bool {
			a := m3.Status(t.Context(), anAdmin)[0].Auth
			return a != nil && a.Status == sdk.MCPAuthNeedsAuthorization
		}, 10*time.Second, 10*time.Millisecond)
		require.NoError(t, closers[m3]())
	})
}
