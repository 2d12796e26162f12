package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

// testMCPUserOAuthTokens: a user's sealed tokens for a server round-trip,
// are kept apart from another user's and from the server's shared ones,
// a put replaces them, a delete forgets them (once) and only the user's,
// an unknown server or user has none to put, and they go with their
// server and with their user.
func testMCPUserOAuthTokens(t *testing.T, b *bundle) {
	srv := store.MCPServer{
		ID: uuid.New(), Name: "per-user", Source: store.MCPSourceDatabase, Enabled: true, Transport: store.MCPTransportHTTP,
		Spec: json.RawMessage(`{"url":"https://example.com/mcp"}`), CreatedAt: b.now, UpdatedAt: b.now,
	}
	inTx := func(fn func(tx store.Tx) error) error { return b.s.InTx(b.ctx, fn) }
	get := func(user uuid.UUID) (store.MCPUserToken, error) {
		var out store.MCPUserToken
		err := b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			var err error
			out, err = tx.MCPUserTokenGet(b.ctx, srv.ID, user)
			return err
		})
		return out, err
	}
	put := func(user uuid.UUID, sealed []byte, at time.Time) error {
		return inTx(func(tx store.Tx) error {
			return tx.MCPUserTokenPut(b.ctx, store.MCPUserToken{ServerID: srv.ID, UserID: user, Sealed: sealed, UpdatedAt: at})
		})
	}
	del := func(user uuid.UUID) (had bool) {
		require.NoError(t, inTx(func(tx store.Tx) error {
			var err error
			had, err = tx.MCPUserTokenDelete(b.ctx, srv.ID, user)
			return err
		}))
		return had
	}
	alice := b.user.ID
	require.ErrorIs(t, put(alice, []byte{1}, b.now), store.ErrForeignKey, "no such server")
	var bob store.User
	require.NoError(t, inTx(func(tx store.Tx) error {
		_, err := tx.MCPServerInsert(b.ctx, srv)
		if err != nil {
			return err
		}
		bob, err = tx.UserInsert(b.ctx, store.UserInsertParams{ID: uuid.New(), Name: "bob-mcp", Now: b.now})
		return err
	}))
	require.ErrorIs(t, put(uuid.New(), []byte{1}, b.now), store.ErrForeignKey, "no such user")
	_, err := get(alice)
	require.ErrorIs(t, err, store.ErrNotFound)

	require.NoError(t, put(alice, []byte{0, 1, 255}, b.now))
	got, err := get(alice)
	require.NoError(t, err)
	require.Equal(t, store.MCPUserToken{ServerID: srv.ID, UserID: alice, Sealed: []byte{0, 1, 255}, UpdatedAt: b.now}, got)
	_, err = get(bob.ID)
	require.ErrorIs(t, err, store.ErrNotFound, "alice's tokens are not bob's")
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		_, err := tx.MCPTokenGet(b.ctx, srv.ID)
		require.ErrorIs(t, err, store.ErrNotFound, "nor the server's shared ones")
		return nil
	}))

	require.NoError(t, put(bob.ID, []byte("bob"), b.now))
	later := b.now.Add(time.Minute)
	require.NoError(t, put(alice, []byte("refreshed"), later))
	got, err = get(alice)
	require.NoError(t, err)
	require.Equal(t, []byte("refreshed"), got.Sealed)
	require.Equal(t, later, got.UpdatedAt)

	require.True(t, del(alice))
	require.False(t, del(alice))
	_, err = get(alice)
	require.ErrorIs(t, err, store.ErrNotFound)
	got, err = get(bob.ID)
	require.NoError(t, err, "a user's disconnect leaves the others' tokens")
	require.Equal(t, []byte("bob"), got.Sealed)

	require.NoError(t, put(alice, []byte("again"), later))
	require.NoError(t, inTx(func(tx store.Tx) error {
		_, err := tx.MCPServerDelete(b.ctx, srv.ID)
		return err
	}))
	for _, u := range []uuid.UUID{alice, bob.ID} {
		_, err = get(u)
		require.ErrorIs(t, err, store.ErrNotFound, "the tokens go with their server")
	}
}
