package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/chatd/chatd/store"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// MCP servers: insert, read, list by name, replace, delete; ids and names
// are unique; spec must be a JSON object; secrets round-trip as bytes.
func testMCPServers(t *testing.T, b *bundle) {
	later := b.now.Add(time.Minute)
	fs := store.MCPServer{
		ID: uuid.New(), Name: "fs", Source: store.MCPSourceConfigFile, Enabled: true, Transport: store.MCPTransportStdio,
		Spec: json.RawMessage(`{"command":"npx","args":["-y","x"]}`), Secrets: []byte{0, 1, 2, 255},
		CreatedAt: b.now, UpdatedAt: b.now,
	}
	web := store.MCPServer{
		ID: uuid.New(), Name: "alpha", Source: store.MCPSourceDatabase, Transport: store.MCPTransportHTTP,
		Spec: json.RawMessage(`{"url":"https://example.com/mcp"}`), CreatedAt: b.now, UpdatedAt: b.now,
	}
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		list, err := tx.MCPServerList(b.ctx)
		require.NoError(t, err)
		require.NotNil(t, list)
		require.Empty(t, list)
		got, err := tx.MCPServerInsert(b.ctx, fs)
		require.NoError(t, err)
		require.JSONEq(t, string(fs.Spec), string(got.Spec))
		require.Equal(t, fs.Secrets, got.Secrets)
		require.True(t, got.Enabled)
		_, err = tx.MCPServerInsert(b.ctx, web)
		return err
	}))
	require.NoError(t, b.s.ReadTx(b.ctx, func(r store.Reader) error {
		list, err := r.MCPServerList(b.ctx)
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.Equal(t, "alpha", list[0].Name, "listed by name")
		require.Nil(t, list[0].Secrets, "no secrets reads back as nil")
		require.False(t, list[0].Enabled)
		got, err := r.MCPServerGet(b.ctx, fs.ID)
		require.NoError(t, err)
		require.Equal(t, fs.Name, got.Name)
		require.Equal(t, store.MCPSourceConfigFile, got.Source)
		require.Equal(t, b.now, got.CreatedAt)
		_, err = r.MCPServerGet(b.ctx, uuid.New())
		require.ErrorIs(t, err, store.ErrNotFound)
		return nil
	}))
	for name, dup := range map[string]store.MCPServer{
		"same id":   {ID: fs.ID, Name: "other", Source: store.MCPSourceDatabase, Transport: store.MCPTransportStdio, Spec: json.RawMessage(`{}`), CreatedAt: b.now, UpdatedAt: b.now},
		"same name": {ID: uuid.New(), Name: "fs", Source: store.MCPSourceDatabase, Transport: store.MCPTransportStdio, Spec: json.RawMessage(`{}`), CreatedAt: b.now, UpdatedAt: b.now},
	} {
		err := b.s.InTx(b.ctx, func(tx store.Tx) error { _, err := tx.MCPServerInsert(b.ctx, dup); return err })
		require.ErrorIs(t, err, store.ErrConflict, name)
	}
	for _, spec := range []string{`[1]`, `{"a":`} {
		bad := web
		bad.ID, bad.Name, bad.Spec = uuid.New(), "bad", json.RawMessage(spec)
		err := b.s.InTx(b.ctx, func(tx store.Tx) error { _, err := tx.MCPServerInsert(b.ctx, bad); return err })
		require.Error(t, err, "spec %s is refused", spec)
	}

	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		edit := fs
		edit.Name, edit.Source, edit.CreatedAt = "renamed", store.MCPSourceDatabase, later // ignored
		edit.Enabled, edit.Transport, edit.Spec, edit.Secrets, edit.UpdatedAt = false, store.MCPTransportHTTP, json.RawMessage(`{"url":"http://x"}`), nil, later
		got, err := tx.MCPServerUpdate(b.ctx, edit)
		require.NoError(t, err)
		require.Equal(t, "fs", got.Name)
		require.Equal(t, store.MCPSourceConfigFile, got.Source)
		require.Equal(t, b.now, got.CreatedAt)
		require.Equal(t, later, got.UpdatedAt)
		require.False(t, got.Enabled)
		require.Equal(t, store.MCPTransportHTTP, got.Transport)
		require.JSONEq(t, `{"url":"http://x"}`, string(got.Spec))
		require.Nil(t, got.Secrets)
		missing := edit
		missing.ID = uuid.New()
		_, err = tx.MCPServerUpdate(b.ctx, missing)
		require.ErrorIs(t, err, store.ErrNotFound)

		n, err := tx.MCPServerDelete(b.ctx, fs.ID)
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		n, err = tx.MCPServerDelete(b.ctx, fs.ID)
		require.NoError(t, err)
		require.Zero(t, n)
		list, err := tx.MCPServerList(b.ctx)
		require.NoError(t, err)
		require.Len(t, list, 1)
		return nil
	}))
}
