package auth_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

type fixture struct {
	ctx    context.Context
	store  store.Store
	clock  *clock.Fake
	tokens *auth.Tokens
	alice  store.User
}

func setup(t *testing.T, newStore func(t testing.TB) store.Store, cfg auth.Config) *fixture {
	t.Helper()
	f := &fixture{ctx: context.Background(), store: newStore(t), clock: clock.NewFake(time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC))}
	f.tokens = auth.New(f.store, f.clock, nil, cfg)
	require.NoError(t, f.store.InTx(f.ctx, func(tx store.Tx) error {
		var err error
		f.alice, err = auth.EnsureUser(f.ctx, tx, "alice", false, f.clock.Now())
		return err
	}))
	return f
}

// ok asserts that token authenticates as want.
func (f *fixture) ok(t *testing.T, token string, want store.User, msgAndArgs ...any) {
	t.Helper()
	u, err := f.tokens.Authenticate(f.ctx, token)
	require.NoError(t, err, msgAndArgs...)
	require.Equal(t, want.ID, u.ID, msgAndArgs...)
}

func (f *fixture) refused(t *testing.T, token string, msgAndArgs ...any) {
	t.Helper()
	_, err := f.tokens.Authenticate(f.ctx, token)
	require.ErrorIs(t, err, auth.ErrUnauthenticated, msgAndArgs...)
}

// only returns the one token in the list.
func (f *fixture) only(t *testing.T, user string) auth.TokenInfo {
	t.Helper()
	list, err := f.tokens.List(f.ctx, user)
	require.NoError(t, err)
	require.Len(t, list, 1)
	return list[0]
}

func TestSessionSlidingExpiry(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore, auth.Config{SessionTTL: 168 * time.Hour})
		session, err := f.tokens.CreateSession(f.ctx, f.alice)
		require.NoError(t, err)
		require.Equal(t, store.TokenKindSession, f.only(t, "alice").Kind)

		f.ok(t, session, f.alice)
		f.clock.Advance(100 * time.Hour)
		f.ok(t, session, f.alice, "used within the TTL")
		f.clock.Advance(100 * time.Hour)
		f.ok(t, session, f.alice, "200h after login, but 100h after the last use: the expiry slid")
		info := f.only(t, "alice")
		require.Equal(t, f.clock.Now(), *info.LastUsedAt)
		require.Equal(t, f.clock.Now().Add(168*time.Hour), *info.ExpiresAt)
		require.False(t, info.Expired)

		f.clock.Advance(168*time.Hour - time.Second)
		f.ok(t, session, f.alice, "a second before the end")
		f.clock.Advance(168 * time.Hour)
		f.refused(t, session, "unused for the whole TTL")
		require.True(t, f.only(t, "alice").Expired)

		// The next login sweeps the expired session away.
		_, err = f.tokens.CreateSession(f.ctx, f.alice)
		require.NoError(t, err)
		require.NotEqual(t, info.ID, f.only(t, "alice").ID)
	})
}

func TestSessionWithoutExpiry(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore, auth.Config{SessionTTL: auth.NoExpiry})
		session, err := f.tokens.CreateSession(f.ctx, f.alice)
		require.NoError(t, err)
		f.clock.Advance(10 * 365 * 24 * time.Hour)
		f.ok(t, session, f.alice)
		require.Nil(t, f.only(t, "alice").ExpiresAt)
		require.Zero(t, f.tokens.SessionTTL())
	})
}

// Uses within the touch interval write nothing; the next one after it does.
func TestUseWritesThrottled(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore, auth.Config{})
		token, _, err := f.tokens.Create(f.ctx, auth.CreateParams{User: "alice", Label: "cli"})
		require.NoError(t, err)
		require.Nil(t, f.only(t, "alice").LastUsedAt, "never used")

		first := f.clock.Now()
		f.ok(t, token, f.alice)
		require.Equal(t, first, *f.only(t, "alice").LastUsedAt)
		f.clock.Advance(auth.DefaultTouchInterval - time.Second)
		f.ok(t, token, f.alice)
		require.Equal(t, first, *f.only(t, "alice").LastUsedAt, "not written again within the interval")
		f.clock.Advance(time.Second)
		f.ok(t, token, f.alice)
		require.Equal(t, f.clock.Now(), *f.only(t, "alice").LastUsedAt)
	})
}

func TestAPITokenExpiry(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore, auth.Config{SessionTTL: time.Hour})
		forever, info, err := f.tokens.Create(f.ctx, auth.CreateParams{User: "alice", Label: "forever"})
		require.NoError(t, err)
		require.Nil(t, info.ExpiresAt, "API tokens keep no expiry by default")
		hour, info, err := f.tokens.Create(f.ctx, auth.CreateParams{User: "alice", Label: "an hour", ExpiresIn: time.Hour})
		require.NoError(t, err)
		require.Equal(t, f.clock.Now().Add(time.Hour), *info.ExpiresAt)

		f.clock.Advance(59 * time.Minute)
		f.ok(t, hour, f.alice)
		f.clock.Advance(time.Minute)
		f.refused(t, hour, "its fixed expiry does not slide")
		f.clock.Advance(10 * 365 * 24 * time.Hour)
		f.ok(t, forever, f.alice, "the session TTL does not apply to API tokens")
	})
}

