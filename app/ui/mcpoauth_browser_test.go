package ui_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/mcp/mcptest"
)

// TestBrowserMCPSharedOAuth: an admin connects a remote MCP server that
// asks for OAuth (the server's identity shared by every user) from
// Settings: the row says "Needs authorization" with Connect, a link to
// the authorization server's consent page; once the admin consents there
// the row says "Authorized" by itself, and a chat's call of the server's
// tool runs with that authorization. Reconnect forgets the tokens: the
// row asks for authorization again.
func TestBrowserMCPSharedOAuth(t *testing.T) {
	v := mcptest.StartPersonVault(t)
	mcpConfig, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"vault": map[string]any{"url": v.URL}}})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(path, mcpConfig, 0o600))
	b := startBrowserWith(t, func(cfg *config.Config) { cfg.MCPConfig = path })

	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)
	b.do(chromedp.Navigate(b.base + "/settings"))
	row := `document.querySelector('#settings-mcp .mcp-row[data-name="vault"]')`
	b.waitJS("the server waiting for authorization", row+`?.querySelector('.mcp-auth')?.textContent === 'Needs authorization' && `+row+`.querySelector('a.mcp-connect')?.href`)
	href := eval[string](b, row+`.querySelector('a.mcp-connect').href`)
	require.True(t, strings.HasPrefix(href, strings.TrimSuffix(v.URL, "/mcp")+"/authorize?"), "Connect opens the vault's consent page: %s", href)
	require.Equal(t, "_blank", eval[string](b, row+`.querySelector('a.mcp-connect').target`))
	b.shot("mcp-oauth-needs-authorization")

	mcptest.Consent(t, href, "admin")
	b.waitJS("authorized", row+`?.querySelector('.mcp-auth')?.textContent === 'Authorized' && `+row+`.querySelector('.mcp-reconnect')`)
	require.Equal(t, 1, v.Consents("admin"))
	b.shot("mcp-oauth-authorized")

	// A chat calls the server's tool: the vault answers the bearer's person.
	b.do(chromedp.Navigate(b.base + "/"))
	b.waitJS("the new-chat page", `document.querySelector('.hero')`)
	b.typeAndSend("/tool vault__whoami {}")
	b.waitJS("the tool's result", jsIdle+` && document.querySelector('.thread .tool-card.tool-ok')`)
	require.Contains(t, eval[string](b, `document.querySelector('.thread .tool-card .tool-section:last-of-type pre').textContent`), "you are admin")

	b.do(chromedp.Navigate(b.base + "/settings"))
	b.waitJS("the Reconnect button", row+`?.querySelector('.mcp-reconnect')`)
	b.click(`#settings-mcp .mcp-row[data-name="vault"] .mcp-reconnect`)
	b.waitJS("asking again", row+`?.querySelector('.mcp-auth')?.textContent === 'Needs authorization' && `+row+`.querySelector('a.mcp-connect')`)
	b.checkNoProblems()
}
