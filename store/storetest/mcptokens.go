package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

// testMCPOAuthTokens: a server's sealed tokens round-trip as bytes, a put
// replaces them, a delete forgets them (once), a server that does not
// exist has none to put, and they go with their server.
func testMCPOAuthTokens(t *testing.T, b *bundle) {
	srv := store.MCPServer{
		ID: uuid.New(), Name: "remote", Source: store.MCPSourceDatabase, Enabled: true, Transport: store.MCPTransportHTTP,
		Spec: json.RawMessage(`{"url":"https://example.com/mcp"}`), CreatedAt: b.now, UpdatedAt: b.now,
	}
	inTx := func(fn func(tx store.Tx) error) error { return b.s.InTx(b.ctx, fn) }
	get := func() (store.MCPToken, error) {
		var out store.MCPToken
		err := b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			var err error
			out, err = tx.MCPTokenGet(b.ctx, srv.ID)
			return err
		})
		return out, err
	}
	put := func(sealed []byte, at time.Time) error {
		return inTx(func(tx store.Tx) error {
			return tx.MCPTokenPut(b.ctx, store.MCPToken{ServerID: srv.ID, Sealed: sealed, UpdatedAt: at})
		})
	}
	require.ErrorIs(t, put([]byte{1}, b.now), store.ErrForeignKey)
	require.NoError(t, inTx(func(tx store.Tx) error {
		_, err := tx.MCPServerInsert(b.ctx, srv)
		return err
	}))
	_, err := get()
	require.ErrorIs(t, err, store.ErrNotFound)

	require.NoError(t, put([]byte{0, 1, 255}, b.now))
	got, err := get()
	require.NoError(t, err)
	require.Equal(t, store.MCPToken{ServerID: srv.ID, Sealed: []byte{0, 1, 255}, UpdatedAt: b.now}, got)
	later := b.now.Add(time.Minute)
	require.NoError(t, put([]byte("refreshed"), later))
	got, err = get()
	require.NoError(t, err)
	require.Equal(t, []byte("refreshed"), got.Sealed)
	require.Equal(t, later, got.UpdatedAt)

	for _, want := range []bool{true, false} {
		require.NoError(t, inTx(func(tx store.Tx) error {
			had, err := tx.MCPTokenDelete(b.ctx, srv.ID)
			require.Equal(t, want, had)
			return err
		}))
	}
	_, err = get()
	require.ErrorIs(t, err, store.ErrNotFound)

	require.NoError(t, put([]byte("again"), later))
	require.NoError(t, inTx(func(tx store.Tx) error {
		_, err := tx.MCPServerDelete(b.ctx, srv.ID)
		return err
	}))
	_, err = get()
	require.ErrorIs(t, err, store.ErrNotFound, "the tokens go with their server")
}
