package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// step is one request of a scenario: who sends it (a name of the tokens
// map; "" is anonymous), what, and the answer expected.
type step struct {
	who, method, path, body string
	status                  int
	code                    string         // the error code when status is not 2xx
	check                   func(b []byte) // more checks of a 2xx body
}

func (h *fixture) run(t *testing.T, tokens map[string]string, steps []step) {
	t.Helper()
	for i, st := range steps {
		var headers []string
		if st.who != "" {
			headers = []string{"Authorization", "Bearer " + tokens[st.who]}
		}
		var body any
		if st.body != "" {
			body = st.body
		}
		for _, prefix := range []string{"/api/v2", "/api/experimental"} {
			if st.method != http.MethodGet && prefix != "/api/v2" {
				continue // state changes run once; reads under both prefixes
			}
			r := h.raw(t, st.method, prefix+st.path, body, headers...)
			name := func() string { return strings.TrimSpace(st.who + " " + st.method + " " + prefix + st.path) }
			if st.status >= 300 {
				requireJSONError(t, r, st.status, st.code)
				continue
			}
			require.Equal(t, st.status, r.status, "step %d %s: %s", i, name(), r.body)
			if st.check != nil {
				st.check(r.body)
			}
		}
	}
}

// The users API by role: admins create, list, disable, enable, promote and
// demote; users and anonymous callers are refused; the last enabled admin
// stays.
func TestUsersAPI(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		tokens := map[string]string{"admin": h.adminToken, "alice": h.aliceToken}
		var bob sdk.User
		h.run(t, tokens, []step{
			{who: "", method: "GET", path: "/users", status: 401, code: sdk.CodeUnauthorized},
			{who: "", method: "POST", path: "/users", body: `{"username":"bob"}`, status: 401, code: sdk.CodeUnauthorized},
			{who: "", method: "PATCH", path: "/users/alice", body: `{"disabled":true}`, status: 401, code: sdk.CodeUnauthorized},
			{who: "alice", method: "GET", path: "/users", status: 403, code: sdk.CodeForbidden},
			{who: "alice", method: "POST", path: "/users", body: `{"username":"bob"}`, status: 403, code: sdk.CodeForbidden},
			{who: "alice", method: "PATCH", path: "/users/me", body: `{"admin":true}`, status: 403, code: sdk.CodeForbidden},
			{who: "admin", method: "POST", path: "/users", body: `{"username":"bob"}`, status: 201, check: func(b []byte) {
				bob = decode[sdk.User](t, b)
				require.Equal(t, "bob", bob.Name)
				require.False(t, bob.Admin || bob.Disabled)
			}},
			{who: "admin", method: "POST", path: "/users", body: `{"username":"bob"}`, status: 409, code: sdk.CodeUserExists},
			{who: "admin", method: "POST", path: "/users", body: `{"username":"me"}`, status: 400, code: sdk.CodeValidation},
			{who: "admin", method: "POST", path: "/users", body: `{"username":""}`, status: 400, code: sdk.CodeValidation},
			{who: "admin", method: "GET", path: "/users", status: 200, check: func(b []byte) {
				res := decode[sdk.UsersResponse](t, b)
				require.Equal(t, 3, res.Count)
				var names []string
				for _, u := range res.Users {
					names = append(names, u.Name)
				}
				require.Equal(t, []string{"admin", "alice", "bob"}, names)
			}},
			{who: "admin", method: "PATCH", path: "/users/nobody", body: `{"disabled":true}`, status: 404, code: sdk.CodeNotFound},
			{who: "admin", method: "PATCH", path: "/users/alice", body: `{"disabled":"yes"}`, status: 400, code: sdk.CodeValidation},
			// The bootstrap admin is the only admin.
			{who: "admin", method: "PATCH", path: "/users/me", body: `{"admin":false}`, status: 409, code: sdk.CodeLastAdmin},
			{who: "admin", method: "PATCH", path: "/users/admin", body: `{"disabled":true}`, status: 409, code: sdk.CodeLastAdmin},
			{who: "admin", method: "GET", path: "/users/me", status: 200, check: func(b []byte) {
				require.True(t, decode[sdk.User](t, b).Admin, "a refused change changed nothing")
			}},
			// Disabling alice stops her token at once; enabling brings it back.
			{who: "alice", method: "GET", path: "/users/me", status: 200},
			{who: "admin", method: "PATCH", path: "/users/alice", body: `{"disabled":true}`, status: 200, check: func(b []byte) {
				require.True(t, decode[sdk.User](t, b).Disabled)
			}},
			{who: "alice", method: "GET", path: "/users/me", status: 401, code: sdk.CodeUnauthorized},
			{who: "alice", method: "GET", path: "/chats", status: 401, code: sdk.CodeUnauthorized},
			{who: "admin", method: "PATCH", path: "/users/alice", body: `{"disabled":false}`, status: 200},
			{who: "alice", method: "GET", path: "/users/me", status: 200},
			// With a second admin the first can step down.
			{who: "admin", method: "PATCH", path: "/users/alice", body: `{"admin":true}`, status: 200, check: func(b []byte) {
				require.True(t, decode[sdk.User](t, b).Admin)
			}},
			{who: "alice", method: "GET", path: "/users", status: 200},
			{who: "alice", method: "PATCH", path: "/users/admin", body: `{"admin":false}`, status: 200},
			{who: "admin", method: "GET", path: "/users", status: 403, code: sdk.CodeForbidden},
			{who: "alice", method: "PATCH", path: "/users/me", body: `{"disabled":true}`, status: 409, code: sdk.CodeLastAdmin},
		})
		// By id works as by name.
		h.run(t, tokens, []step{
			{who: "alice", method: "PATCH", path: "/users/" + bob.ID.String(), body: `{"disabled":true}`, status: 200, check: func(b []byte) {
				require.Equal(t, bob.ID, decode[sdk.User](t, b).ID)
			}},
		})
	})
}

