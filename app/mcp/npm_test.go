package mcp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/mcp/mcptest"
	"github.com/chatd/chatd/app/sdk"
)

func npmManager(t *testing.T, s Server) *Manager {
	t.Helper()
	s.ID = ServerID(s.Name)
	s.Timeout = DefaultTimeout
	m := NewManager(Config{Servers: []Server{s}}, Options{})
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	return m
}

func run(t *testing.T, m *Manager, name, args string) string {
	t.Helper()
	out, err := find(t, m.Tools(t.Context(), anAdmin, nil), name).Run(t.Context(), json.RawMessage(args))
	require.NoError(t, err)
	return string(out)
}

func TestNPMEverythingStdio(t *testing.T) {
	t.Parallel()
	index := mcptest.NPMServer(t, "server-everything")
	m := npmManager(t, Server{Name: "everything", Command: "node", Args: []string{index, "stdio"}})
	require.Contains(t, run(t, m, "everything__echo", `{"message":"hi"}`), "hi")
	st := m.Status(t.Context(), anAdmin)[0]
	require.Equal(t, sdk.MCPStateConnected, st.State)
	require.Equal(t, sdk.MCPTransportStdio, st.Transport)
	require.Greater(t, len(st.Tools), 5)
}

func TestNPMEverythingStreamableHTTP(t *testing.T) {
	t.Parallel()
	addr := mcptest.StartNode(t, mcptest.NPMServer(t, "server-everything"), "streamableHttp")
	m := npmManager(t, Server{Name: "everything", URL: "http://" + addr + "/mcp"})
	require.Contains(t, run(t, m, "everything__echo", `{"message":"over http"}`), "over http")
	require.Equal(t, sdk.MCPTransportStreamableHTTP, m.Status(t.Context(), anAdmin)[0].Transport)
}

func TestNPMEverythingSSEFallback(t *testing.T) {
	t.Parallel()
	addr := mcptest.StartNode(t, mcptest.NPMServer(t, "server-everything"), "sse")
	m := npmManager(t, Server{Name: "everything", URL: "http://" + addr + "/sse"})
	require.Contains(t, run(t, m, "everything__echo", `{"message":"old transport"}`), "old transport")
	require.Equal(t, sdk.MCPTransportSSE, m.Status(t.Context(), anAdmin)[0].Transport)
}

func TestNPMFilesystem(t *testing.T) {
	t.Parallel()
	index := mcptest.NPMServer(t, "server-filesystem")
	dir := t.TempDir()
	file := filepath.Join(dir, "note.txt")
	require.NoError(t, os.WriteFile(file, []byte("hello from chatd"), 0o600))
	m := npmManager(t, Server{Name: "fs", Command: "node", Args: []string{index, dir}})

	args, err := json.Marshal(map[string]string{"path": file})
	require.NoError(t, err)
	require.Contains(t, run(t, m, "fs__read_text_file", string(args)), "hello from chatd")
	read := find(t, m.Tools(t.Context(), anAdmin, nil), "fs__read_text_file")
	require.Equal(t, "pure", read.Effect(), "the server marks it readOnlyHint")

	// Outside the allowed directory: an isError result.
	_, err = read.Run(t.Context(), json.RawMessage(`{"path":"/etc/hostname"}`))
	var te *ToolError
	require.ErrorAs(t, err, &te)
}
