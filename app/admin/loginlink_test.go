package admin_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/admin"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// login.link mints a one-time code for the admin (or --user) and builds
// the link on the server's address; unknown users are not found, disabled
// ones a conflict.
func TestLoginLink(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		ctx := context.Background()
		tokens := auth.New(newStore(t), clock.Real{}, nil, auth.Config{})
		c := admin.Local(&admin.Ops{Tokens: tokens, BaseURL: "http://127.0.0.1:8080/"})
		_, _, err := tokens.Create(ctx, auth.CreateParams{User: auth.AdminName, Admin: true, Label: "x"})
		require.NoError(t, err)
		var res admin.LoginLinkResponse
		require.NoError(t, c.Call(ctx, admin.CmdLoginLink, admin.LoginLinkRequest{}, &res))
		require.Equal(t, "http://127.0.0.1:8080/login#code="+res.Code, res.URL)
		require.True(t, strings.HasPrefix(res.Code, auth.LoginCodePrefix))
		u, err := tokens.ExchangeLoginCode(ctx, res.Code)
		require.NoError(t, err)
		require.Equal(t, auth.AdminName, u.Name)

		err = c.Call(ctx, admin.CmdLoginLink, admin.LoginLinkRequest{User: "nobody"}, &res)
		require.ErrorIs(t, err, store.ErrNotFound)
		bob, err := tokens.CreateUser(ctx, "bob", false)
		require.NoError(t, err)
		disabled := true
		_, err = tokens.UpdateUser(ctx, bob.ID, auth.UserPatch{Disabled: &disabled})
		require.NoError(t, err)
		err = c.Call(ctx, admin.CmdLoginLink, admin.LoginLinkRequest{User: "bob"}, &res)
		var e *admin.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, admin.CodeConflict, e.Code)
	})
}
