package mcp

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/sdk"
)

// helperServer is the test binary itself as a stdio MCP server
// (runHelper), with extra configured env.
func helperServer(t *testing.T, env map[string]string) Server {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	all := map[string]string{helperEnv: "1"}
	for k, v := range env {
		all[k] = v
	}
	return Server{Name: "child", ID: ServerID("child"), Command: exe, Args: []string{"-test.run=^$"}, Env: all, Timeout: DefaultTimeout}
}

func childEnvOf(t *testing.T, m *Manager) map[string]string {
	t.Helper()
	out, err := find(t, m.Tools(t.Context(), anAdmin, nil), "child__env").Run(t.Context(), nil)
	require.NoError(t, err)
	var text string
	require.NoError(t, json.Unmarshal(out, &text))
	env := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		k, v, _ := strings.Cut(line, "=")
		env[k] = v
	}
	return env
}

// Not parallel: it sets chatd's own environment.
func TestStdioChildEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-secret")
	t.Setenv("CHATD_BOOTSTRAP_TOKEN", "bootstrap-secret")
	t.Setenv("HOME", "/home/chatd")
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("TMPDIR", os.TempDir())
	m := NewManager(Config{Servers: []Server{helperServer(t, map[string]string{
		"API_TOKEN": "${OPENAI_API_KEY}", // literal: never expanded
		"LANG":      "de_DE.UTF-8",       // the config wins
	})}}, Options{})
	defer m.Close()

	env := childEnvOf(t, m)
	require.Equal(t, map[string]string{
		"PATH": os.Getenv("PATH"), "HOME": "/home/chatd", "LANG": "de_DE.UTF-8", "TMPDIR": os.TempDir(),
		"API_TOKEN": "${OPENAI_API_KEY}", helperEnv: "1",
	}, env)
	require.Equal(t, sdk.MCPTransportStdio, m.Status(t.Context(), anAdmin)[0].Transport)
}

func TestStdioChildRestartsAfterExit(t *testing.T) {
	t.Parallel()
	m := NewManager(Config{Servers: []Server{helperServer(t, nil)}}, Options{MinBackoff: 1, MaxBackoff: 1})
	defer m.Close()
	exit := find(t, m.Tools(t.Context(), anAdmin, nil), "child__exit")
	_, err := exit.Run(t.Context(), nil)
	require.Error(t, err, "the child died mid-call")

	var lost string
	waitUntil(t, m, "child", func(s *server) bool { lost = s.lastErr; return lost != "" })
	require.Contains(t, lost, "connection lost")
	waitUntil(t, m, "child", func(s *server) bool { return s.state == sdk.MCPStateConnected })
	require.NotEmpty(t, childEnvOf(t, m), "a new child answers")
}

func TestStdioCommandNotFound(t *testing.T) {
	t.Parallel()
	m := NewManager(Config{Servers: []Server{{Name: "gone", ID: ServerID("gone"), Command: "chatd-no-such-mcp-server", Timeout: DefaultTimeout}}}, Options{})
	defer m.Close()
	require.Empty(t, m.Tools(t.Context(), anAdmin, nil))
	st := m.Status(t.Context(), anAdmin)[0]
	require.Equal(t, sdk.MCPStateFailed, st.State)
	require.Contains(t, *st.LastError, "chatd-no-such-mcp-server")
}
