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
	"github.com/chatd/chatd/app/sdk"
)

// TestBrowserMCPPerUser: a user who is not an admin finds a server whose
// identity is each user's in Settings → My MCP connections, "Not
// connected" with Connect; Connect shows the link to the authorization
// server's consent page; once they consent (their browser at that page)
// the row says "Connected as you" with Reconnect and Disconnect, and
// Disconnect returns it to "Not connected". The admin's MCP servers list
// says the server is connected by each user.
func TestBrowserMCPPerUser(t *testing.T) {
	v := mcptest.StartPersonVault(t)
	mcpConfig, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"vault": map[string]any{"url": v.URL, "oauth": map[string]any{"per_user": true}}}})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(path, mcpConfig, 0o600))
	b := startBrowserWith(t, func(cfg *config.Config) { cfg.MCPConfig = path })

	var carol sdk.User
	require.NoError(t, b.api.Do(b.ctx, "POST", "/users", sdk.CreateUserRequest{Name: "carol"}, &carol))
	var link sdk.LoginLink
	require.NoError(t, b.api.Do(b.ctx, "POST", "/users/"+carol.ID.String()+"/login-link", nil, &link))

	// The admin sees the setting on the server's row.
	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)
	b.do(chromedp.Navigate(b.base + "/settings"))
	b.waitJS("the admin's per-user fact", `document.querySelector('#settings-mcp .mcp-row[data-name="vault"] .set-facts')?.textContent.includes('each user connects it')`)
	b.waitJS("the admin's own Connect", `document.querySelector('#settings-mcp .mcp-row[data-name="vault"] .mcp-user-connect')`)

	require.Equal(t, 200, eval[int](b, `fetch('/api/v2/auth/logout', {method: 'POST'}).then((r) => r.status === 204 ? 200 : r.status)`))
	b.do(chromedp.Navigate(b.base + link.Path))
	b.waitJS("carol signed in", `location.pathname === '/' && document.querySelector('.hero')`)
	b.do(chromedp.Navigate(b.base + "/settings"))
	row := `document.querySelector('#settings-mcp-connections .mcp-row[data-name="vault"]')`
	b.waitJS("vault not connected", row+`?.querySelector('.mcp-auth')?.textContent === 'Not connected' && `+row+`.querySelector('.mcp-user-connect')`)
	b.shot("mcp-peruser-not-connected")

	b.click(`#settings-mcp-connections .mcp-row[data-name="vault"] .mcp-user-connect`)
	b.waitJS("the consent link", row+`?.querySelector('a.mcp-connect')?.href`)
	href := eval[string](b, row+`.querySelector('a.mcp-connect').href`)
	require.True(t, strings.HasPrefix(href, strings.TrimSuffix(v.URL, "/mcp")+"/authorize?"), "the link is the vault's consent page: %s", href)
	require.Equal(t, "_blank", eval[string](b, row+`.querySelector('a.mcp-connect').target`))
	b.shot("mcp-peruser-consent")

	mcptest.Consent(t, href, "carol")
	b.waitJS("connected as carol", row+`?.querySelector('.mcp-auth')?.textContent === 'Connected as you' && `+row+`.querySelector('.mcp-disconnect')`)
	require.Equal(t, 1, v.Consents("carol"))
	b.shot("mcp-peruser-connected")

	b.click(`#settings-mcp-connections .mcp-row[data-name="vault"] .mcp-disconnect`)
	b.waitJS("disconnected", row+`?.querySelector('.mcp-auth')?.textContent === 'Not connected'`)
	b.checkNoProblems()
}
