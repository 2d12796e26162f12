package auth_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

func ptr[T any](v T) *T { return &v }

// A disabled user's tokens and sessions stop at once and work again when
// the user is enabled.
func TestDisabledUserRefused(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore, auth.Config{})
		tok, _, err := f.tokens.CreateAPIToken(f.ctx, f.alice, "laptop", nil)
		require.NoError(t, err)
		session, err := f.tokens.CreateSession(f.ctx, f.alice)
		require.NoError(t, err)
		f.ok(t, tok, f.alice)
		u, err := f.tokens.UpdateUser(f.ctx, f.alice.ID, auth.UserPatch{Disabled: ptr(true)})
		require.NoError(t, err)
		require.True(t, u.Disabled)
		f.refused(t, tok, "the API token of a disabled user")
		f.refused(t, session, "the session of a disabled user")
		_, err = f.tokens.UpdateUser(f.ctx, f.alice.ID, auth.UserPatch{Disabled: ptr(false)})
		require.NoError(t, err)
		f.ok(t, tok, f.alice)
		f.ok(t, session, f.alice)
	})
}

// The last enabled admin can be neither disabled nor demoted; with a
// second admin both are possible.
func TestLastAdmin(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore, auth.Config{})
		root, err := f.tokens.CreateUser(f.ctx, "root", true)
		require.NoError(t, err)
		_, err = f.tokens.UpdateUser(f.ctx, root.ID, auth.UserPatch{Disabled: ptr(true)})
		require.ErrorIs(t, err, auth.ErrLastAdmin)
		_, err = f.tokens.UpdateUser(f.ctx, root.ID, auth.UserPatch{Admin: ptr(false)})
		require.ErrorIs(t, err, auth.ErrLastAdmin)
		got, err := f.tokens.User(f.ctx, "root")
		require.NoError(t, err)
		require.True(t, got.Admin && !got.Disabled, "a refused change changes nothing")

		_, err = f.tokens.UpdateUser(f.ctx, f.alice.ID, auth.UserPatch{Admin: ptr(true)})
		require.NoError(t, err)
		u, err := f.tokens.UpdateUser(f.ctx, root.ID, auth.UserPatch{Disabled: ptr(true)})
		require.NoError(t, err)
		require.True(t, u.Disabled)
		_, err = f.tokens.UpdateUser(f.ctx, f.alice.ID, auth.UserPatch{Admin: ptr(false)})
		require.ErrorIs(t, err, auth.ErrLastAdmin, "a disabled admin does not count")
		// Enabling a disabled admin again is always allowed.
		_, err = f.tokens.UpdateUser(f.ctx, root.ID, auth.UserPatch{Disabled: ptr(false)})
		require.NoError(t, err)
		_, err = f.tokens.UpdateUser(f.ctx, f.alice.ID, auth.UserPatch{Admin: ptr(false)})
		require.NoError(t, err)
	})
}

func TestCreateUserValidation(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore, auth.Config{})
		for _, name := range []string{"", "me", "a b", "a/b", strings.Repeat("x", 65), "123e4567-e89b-12d3-a456-426614174000", "tab\there"} {
			_, err := f.tokens.CreateUser(f.ctx, name, false)
			var ve *auth.ValidationError
			require.ErrorAs(t, err, &ve, "%q", name)
		}
		_, err := f.tokens.CreateUser(f.ctx, "alice", false)
		require.ErrorIs(t, err, auth.ErrUserExists)
		users, err := f.tokens.Users(f.ctx)
		require.NoError(t, err)
		require.Len(t, users, 1)
	})
}

// A token revoked through RevokeOf must be the user's own; an expiring
// API token stops at its expiry.
func TestAPITokenOfUser(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore, auth.Config{})
		bob, err := f.tokens.CreateUser(f.ctx, "bob", false)
		require.NoError(t, err)
		exp := f.clock.Now().Add(time.Hour)
		tok, info, err := f.tokens.CreateAPIToken(f.ctx, f.alice, "ci", &exp)
		require.NoError(t, err)
		require.Equal(t, exp, *info.ExpiresAt)
		_, _, err = f.tokens.CreateAPIToken(f.ctx, f.alice, "old", ptr(f.clock.Now()))
		var ve *auth.ValidationError
		require.ErrorAs(t, err, &ve)
		_, _, err = f.tokens.CreateAPIToken(f.ctx, f.alice, "  ", nil)
		require.ErrorAs(t, err, &ve)

		_, err = f.tokens.RevokeOf(f.ctx, bob.ID, info.ID)
		require.ErrorIs(t, err, store.ErrNotFound, "not bob's token")
		f.ok(t, tok, f.alice)
		f.clock.Advance(time.Hour)
		f.refused(t, tok, "expired")
		_, err = f.tokens.RevokeOf(f.ctx, f.alice.ID, info.ID)
		require.NoError(t, err)
		_, err = f.tokens.RevokeOf(f.ctx, f.alice.ID, info.ID)
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

// A login code works once, for LoginCodeTTL, never for a disabled user,
// and is stored only as its hash.
func TestLoginCode(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore, auth.Config{})
		code, exp, err := f.tokens.CreateLoginCode(f.ctx, "alice")
		require.NoError(t, err)
		require.Equal(t, f.clock.Now().Add(auth.LoginCodeTTL), exp)
		require.True(t, strings.HasPrefix(code, auth.LoginCodePrefix))
		f.refused(t, code, "a login code is not a token")
		// Stored as its hash: the clear code is no key of the table.
		require.ErrorIs(t, f.store.InTx(f.ctx, func(tx store.Tx) error {
			_, err := tx.LoginCodeTake(f.ctx, []byte(code), f.clock.Now())
			return err
		}), store.ErrNotFound)
		u, err := f.tokens.ExchangeLoginCode(f.ctx, code)
		require.NoError(t, err)
		require.Equal(t, f.alice.ID, u.ID)
		_, err = f.tokens.ExchangeLoginCode(f.ctx, code)
		require.ErrorIs(t, err, auth.ErrLoginCodeInvalid, "single use")

		code, _, err = f.tokens.CreateLoginCode(f.ctx, "alice")
		require.NoError(t, err)
		f.clock.Advance(auth.LoginCodeTTL)
		_, err = f.tokens.ExchangeLoginCode(f.ctx, code)
		require.ErrorIs(t, err, auth.ErrLoginCodeInvalid, "expired")

		code, _, err = f.tokens.CreateLoginCode(f.ctx, "alice")
		require.NoError(t, err)
		// Alice is the only user and no admin, so disabling her is allowed.
		_, err = f.tokens.UpdateUser(f.ctx, f.alice.ID, auth.UserPatch{Disabled: ptr(true)})
		require.NoError(t, err)
		_, err = f.tokens.ExchangeLoginCode(f.ctx, code)
		require.ErrorIs(t, err, auth.ErrLoginCodeInvalid, "disabled user")
		_, _, err = f.tokens.CreateLoginCode(f.ctx, "alice")
		require.ErrorIs(t, err, auth.ErrUserDisabled)
		_, _, err = f.tokens.CreateLoginCode(f.ctx, "nobody")
		require.ErrorIs(t, err, store.ErrNotFound)
		for _, bad := range []string{"", "chatd_x", auth.LoginCodePrefix + "nope"} {
			_, err = f.tokens.ExchangeLoginCode(f.ctx, bad)
			require.ErrorIs(t, err, auth.ErrLoginCodeInvalid, "%q", bad)
		}
	})
}
