package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/admin"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// Bad requests get a 4xx with the protocol's error, never a 500.
func TestHandlerRefusesBadRequests(t *testing.T) {
	t.Parallel()
	ops := &admin.Ops{Tokens: auth.New(dbtest.NewSQLite(t), clock.Real{}, nil, auth.Config{})}
	srv := httptest.NewServer(admin.Handler(ops))
	defer srv.Close()
	for _, tc := range []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"POST", "/v1/token.list", `{`, 400, admin.CodeBadRequest},
		{"POST", "/v1/token.list", `{"user":1}`, 400, admin.CodeBadRequest},
		{"POST", "/v1/token.list", `{"nope":true}`, 400, admin.CodeBadRequest},
		{"POST", "/v1/token.list", `{"user":"nobody"}`, 404, admin.CodeNotFound},
		{"POST", "/v1/token.create", `{}`, 400, admin.CodeBadRequest},
		{"POST", "/v1/token.revoke", `{}`, 400, admin.CodeBadRequest},
		{"POST", "/v1/token.revoke", `{"user":"a"}`, 400, admin.CodeBadRequest},
		{"POST", "/v1/token.revoke", `{"id":"` + uuid.NewString() + `","user":"a","all":true}`, 400, admin.CodeBadRequest},
		{"POST", "/v1/token.revoke", `{"id":"` + uuid.NewString() + `"}`, 404, admin.CodeNotFound},
		{"POST", "/v1/token.revoke", `{"user":"nobody","all":true}`, 404, admin.CodeNotFound},
		{"POST", "/v1/frobnicate", `{}`, 404, admin.CodeNotFound},
		{"GET", "/v1/token.list", ``, 404, admin.CodeNotFound},
		{"POST", "/v1/token.list", strings.Repeat(" ", 2<<20), 413, admin.CodeBadRequest},
	} {
		req, err := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
		require.NoError(t, err)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var e admin.Error
		require.NoError(t, json.NewDecoder(res.Body).Decode(&e), "%s %s", tc.method, tc.path)
		res.Body.Close()
		require.Equal(t, tc.status, res.StatusCode, "%s %s %s: %s", tc.method, tc.path, tc.body, e.Message)
		require.Equal(t, tc.code, e.Code)
		require.NotEmpty(t, e.Message)
	}
}

// The in-process client answers exactly like the handler: same JSON, same
// errors.
func TestLocalMatchesHandler(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		ctx := context.Background()
		c := admin.Local(&admin.Ops{Tokens: auth.New(newStore(t), clock.Real{}, nil, auth.Config{})})
		var created admin.TokenCreateResponse
		require.NoError(t, c.Call(ctx, admin.CmdTokenCreate, admin.TokenCreateRequest{User: "alice", Label: "x"}, &created))
		require.True(t, strings.HasPrefix(created.Token, auth.TokenPrefix))
		var list admin.TokenListResponse
		require.NoError(t, c.Call(ctx, admin.CmdTokenList, admin.TokenListRequest{}, &list))
		require.Equal(t, []auth.TokenInfo{created.Info}, list.Tokens)
		var revoked admin.TokenRevokeResponse
		err := c.Call(ctx, admin.CmdTokenRevoke, admin.TokenRevokeRequest{ID: uuid.New()}, &revoked)
		require.ErrorIs(t, err, store.ErrNotFound)
		err = c.Call(ctx, admin.CmdTokenRevoke, admin.TokenRevokeRequest{}, &revoked)
		var e *admin.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, admin.CodeBadRequest, e.Code)
		require.NoError(t, c.Call(ctx, admin.CmdTokenRevoke, admin.TokenRevokeRequest{ID: created.Info.ID}, &revoked))
		require.Equal(t, int64(1), revoked.Revoked)
	})
}
