package e2e_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// authFixture is a started app with an admin, alice and carol (an admin).
type authFixture struct {
	ctx                    context.Context
	app                    *app.App
	srv                    *httptest.Server
	admin, alice           *sdk.Client
	aliceID, carolID       uuid.UUID
	aliceToken, carolToken string
}

func setupAuth(t *testing.T, newStore func(t testing.TB) store.Store, interval time.Duration) *authFixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	h := apptest.Start(t, apptest.Options{Store: newStore, Config: config.Config{StreamAuthInterval: interval}})
	d := &authFixture{ctx: ctx, app: h.App, srv: h.Server, admin: h.Admin}
	var u store.User
	d.aliceToken, u = h.CreateToken(t, "alice", false)
	d.alice, d.aliceID = h.Client(d.aliceToken), u.ID
	d.carolToken, u = h.CreateToken(t, "carol", true)
	d.carolID = u.ID
	return d
}

// dialStream opens path (a chat stream or the watch) as token and returns
// a channel that yields the close status once the server ends it.
func (d *authFixture) dialStream(t *testing.T, path, token string) <-chan websocket.StatusCode {
	t.Helper()
	ctx, cancel := context.WithCancel(d.ctx)
	url := "ws" + strings.TrimPrefix(d.srv.URL, "http") + "/api/v2" + path
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	require.NoError(t, err)
	closed := make(chan websocket.StatusCode, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, _, err := conn.Read(ctx); err != nil {
				closed <- websocket.CloseStatus(err)
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); conn.CloseNow(); <-done })
	return closed
}

func awaitClose(t *testing.T, closed <-chan websocket.StatusCode, want websocket.StatusCode, what string) {
	t.Helper()
	select {
	case got := <-closed:
		require.Equal(t, want, got, what)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: the stream stayed open", what)
	}
}

// requireOpen checks that the stream is still open by the time a request
// that would have ended it has been answered.
func requireOpen(t *testing.T, closed <-chan websocket.StatusCode, what string) {
	t.Helper()
	select {
	case got := <-closed:
		t.Fatalf("%s: the stream closed (%d)", what, got)
	default:
	}
}

// Open streams end, with close status 1008, when the credential they were
// opened with stops being valid: its token revoked, its user disabled, or
// (for another user's chat) its admin rights taken; the user's other
// streams with still valid tokens stay. Reconnecting is refused.
func TestStreamsEndWhenCredentialsAreRevoked(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		// A long interval: only the revocations made here can end the
		// streams within the test.
		d := setupAuth(t, newStore, time.Hour)
		ctx := d.ctx
		chat, err := d.alice.CreateChat(ctx, sdk.CreateChatRequest{Title: "watched"})
		require.NoError(t, err)

		// A second token of alice's; carol, an admin, views alice's chat.
		var second sdk.GenerateAPIKeyResponse
		require.NoError(t, d.alice.Do(ctx, "POST", "/users/me/tokens", map[string]any{"token_name": "second"}, &second))

		chatPath := "/chats/" + chat.ID.String() + "/stream"
		byFirst := d.dialStream(t, chatPath, d.alice.Token)
		watchFirst := d.dialStream(t, "/chats/watch", d.alice.Token)
		bySecond := d.dialStream(t, chatPath, second.Key)
		byCarol := d.dialStream(t, chatPath, d.carolToken)

		// Revoking the first token ends its two streams, not the second's.
		require.NoError(t, d.alice.Do(ctx, "DELETE", "/users/me/tokens/"+d.tokenID(t, "test").String(), nil, nil))
		awaitClose(t, byFirst, websocket.StatusPolicyViolation, "chat stream of a revoked token")
		awaitClose(t, watchFirst, websocket.StatusPolicyViolation, "watch of a revoked token")
		requireOpen(t, bySecond, "the stream of alice's other token")
		_, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(d.srv.URL, "http")+"/api/v2"+chatPath,
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + d.aliceToken}}})
		require.Error(t, err, "a revoked token cannot reconnect")
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

		// Carol stops being an admin: alice's chat is no longer hers to see.
		require.NoError(t, d.admin.Do(ctx, "PATCH", "/users/"+d.carolID.String(), map[string]any{"admin": false}, nil))
		awaitClose(t, byCarol, websocket.StatusPolicyViolation, "an admin's view of another user's chat after demotion")
		requireOpen(t, bySecond, "alice's stream while carol is demoted")

		// Disabling alice ends the rest.
		require.NoError(t, d.admin.Do(ctx, "PATCH", "/users/"+d.aliceID.String(), map[string]any{"disabled": true}, nil))
		awaitClose(t, bySecond, websocket.StatusPolicyViolation, "the stream of a disabled user")
	})
}

// A revocation this replica did not see (the CLI, another replica) ends
// the stream at its next periodic check.
func TestStreamsNoticeRevocationsMadeElsewhere(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		d := setupAuth(t, newStore, 20*time.Millisecond)
		chat, err := d.alice.CreateChat(d.ctx, sdk.CreateChatRequest{Title: "watched"})
		require.NoError(t, err)
		closed := d.dialStream(t, "/chats/"+chat.ID.String()+"/stream", d.aliceToken)
		kept := d.dialStream(t, "/chats/"+chat.ID.String()+"/stream", d.carolToken)
		// Straight in the store, as `chatd token revoke` on another process does.
		require.NoError(t, auth.RevokeToken(d.ctx, d.app.Internals().Store, d.aliceToken))
		awaitClose(t, closed, websocket.StatusPolicyViolation, "after a revocation made in the database")
		// Carol's stream went through many checks meanwhile and stays.
		requireOpen(t, kept, "a valid token's stream")
	})
}

// tokenID is the id of alice's token named name.
func (d *authFixture) tokenID(t *testing.T, name string) uuid.UUID {
	t.Helper()
	var keys []sdk.APIKey
	require.NoError(t, d.alice.Do(d.ctx, "GET", "/users/me/tokens", nil, &keys))
	for _, k := range keys {
		if k.TokenName == name {
			return k.ID
		}
	}
	t.Fatalf("alice has no token named %q", name)
	return uuid.Nil
}
