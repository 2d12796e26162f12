package e2e_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/mcp"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
)

// anAdmin may use every MCP server, whatever its access.
var anAdmin = tools.User{Name: "admin", Admin: true}

func writeMCPConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
	return path
}

// TestMCPConfigErrorStopsStartup: app.New refuses a bad MCP config, so
// there is no running app to harness.
func TestMCPConfigErrorStopsStartup(t *testing.T) {
	t.Parallel()
	path := writeMCPConfig(t, `{"mcpServers": {"fs": {"command": "node", "timeout": "forever"}}}`)
	_, err := app.New(context.Background(), config.Config{DB: filepath.Join(t.TempDir(), "chatd.db"), MCPConfig: path}, io.Discard)
	require.ErrorContains(t, err, path+`: mcp config: server "fs": timeout: "forever" is not a positive duration`)

	_, err = app.New(context.Background(), config.Config{DB: filepath.Join(t.TempDir(), "chatd.db"), MCPConfig: path + ".missing"}, io.Discard)
	require.ErrorContains(t, err, "mcp config: open")
}

// The app builds the manager from the file, counts its failures on the
// app's /metrics and closes it (goleak checks that its goroutines end).
func TestMCPWiring(t *testing.T) {
	t.Parallel()
	path := writeMCPConfig(t, `{"mcpServers": {
		"broken": {"command": "/nonexistent/mcp-server"},
		"off": {"url": "http://127.0.0.1:1/mcp", "disabled": true}}}`)
	h := apptest.Start(t, apptest.Options{NoStart: true, Config: config.Config{MCPConfig: path}})
	require.Empty(t, h.MCP.Tools(t.Context(), anAdmin, nil), "a server that cannot start offers nothing")
	st := h.MCP.Status(t.Context(), anAdmin)
	require.Len(t, st, 2)
	require.Equal(t, mcp.ServerID("broken"), st[0].ID)
	require.Equal(t, sdk.MCPStateFailed, st[0].State)
	require.Contains(t, *st[0].LastError, "/nonexistent/mcp-server")
	require.Equal(t, sdk.MCPStateDisabled, st[1].State)
	require.Equal(t, sdk.MCPTransportStreamableHTTP, st[1].Transport)

	req, err := http.NewRequest("GET", h.URL+"/metrics", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+h.Token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Contains(t, string(body), `chatd_mcp_server_failures_total{server="broken"}`)
}

// Without a config file the manager exists (servers can be added through
// the API) but has no servers.
func TestNoMCPConfigNoServers(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{NoStart: true})
	require.Empty(t, h.MCP.Status(t.Context(), anAdmin))
}

func TestMCPConfigFromEnv(t *testing.T) {
	t.Setenv("CHATD_MCP_CONFIG", "/etc/chatd/mcp.json")
	require.Equal(t, "/etc/chatd/mcp.json", fromEnv(t).MCPConfig)
}

func TestMCPResyncIntervalFromEnv(t *testing.T) {
	t.Setenv("CHATD_MCP_RESYNC_INTERVAL", "5s")
	require.Equal(t, 5*time.Second, fromEnv(t).MCPResyncInterval)
}
