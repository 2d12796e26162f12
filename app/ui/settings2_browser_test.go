package ui_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
)

// settingsRow finds the settings row of kind (model, provider, mcp, ...)
// whose name contains text.
func settingsRow(kind, text string) string {
	return `[...document.querySelectorAll('.` + kind + `-row')].find(e => e.querySelector('.set-name')?.textContent.includes(` + jsString(text) + `))`
}

// clickIn clicks, with a real mouse click, the element css inside the
// element rowJS finds.
func (b *browser) clickIn(rowJS, css string) {
	b.t.Helper()
	b.waitJS("the element "+css, rowJS+`?.querySelector(`+jsString(css)+`)`)
	eval[chromedp.Void](b, rowJS+`.querySelector(`+jsString(css)+`).scrollIntoView({block: 'center'})`) // not under the sticky table of contents
	b.clickJS("the element "+css, rowJS+`?.querySelector(`+jsString(css)+`)`)
}

// TestBrowserSettingsModelTest: the Test button of a model row runs one
// generation through the model's provider and shows the outcome in the
// row: the latency and the reply, or the provider's error without the key.
func TestBrowserSettingsModelTest(t *testing.T) {
	const secret = "sk-model-row-test-21fa"
	llm := llmtest.NewOpenAI(t)
	b := startBrowser(t)
	var p sdk.ChatProviderConfig
	require.NoError(t, b.api.Do(b.ctx, http.MethodPost, "/chats/providers",
		sdk.CreateChatProviderConfigRequest{Provider: "openai-compat", DisplayName: "Local", BaseURL: llm.URL, APIKey: secret}, &p))
	var m sdk.ChatModelConfig
	require.NoError(t, b.api.Do(b.ctx, http.MethodPost, "/chats/model-configs",
		map[string]any{"ai_provider_id": p.ID, "model": "qwen3", "display_name": "Qwen 3"}, &m))

	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)
	b.do(chromedp.Navigate(b.base + "/settings"))
	row := settingsRow("model", "Qwen 3")
	b.waitJS("the model row", row)

	llm.Enqueue(llmtest.TextChunks("O", "K"))
	b.clickIn(row, ".test")
	b.waitJS("the success in the row", row+`?.querySelector('.model-result.set-good')?.textContent.startsWith('Works · ')`)
	require.Equal(t, "OK", eval[string](b, row+`.querySelector('.model-sample').textContent`))
	reqs := llm.Requests()
	require.Equal(t, "/v1/chat/completions", reqs[len(reqs)-1].Path)
	require.Equal(t, "qwen3", reqs[len(reqs)-1].JSON(t)["model"])
	b.shot("76-settings-model-test")

	llm.Enqueue(llmtest.HTTPError(http.StatusUnauthorized, "Incorrect API key provided: "+secret))
	b.clickIn(row, ".test")
	b.waitJS("the failure in the row", row+`?.querySelector('.model-result.set-bad')?.textContent.startsWith('Test failed: ')`)
	require.Contains(t, eval[string](b, row+`.querySelector('.model-result').textContent`), "Incorrect API key provided")
	require.NotContains(t, eval[string](b, `document.documentElement.outerHTML`), secret)
	require.Len(t, llm.Requests(), len(reqs)+1, "one generation per click")
	b.checkNoProblems()
}