// The tokens API by role: everyone lists, creates and revokes their own
// tokens; admins list and revoke anyone's; the secret is shown once.
func TestTokensAPI(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		_, _, bobToken := h.newUser(t, "bob")
		tokens := map[string]string{"admin": h.adminToken, "alice": h.aliceToken, "bob": bobToken}
		var made sdk.GenerateAPIKeyResponse
		expires := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
		h.run(t, tokens, []step{
			{who: "", method: "GET", path: "/users/me/tokens", status: 401, code: sdk.CodeUnauthorized},
			{who: "", method: "POST", path: "/users/me/tokens", body: `{"token_name":"x"}`, status: 401, code: sdk.CodeUnauthorized},
			{who: "alice", method: "GET", path: "/users/me/tokens", status: 200, check: func(b []byte) {
				list := decode[[]sdk.APIKey](t, b)
				require.Len(t, list, 1)
				require.Equal(t, "test", list[0].TokenName)
				require.Equal(t, "alice", list[0].Username)
				require.NotContains(t, string(b), h.aliceToken)
			}},
			{who: "alice", method: "GET", path: "/users/bob/tokens", status: 403, code: sdk.CodeForbidden},
			{who: "alice", method: "GET", path: "/users/nobody/tokens", status: 403, code: sdk.CodeForbidden},
			{who: "alice", method: "POST", path: "/users/me/tokens", body: `{"token_name":""}`, status: 400, code: sdk.CodeValidation},
			{who: "alice", method: "POST", path: "/users/me/tokens", body: `{"token_name":"ci","lifetime":-1}`, status: 400, code: sdk.CodeValidation},
			{who: "alice", method: "POST", path: "/users/me/tokens", body: `{"token_name":"ci","expires_at":"2001-01-01T00:00:00Z"}`, status: 400, code: sdk.CodeValidation},
			{who: "alice", method: "POST", path: "/users/me/tokens", body: `{"token_name":"ci","lifetime":1,"expires_at":"2101-01-01T00:00:00Z"}`, status: 400, code: sdk.CodeValidation},
			{who: "alice", method: "POST", path: "/users/bob/tokens", body: `{"token_name":"x"}`, status: 403, code: sdk.CodeForbidden},
			{who: "admin", method: "POST", path: "/users/bob/tokens", body: `{"token_name":"x"}`, status: 403, code: sdk.CodeForbidden},
			{who: "alice", method: "POST", path: "/users/alice/tokens", body: `{"token_name":"ci","expires_at":"` + expires.Format(time.RFC3339) + `"}`, status: 201, check: func(b []byte) {
				made = decode[sdk.GenerateAPIKeyResponse](t, b)
				require.True(t, strings.HasPrefix(made.Key, auth.TokenPrefix))
				require.Equal(t, "ci", made.Token.TokenName)
				require.Equal(t, "api", made.Token.Kind)
				require.True(t, expires.Equal(*made.Token.ExpiresAt))
			}},
		})
		tokens["ci"] = made.Key
		tid := made.Token.ID.String()
		h.run(t, tokens, []step{
			{who: "ci", method: "GET", path: "/users/me", status: 200},
			{who: "alice", method: "GET", path: "/users/me/tokens", status: 200, check: func(b []byte) {
				require.Len(t, decode[[]sdk.APIKey](t, b), 2)
				require.NotContains(t, string(b), made.Key, "the secret is shown once")
			}},
			{who: "admin", method: "GET", path: "/users/alice/tokens", status: 200, check: func(b []byte) {
				require.Len(t, decode[[]sdk.APIKey](t, b), 2)
			}},
			{who: "admin", method: "GET", path: "/users/nobody/tokens", status: 404, code: sdk.CodeNotFound},
			{who: "bob", method: "DELETE", path: "/users/me/tokens/" + tid, status: 404, code: sdk.CodeNotFound},
			{who: "bob", method: "DELETE", path: "/users/alice/tokens/" + tid, status: 403, code: sdk.CodeForbidden},
			{who: "alice", method: "DELETE", path: "/users/me/tokens/not-a-uuid", status: 404, code: sdk.CodeNotFound},
			{who: "alice", method: "DELETE", path: "/users/me/tokens/" + tid, status: 204},
			{who: "ci", method: "GET", path: "/users/me", status: 401, code: sdk.CodeUnauthorized},
			{who: "alice", method: "DELETE", path: "/users/me/tokens/" + tid, status: 404, code: sdk.CodeNotFound},
		})
		// An admin revokes another user's token; a lifetime in nanoseconds
		// (Coder's) sets the expiry.
		var bobs []sdk.APIKey
		h.run(t, tokens, []step{
			{who: "bob", method: "POST", path: "/users/me/tokens", body: `{"token_name":"day","lifetime":86400000000000}`, status: 201, check: func(b []byte) {
				res := decode[sdk.GenerateAPIKeyResponse](t, b)
				require.WithinDuration(t, time.Now().Add(24*time.Hour), *res.Token.ExpiresAt, time.Hour)
			}},
			{who: "admin", method: "GET", path: "/users/bob/tokens", status: 200, check: func(b []byte) { bobs = decode[[]sdk.APIKey](t, b) }},
		})
		require.Len(t, bobs, 2)
		h.run(t, tokens, []step{
			{who: "admin", method: "DELETE", path: "/users/bob/tokens/" + bobs[0].ID.String(), status: 204},
			{who: "bob", method: "GET", path: "/users/me", status: 401, code: sdk.CodeUnauthorized},
		})
	})
}