func TestListNeverShowsSecrets(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore, auth.Config{})
		api, _, err := f.tokens.Create(f.ctx, auth.CreateParams{User: "alice", Label: "laptop"})
		require.NoError(t, err)
		f.clock.Advance(time.Second)
		session, err := f.tokens.CreateSession(f.ctx, f.alice)
		require.NoError(t, err)
		f.clock.Advance(time.Second)
		bob, _, err := f.tokens.Create(f.ctx, auth.CreateParams{User: "bob", Admin: true, Label: "ops"})
		require.NoError(t, err)

		all, err := f.tokens.List(f.ctx, "")
		require.NoError(t, err)
		require.Len(t, all, 3)
		require.Equal(t, []string{"alice", "alice", "bob"}, []string{all[0].User, all[1].User, all[2].User})
		require.Equal(t, []string{"laptop", "web session", "ops"}, []string{all[0].Label, all[1].Label, all[2].Label})
		require.True(t, all[2].Admin)
		raw, err := json.Marshal(all)
		require.NoError(t, err)
		for _, secret := range []string{api, session, bob} {
			h := auth.Hash(secret)
			for _, form := range []string{secret, secret[len(auth.TokenPrefix):], hex.EncodeToString(h),
				base64.StdEncoding.EncodeToString(h), base64.RawURLEncoding.EncodeToString(h)} {
				require.NotContains(t, string(raw), form)
			}
		}
		require.NotContains(t, string(raw), "hash")

		mine, err := f.tokens.List(f.ctx, "alice")
		require.NoError(t, err)
		require.Len(t, mine, 2)
		_, err = f.tokens.List(f.ctx, "nobody")
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

func TestRevokeIsImmediate(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore, auth.Config{})
		token, info, err := f.tokens.Create(f.ctx, auth.CreateParams{User: "alice", Label: "cli"})
		require.NoError(t, err)
		other, _, err := f.tokens.Create(f.ctx, auth.CreateParams{User: "alice", Label: "other"})
		require.NoError(t, err)
		f.ok(t, token, f.alice)

		got, err := f.tokens.Revoke(f.ctx, info.ID)
		require.NoError(t, err)
		require.Equal(t, "cli", got.Label)
		f.refused(t, token, "a revoked token fails at once")
		f.ok(t, other, f.alice, "the user's other tokens still work")
		_, err = f.tokens.Revoke(f.ctx, info.ID)
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = f.tokens.Revoke(f.ctx, uuid.New())
		require.ErrorIs(t, err, store.ErrNotFound)

		session, err := f.tokens.CreateSession(f.ctx, f.alice)
		require.NoError(t, err)
		n, err := f.tokens.RevokeAll(f.ctx, "alice")
		require.NoError(t, err)
		require.Equal(t, int64(2), n)
		f.refused(t, other)
		f.refused(t, session)
		_, err = f.tokens.RevokeAll(f.ctx, "nobody")
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

func TestBootstrapTokenChangeRevokesTheOld(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore, auth.Config{})
		first, second := auth.NewToken(), auth.NewToken()
		first2, err := auth.Bootstrap(f.ctx, f.store, first, f.clock.Now())
		require.NoError(t, err)
		require.Empty(t, first2)
		u, err := f.tokens.Authenticate(f.ctx, first)
		require.NoError(t, err)
		require.True(t, u.Admin)
		kept, _, err := f.tokens.Create(f.ctx, auth.CreateParams{User: auth.AdminName, Label: "bootstrap"})
		require.NoError(t, err)
		session, err := f.tokens.CreateSession(f.ctx, u)
		require.NoError(t, err)

		_, err = auth.Bootstrap(f.ctx, f.store, first, f.clock.Now())
		require.NoError(t, err)
		f.ok(t, first, u, "a restart with the same token keeps it")

		_, err = auth.Bootstrap(f.ctx, f.store, second, f.clock.Now())
		require.NoError(t, err)
		f.refused(t, first, "the previous bootstrap token is revoked")
		f.ok(t, second, u)
		f.ok(t, kept, u, "the admin's other tokens stay, even one labelled bootstrap")
		f.ok(t, session, u)

		_, err = auth.Bootstrap(f.ctx, f.store, "", f.clock.Now())
		require.NoError(t, err)
		f.ok(t, second, u, "a start without the variable revokes nothing")
	})
}