// TestBrowserSettingsMCPForm: the MCP server form edits everything. A
// server is added with a header and another with an env value; a
// connected server's include/exclude lists and a tool's effect class and
// approval are edited from its discovered tool names; after a reload the
// API and the form show what was saved, the stored header is kept while
// another is added, and no secret value is ever in the page.
func TestBrowserSettingsMCPForm(t *testing.T) {
	const headerSecret, envSecret = "Bearer mcp-form-hdr-93c2", "mcp-form-env-5d18"
	// An HTTP "MCP server" that records the headers of each connection.
	var mu sync.Mutex
	var got []http.Header
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Clone())
		mu.Unlock()
		http.Error(w, "not an MCP server", http.StatusInternalServerError)
	}))
	t.Cleanup(remote.Close)
	lastHeaders := func() http.Header {
		mu.Lock()
		defer mu.Unlock()
		require.NotEmpty(t, got)
		return got[len(got)-1]
	}
	mcpConfig, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"everything": map[string]any{"url": mcpEverything(t)}}})
	require.NoError(t, err)
	mcpPath := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(mcpPath, mcpConfig, 0o600))
	b := startBrowserWith(t, func(cfg *config.Config) { cfg.MCPConfig = mcpPath })

	configs := func() map[string]sdk.MCPServerConfig {
		t.Helper()
		servers, err := b.api.MCPServers(b.ctx)
		require.NoError(t, err)
		out := map[string]sdk.MCPServerConfig{}
		for _, s := range servers {
			require.NotNil(t, s.Config, s.Name)
			out[s.Name] = *s.Config
		}
		return out
	}
	noSecrets := func() {
		t.Helper()
		page := eval[string](b, `document.documentElement.outerHTML + [...document.querySelectorAll('input, textarea')].map(e => e.value).join(' ')`)
		require.NotContains(t, page, "mcp-form-hdr")
		require.NotContains(t, page, envSecret)
	}
	form := `document.querySelector('.set-form')`
	save := func() { t.Helper(); b.click(`.set-form button[type="submit"]`) }
	open := func() {
		t.Helper()
		b.do(chromedp.Navigate(b.base + "/settings"))
		b.waitJS("the connected server", settingsRow("mcp", "everything")+`?.querySelector('.mcp-state-connected')`)
	}

	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)
	open()

	t.Run("add a server with a header", func(t *testing.T) {
		b.t = t
		b.click(`.add-mcp`)
		b.waitJS("the MCP form", form+`?.querySelector('[name="name"]')`)
		b.setValue(`.set-form [name="name"]`, "remote")
		b.setValue(`.set-form [name="kind"]`, "http")
		b.setValue(`.set-form [name="url"]`, remote.URL)
		b.click(`.set-form .add-headers`)
		b.waitJS("a header row", form+`?.querySelector('[data-kind="headers"] .kv-row')`)
		b.setValue(`.set-form [data-kind="headers"] .kv-row [name="headers_name"]`, "Authorization")
		b.setValue(`.set-form [data-kind="headers"] .kv-row [name="headers_value"]`, headerSecret)
		save()
		b.waitJS("the new server", `!`+form+` && `+settingsRow("mcp", "remote"))
		cfg := configs()["remote"]
		require.Equal(t, []string{"Authorization"}, cfg.HeaderKeys)
		require.Equal(t, remote.URL, cfg.URL)
		noSecrets()
		b.clickIn(settingsRow("mcp", "remote"), ".test")
		b.waitJS("the test result", settingsRow("mcp", "remote")+`?.querySelector('.provider-result.set-bad')`)
		require.Equal(t, headerSecret, lastHeaders().Get("Authorization"), "the header was stored")
	})

	t.Run("add a server with an env value", func(t *testing.T) {
		b.t = t
		b.click(`.add-mcp`)
		b.waitJS("the MCP form", form+`?.querySelector('[name="name"]')`)
		b.setValue(`.set-form [name="name"]`, "local")
		b.setValue(`.set-form [name="command"]`, "/nonexistent/mcp-server")
		b.click(`.set-form .add-env`)
		b.waitJS("an env row", form+`?.querySelector('[data-kind="env"] .kv-row')`)
		b.setValue(`.set-form [data-kind="env"] .kv-row [name="env_name"]`, "API_TOKEN")
		b.setValue(`.set-form [data-kind="env"] .kv-row [name="env_value"]`, envSecret)
		save()
		b.waitJS("the new server", `!`+form+` && `+settingsRow("mcp", "local"))
		require.Equal(t, []string{"API_TOKEN"}, configs()["local"].EnvKeys)
		noSecrets()
	})

	t.Run("include, exclude, effect and approval from the discovered tools", func(t *testing.T) {
		b.t = t
		b.clickIn(settingsRow("mcp", "everything"), ".edit")
		b.waitJS("the form with the discovered tools", form+`?.querySelectorAll('.tool-setting').length === 3`)
		require.Equal(t, []string{"add", "echo", "note"}, eval[[]string](b, `[...document.querySelectorAll('.set-form [data-kind="include"] datalist option')].map(o => o.value)`))
		require.Equal(t, "Automatic (pure)", eval[string](b, `document.querySelector('.set-form .tool-setting[data-tool="echo"] [name="tool_effect"] option').textContent`))
		b.setValue(`.set-form [name="include"]`, "echo")
		b.click(`.set-form .add-include`)
		b.setValue(`.set-form [name="include"]`, "note")
		b.click(`.set-form .add-include`)
		b.waitJS("two include chips", form+`?.querySelectorAll('[data-kind="include"] .name-chip').length === 2`)
		b.setValue(`.set-form [name="exclude"]`, "add")
		b.click(`.set-form .add-exclude`)
		b.waitJS("an exclude chip", form+`?.querySelector('[data-kind="exclude"] .name-chip[data-name="add"]')`)
		b.setValue(`.set-form .tool-setting[data-tool="note"] [name="tool_effect"]`, "idempotent")
		b.setValue(`.set-form .tool-setting[data-tool="note"] [name="tool_approval"]`, "always")
		b.shot("77-settings-mcp-form")
		// Every new control has a name a screen reader reads; the form fits a phone.
		unnamed := eval[[]string](b, `[...document.querySelectorAll('.set-form button, .set-form input, .set-form select, .set-form textarea')]
			.filter(e => !(e.getAttribute('aria-label') || e.textContent.trim() || (e.id && document.querySelector('label[for="' + e.id + '"]')) || e.closest('label')))
			.map(e => e.outerHTML.slice(0, 80))`)
		require.Empty(t, unnamed)
		b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
		b.waitJS("the phone width", `innerWidth === 390`)
		require.True(t, eval[bool](b, `document.documentElement.scrollWidth <= innerWidth && `+form+`.scrollWidth <= `+form+`.clientWidth + 1`), "the form fits the phone")
		b.shot("78-settings-mcp-form-phone")
		b.do(chromedp.EmulateViewport(1280, 860))
		save()
		b.waitJS("the form closed", `!`+form)
		cfg := configs()["everything"]
		require.Equal(t, sdk.MCPToolFilter{Include: []string{"echo", "note"}, Exclude: []string{"add"}}, cfg.Tools)
		require.Equal(t, map[string]string{"note": "idempotent"}, cfg.Effects)
		require.Equal(t, map[string]string{"note": "always"}, cfg.Approvals)
	})

	t.Run("after a reload: the form shows what is stored; keep a header, add one", func(t *testing.T) {
		b.t = t
		open()
		b.waitJS("the filtered tools", settingsRow("mcp", "everything")+`?.querySelectorAll('.mcp-tool').length === 2`)
		b.clickIn(settingsRow("mcp", "everything"), ".edit")
		b.waitJS("the edit form", form+`?.querySelector('.tool-setting[data-tool="note"]')`)
		require.Equal(t, []string{"echo", "note"}, eval[[]string](b, `[...document.querySelectorAll('.set-form [data-kind="include"] .name-chip')].map(e => e.dataset.name)`))
		require.Equal(t, []string{"add"}, eval[[]string](b, `[...document.querySelectorAll('.set-form [data-kind="exclude"] .name-chip')].map(e => e.dataset.name)`))
		require.Equal(t, "idempotent", eval[string](b, `document.querySelector('.set-form .tool-setting[data-tool="note"] [name="tool_effect"]').value`))
		require.Equal(t, "always", eval[string](b, `document.querySelector('.set-form .tool-setting[data-tool="note"] [name="tool_approval"]').value`))
		// Remove one include: every tool but add again.
		b.clickIn(form+`.querySelector('[data-kind="include"] .name-chip[data-name="note"]').parentElement`, `[data-name="note"] .name-remove`)
		b.clickIn(form+`.querySelector('[data-kind="include"] .name-chip[data-name="echo"]').parentElement`, `[data-name="echo"] .name-remove`)
		save()
		b.waitJS("the form closed", `!`+form)
		cfg := configs()["everything"]
		require.Equal(t, sdk.MCPToolFilter{Include: []string{}, Exclude: []string{"add"}}, cfg.Tools)

		b.clickIn(settingsRow("mcp", "remote"), ".edit")
		b.waitJS("the stored header", form+`?.querySelector('[data-kind="headers"] .kv-row[data-name="Authorization"]')`)
		stored := `.set-form [data-kind="headers"] .kv-row[data-name="Authorization"] [name="headers_value"]`
		require.Equal(t, "", eval[string](b, `document.querySelector(`+jsString(stored)+`).value`))
		require.Equal(t, "•••• set", eval[string](b, `document.querySelector(`+jsString(stored)+`).placeholder`))
		noSecrets()
		b.click(`.set-form .add-headers`)
		b.waitJS("a new header row", form+`?.querySelector('[data-kind="headers"] .kv-row[data-stored="false"]')`)
		b.setValue(`.set-form [data-kind="headers"] .kv-row[data-stored="false"] [name="headers_name"]`, "X-Team")
		b.setValue(`.set-form [data-kind="headers"] .kv-row[data-stored="false"] [name="headers_value"]`, "t2")
		save()
		b.waitJS("the form closed", `!`+form)
		require.Equal(t, []string{"Authorization", "X-Team"}, configs()["remote"].HeaderKeys)
		b.clickIn(settingsRow("mcp", "remote"), ".test")
		b.waitJS("the test result", settingsRow("mcp", "remote")+`?.querySelector('.provider-result.set-bad')`)
		h := lastHeaders()
		require.Equal(t, headerSecret, h.Get("Authorization"), "kept")
		require.Equal(t, "t2", h.Get("X-Team"))

		// Remove the stored header.
		b.clickIn(settingsRow("mcp", "remote"), ".edit")
		b.waitJS("the stored header", form+`?.querySelector('[data-kind="headers"] .kv-row[data-name="Authorization"]')`)
		b.clickIn(form+`.querySelector('[data-kind="headers"]')`, `.kv-row[data-name="Authorization"] .kv-remove`)
		save()
		b.waitJS("the form closed", `!`+form)
		require.Equal(t, []string{"X-Team"}, configs()["remote"].HeaderKeys)
		open()
		noSecrets()
	})
	b.t = t
	b.checkNoProblems()
}

// TestBrowserSettingsAddModelNeedsProvider: with only the built-in demo
// provider, Add model says to add a provider first (no empty provider list,
// no UUID error from a blank provider) and leads to the provider form.
func TestBrowserSettingsAddModelNeedsProvider(t *testing.T) {
	b := startBrowser(t)
	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)
	b.do(chromedp.Navigate(b.base + "/settings"))
	b.waitJS("the Add model button", `document.querySelector('.add-model')`)
	b.click(`.add-model`)
	b.waitJS("the notice", `/Add a provider first/.test(document.querySelector('.set-need-provider')?.textContent || '')`)
	require.False(t, eval[bool](b, `!!document.querySelector('.set-form [name="provider"]')`), "no model form with an empty provider list")
	require.True(t, eval[bool](b, `document.activeElement === document.querySelector('.add-provider-first')`), "the way on is focused")
	require.NotContains(t, eval[string](b, `document.body.textContent`), "invalid UUID")
	b.click(`.add-provider-first`)
	b.waitJS("the provider form, the notice gone", `document.querySelector('.set-form[aria-label="Add a provider"]') && !document.querySelector('.set-need-provider')`)
	b.checkNoProblems()
}