// A login code is exchanged once for a session; a second exchange is a
// clear 401 LOGIN_CODE_INVALID.
func TestLoginWithCode(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		code, _, err := auth.New(h.app.Internals().Store, nil, nil, auth.Config{}).CreateLoginCode(h.ctx, "alice")
		require.NoError(t, err)
		body, err := json.Marshal(sdk.LoginRequest{Code: code})
		require.NoError(t, err)
		r := h.raw(t, "POST", "/api/v2/auth/login", string(body))
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		require.Equal(t, h.aliceID, decode[sdk.User](t, r.body).ID)
		var cookie string
		for _, c := range (&http.Response{Header: r.header}).Cookies() {
			if c.Name == "chatd_session" {
				cookie = c.Name + "=" + c.Value
			}
		}
		require.NotEmpty(t, cookie)
		r = h.raw(t, "GET", "/api/v2/users/me", nil, "Cookie", cookie)
		require.Equal(t, http.StatusOK, r.status)

		r = h.raw(t, "POST", "/api/v2/auth/login", string(body))
		e := requireJSONError(t, r, http.StatusUnauthorized, sdk.CodeLoginCodeInvalid)
		require.Contains(t, e.Detail, "chatd login-link")
		require.Empty(t, r.header.Values("Set-Cookie"))
		r = h.raw(t, "POST", "/api/v2/auth/login", `{"code":"chatdlc_nope"}`)
		requireJSONError(t, r, http.StatusUnauthorized, sdk.CodeLoginCodeInvalid)
		r = h.raw(t, "POST", "/api/v2/auth/login", `{"code":"x","token":"y"}`)
		requireJSONError(t, r, http.StatusBadRequest, sdk.CodeValidation)
		// A code is not a bearer token.
		code, _, err = auth.New(h.app.Internals().Store, nil, nil, auth.Config{}).CreateLoginCode(h.ctx, "alice")
		require.NoError(t, err)
		r = h.raw(t, "GET", "/api/v2/users/me", nil, "Authorization", "Bearer "+code)
		requireJSONError(t, r, http.StatusUnauthorized, sdk.CodeUnauthorized)
	})
}
