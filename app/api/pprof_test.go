package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store/dbtest"
)

// TestPprof: the profiles are off by default (404, like an unknown path,
// whoever asks); on, they are for admins only.
func TestPprof(t *testing.T) {
	t.Parallel()
	t.Run("off", func(t *testing.T) {
		t.Parallel()
		h := setupOn(t, dbtest.NewSQLite(t))
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/cmdline"} {
			requireJSONError(t, h.raw(t, "GET", path, nil, "Authorization", "Bearer "+h.adminToken), http.StatusNotFound, sdk.CodeNotFound)
			requireJSONError(t, h.raw(t, "GET", path, nil), http.StatusNotFound, sdk.CodeNotFound)
		}
	})
	t.Run("on", func(t *testing.T) {
		t.Parallel()
		h := setupOn(t, dbtest.NewSQLite(t), func(c *config.Config) { c.Pprof = true })
		requireJSONError(t, h.raw(t, "GET", "/debug/pprof/", nil), http.StatusUnauthorized, sdk.CodeUnauthorized)
		requireJSONError(t, h.raw(t, "GET", "/debug/pprof/heap", nil, "Authorization", "Bearer "+h.aliceToken), http.StatusForbidden, sdk.CodeForbidden)

		r := h.raw(t, "GET", "/debug/pprof/", nil, "Authorization", "Bearer "+h.adminToken)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		require.Contains(t, string(r.body), "goroutine")
		r = h.raw(t, "GET", "/debug/pprof/goroutine?debug=1", nil, "Authorization", "Bearer "+h.adminToken)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		require.Contains(t, string(r.body), "goroutine profile")
		r = h.raw(t, "GET", "/debug/pprof/cmdline", nil, "Authorization", "Bearer "+h.adminToken)
		require.Equal(t, http.StatusOK, r.status)
	})
}
