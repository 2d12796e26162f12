package mcp

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/sdk"
)

// The reference servers published on npm, installed by .ci/run (or by
// hand: npm install --prefix DIR @modelcontextprotocol/server-everything@2026.8.31
// @modelcontextprotocol/server-filesystem@2026.8.31) into the npm prefix
// CHATD_TEST_MCP_DIR. Without it these tests skip, except under CI=true.

// npmServer is the dist/index.js of package (server-everything, ...).
func npmServer(t *testing.T, pkg string) string {
	t.Helper()
	dir := os.Getenv("CHATD_TEST_MCP_DIR")
	if dir == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CHATD_TEST_MCP_DIR is not set: .ci/run installs the npm MCP servers there")
		}
		t.Skip("CHATD_TEST_MCP_DIR not set (an npm prefix with the @modelcontextprotocol servers)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("CHATD_TEST_MCP_DIR is set but node is not on PATH: %v", err)
	}
	index := filepath.Join(dir, "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")
	_, err := os.Stat(index)
	require.NoError(t, err, "install %s@2026.8.31 into %s", pkg, dir)
	return index
}

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
	out, err := find(t, m.Tools(t.Context(), nil), name).Run(t.Context(), json.RawMessage(args))
	require.NoError(t, err)
	return string(out)
}

func TestNPMEverythingStdio(t *testing.T) {
	t.Parallel()
	index := npmServer(t, "server-everything")
	m := npmManager(t, Server{Name: "everything", Command: "node", Args: []string{index, "stdio"}})
	require.Contains(t, run(t, m, "everything__echo", `{"message":"hi"}`), "hi")
	st := m.Status(t.Context())[0]
	require.Equal(t, sdk.MCPStateConnected, st.State)
	require.Equal(t, sdk.MCPTransportStdio, st.Transport)
	require.Greater(t, len(st.Tools), 5)
}

// startNode runs `node index mode` with PORT set to a free port and waits
// until it says it listens. The process is killed at the end of the test.
func startNode(t *testing.T, index, mode string) (port int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port = ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	cmd := exec.Command("node", index, mode)
	cmd.Env = append(childEnv(nil), "PORT="+strconv.Itoa(port))
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	drained := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-drained
		_ = cmd.Wait()
	})
	lines := bufio.NewScanner(stderr)
	var seen []string
	for lines.Scan() {
		seen = append(seen, lines.Text())
		if strings.Contains(lines.Text(), "listening on port") || strings.Contains(lines.Text(), "running on port") {
			break
		}
	}
	go func() {
		defer close(drained)
		_, _ = io.Copy(io.Discard, stderr)
	}()
	require.NoError(t, lines.Err())
	require.NotEmpty(t, seen)
	last := seen[len(seen)-1]
	require.True(t, strings.Contains(last, "port"), "node did not start: %s", strings.Join(seen, "\n"))
	return port
}

func TestNPMEverythingStreamableHTTP(t *testing.T) {
	t.Parallel()
	port := startNode(t, npmServer(t, "server-everything"), "streamableHttp")
	m := npmManager(t, Server{Name: "everything", URL: "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"})
	require.Contains(t, run(t, m, "everything__echo", `{"message":"over http"}`), "over http")
	require.Equal(t, sdk.MCPTransportStreamableHTTP, m.Status(t.Context())[0].Transport)
}

func TestNPMEverythingSSEFallback(t *testing.T) {
	t.Parallel()
	port := startNode(t, npmServer(t, "server-everything"), "sse")
	m := npmManager(t, Server{Name: "everything", URL: "http://127.0.0.1:" + strconv.Itoa(port) + "/sse"})
	require.Contains(t, run(t, m, "everything__echo", `{"message":"old transport"}`), "old transport")
	require.Equal(t, sdk.MCPTransportSSE, m.Status(t.Context())[0].Transport)
}

func TestNPMFilesystem(t *testing.T) {
	t.Parallel()
	index := npmServer(t, "server-filesystem")
	dir := t.TempDir()
	file := filepath.Join(dir, "note.txt")
	require.NoError(t, os.WriteFile(file, []byte("hello from chatd"), 0o600))
	m := npmManager(t, Server{Name: "fs", Command: "node", Args: []string{index, dir}})

	args, err := json.Marshal(map[string]string{"path": file})
	require.NoError(t, err)
	require.Contains(t, run(t, m, "fs__read_text_file", string(args)), "hello from chatd")
	read := find(t, m.Tools(t.Context(), nil), "fs__read_text_file")
	require.Equal(t, "pure", read.Effect(), "the server marks it readOnlyHint")

	// Outside the allowed directory: an isError result.
	_, err = read.Run(t.Context(), json.RawMessage(`{"path":"/etc/hostname"}`))
	var te *ToolError
	require.ErrorAs(t, err, &te)
}
