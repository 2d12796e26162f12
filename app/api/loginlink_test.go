package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// An admin creates a login link for a user (what `chatd login-link` does):
// the code signs that user in once; others are refused, a disabled user
// gets none, an unknown one is 404.
func TestLoginLinkAPI(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		tokens := map[string]string{"admin": h.adminToken, "alice": h.aliceToken}
		var link sdk.LoginLink
		h.run(t, tokens, []step{
			{who: "", method: "POST", path: "/users/alice/login-link", status: 401, code: sdk.CodeUnauthorized},
			{who: "alice", method: "POST", path: "/users/alice/login-link", status: 403, code: sdk.CodeForbidden},
			{who: "alice", method: "POST", path: "/users/me/login-link", status: 403, code: sdk.CodeForbidden},
			{who: "admin", method: "POST", path: "/users/nobody/login-link", status: 404, code: sdk.CodeNotFound},
			{who: "admin", method: "POST", path: "/users/alice/login-link", status: 201, check: func(b []byte) {
				link = decode[sdk.LoginLink](t, b)
				require.True(t, strings.HasPrefix(link.Code, "chatdlc_"), link.Code)
				require.Equal(t, "/login#code="+link.Code, link.Path)
				require.WithinDuration(t, time.Now().Add(15*time.Minute), link.ExpiresAt, time.Minute)
			}},
		})
		body, err := json.Marshal(sdk.LoginRequest{Code: link.Code})
		require.NoError(t, err)
		r := h.raw(t, "POST", "/api/v2/auth/login", string(body))
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		require.Equal(t, h.aliceID, decode[sdk.User](t, r.body).ID, "the code signs in the user it was made for")
		requireJSONError(t, h.raw(t, "POST", "/api/v2/auth/login", string(body)), http.StatusUnauthorized, sdk.CodeLoginCodeInvalid)

		h.run(t, tokens, []step{
			{who: "admin", method: "PATCH", path: "/users/alice", body: `{"disabled":true}`, status: 200},
			{who: "admin", method: "POST", path: "/users/alice/login-link", status: 409, code: sdk.CodeUserDisabled},
			{who: "admin", method: "POST", path: "/users/me/login-link", status: 201},
		})
	})
}
