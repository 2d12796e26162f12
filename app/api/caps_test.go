package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// TestPerUserCaps: projects, memories and files per user each answer 429
// LIMIT_REACHED at their cap, with a detail naming it, and count the
// caller's own rows only.
func TestPerUserCaps(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore, func(c *config.Config) {
			c.Projects.MaxProjectsPerUser = 2
			c.Projects.MaxMemoriesPerUser = 2
			c.Files.MaxPerUser = 2
		})
		ctx := h.ctx
		bob, _, bobToken := h.newUser(t, "bob")

		p, err := h.alice.CreateProject(ctx, sdk.CreateProjectRequest{Name: "one"})
		require.NoError(t, err)
		_, err = h.alice.CreateProject(ctx, sdk.CreateProjectRequest{Name: "two"})
		require.NoError(t, err)
		_, err = h.alice.CreateProject(ctx, sdk.CreateProjectRequest{Name: "three"})
		e := requireAPIError(t, err, http.StatusTooManyRequests, sdk.CodeLimitReached)
		require.Contains(t, e.Detail, "you have 2 projects; at most 2")
		_, err = bob.CreateProject(ctx, sdk.CreateProjectRequest{Name: "bob's"})
		require.NoError(t, err, "alice's projects are not bob's")

		_, err = h.alice.PutMemory(ctx, p.ID, "a", "x")
		require.NoError(t, err)
		_, err = h.alice.PutMemory(ctx, p.ID, "b", "x")
		require.NoError(t, err)
		_, err = h.alice.PutMemory(ctx, p.ID, "c", "x")
		e = requireAPIError(t, err, http.StatusTooManyRequests, sdk.CodeLimitReached)
		require.Contains(t, e.Detail, "2 memories together; at most 2")
		_, err = h.alice.PutMemory(ctx, p.ID, "a", "replaced")
		require.NoError(t, err, "replacing a memory is not a new one")

		for range 2 {
			uploaded(t, h.upload(t, h.aliceToken, "/api/v2/files?name=a.txt", "text/plain", []byte("hi")))
		}
		r := h.upload(t, h.aliceToken, "/api/v2/files?name=a.txt", "text/plain", []byte("hi"))
		resp := requireJSONError(t, r, http.StatusTooManyRequests, sdk.CodeLimitReached)
		require.Contains(t, resp.Detail, "you have 2 files; at most 2")
		require.Empty(t, r.header.Get("Retry-After"), "a cap is not a rate: waiting does not help")
		uploaded(t, h.upload(t, bobToken, "/api/v2/files?name=b.txt", "text/plain", []byte("hi")))
	})
}
