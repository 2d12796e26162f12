package ui_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store/dbtest"
)

// TestBrowserSettings walks the settings page as an admin (providers with
// a connection test and model discovery, models with the default star,
// the enable switch and effort bounds, MCP servers with their state and
// tools, users, tokens) and as a user (My tokens and a read-only model
// list), at desktop and phone widths in both themes. Every change is
// checked through the API; the API's errors show inline.
func TestBrowserSettings(t *testing.T) {
	const secret = "sk-settings-secret-77ab"
	llm := llmtest.NewOpenAI(t)
	llm.SetModels(llmtest.ListedModel{ID: "qwen3", Fields: map[string]any{"max_model_len": 32768}}, llmtest.ListedModel{ID: "llama3"})
	mcpConfig, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"url": mcpEverything(t)},
		"offline":    map[string]any{"url": closedPortURL(t)},
	}})
	require.NoError(t, err)
	mcpPath := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(mcpPath, mcpConfig, 0o600))

	ctx := context.Background()
	a, err := app.NewWithStore(ctx, config.Config{BootstrapToken: browserToken, DemoTokenDelay: tokenDelay, MCPConfig: mcpPath}, dbtest.NewSQLite(t), io.Discard)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, a.Close()) })
	conns := &streamConns{}
	srv := httptest.NewServer(conns.wrap(a.Handler()))
	t.Cleanup(srv.Close)
	a.SetAdvertiseURL(srv.URL)
	appCtx, stopApp := context.WithCancel(ctx)
	require.NoError(t, a.Start(appCtx))
	t.Cleanup(func() { stopApp(); a.Stop() })
	userToken, _, err := auth.CreateToken(ctx, a.Internals().Store, "carol", false, "test", time.Now())
	require.NoError(t, err)

	b := openTab(t, srv.URL, conns)
	get := func(path string, out any) {
		t.Helper()
		require.NoError(t, b.api.Do(b.ctx, http.MethodGet, path, nil, out))
	}
	providers := func() []sdk.ChatProviderConfig {
		var ps []sdk.ChatProviderConfig
		get("/chats/providers", &ps)
		return ps
	}
	models := func() map[string]sdk.ChatModelConfig {
		var ms []sdk.ChatModelConfig
		get("/chats/model-configs", &ms)
		out := map[string]sdk.ChatModelConfig{}
		for _, m := range ms {
			out[m.Model] = m
		}
		return out
	}
	row := func(kind, text string) string {
		x, _ := json.Marshal(text)
		return `[...document.querySelectorAll('.` + kind + `-row')].find(e => e.querySelector('.set-name')?.textContent.includes(` + string(x) + `))`
	}
	model := func(name string) string { return `document.querySelector('.model-row[data-model="` + name + `"]')` }
	user := func(name string) string { return `document.querySelector('.user-row[data-username="` + name + `"]')` }
	// click clicks the button of a row whose class or aria-label matches.
	click := func(rowJS, css string) {
		t.Helper()
		b.waitJS("the button "+css, rowJS+`?.querySelector(`+jsString(css)+`)`)
		// Clicked in the page, in the same task that finds it: the list may
		// render again between a lookup and a CDP click, and a click aimed at
		// the replaced node then waits forever (seen in CI).
		eval[chromedp.Void](b, `(() => { `+rowJS+`.querySelector(`+jsString(css)+`).click(); })()`)
	}
	confirm := func() {
		t.Helper()
		b.waitJS("the confirmation", `document.querySelector('dialog[open] button[value="ok"]')`)
		b.click(`dialog[open] button[value="ok"]`)
	}
	form := `document.querySelector('.set-form')`
	save := func() { t.Helper(); b.click(`.set-form button[type="submit"]`) }

	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.hero')`)

	t.Run("the page from the sidebar", func(t *testing.T) {
		b.t = t
		b.click(`.sidebar .settings-link`)
		b.waitJS("the settings page", `location.pathname === '/settings' && document.querySelectorAll('.set-section').length === 6`)
		require.Equal(t, []string{"Models", "Providers", "MCP servers", "Users", "My tokens", "Webhooks"},
			eval[[]string](b, `[...document.querySelectorAll('.set-section h2')].map(e => e.textContent)`))
		require.Equal(t, "Settings · chatd", eval[string](b, `document.title`))
		b.waitJS("the loaded sections", model("demo")+` && `+user("admin")+` && document.querySelector('.token-row')`)
	})

	t.Run("providers: add, key never shown, test, discover", func(t *testing.T) {
		b.t = t
		b.click(`.add-provider`)
		b.waitJS("the provider form", form+`?.querySelector('[name="provider"]')`)
		b.setValue(`.set-form [name="provider"]`, "openai-compat")
		b.setValue(`.set-form [name="display_name"]`, "Local")
		b.setValue(`.set-form [name="base_url"]`, "localhost:11434")
		b.setValue(`.set-form [name="api_key"]`, secret)
		save()
		b.waitJS("the inline base_url error", form+`?.querySelector('.set-error').textContent.includes('base_url')`)
		b.setValue(`.set-form [name="base_url"]`, llm.URL)
		save()
		b.waitJS("the new provider", `!`+form+` && `+row("provider", "Local")+`?.textContent.includes('key set')`)
		var local sdk.ChatProviderConfig
		for _, p := range providers() {
			if p.DisplayName == "Local" {
				local = p
			}
		}
		require.True(t, local.HasAPIKey)
		require.Equal(t, "openai-compat", local.Provider)

		// Edit: the key field is empty with a placeholder; empty keeps it.
		click(row("provider", "Local"), ".edit")
		b.waitJS("the edit form", form+`?.querySelector('[name="api_key"]')`)
		require.Equal(t, "", eval[string](b, `document.querySelector('.set-form [name="api_key"]').value`))
		require.Equal(t, "•••• set", eval[string](b, `document.querySelector('.set-form [name="api_key"]').placeholder`))
		require.NotContains(t, eval[string](b, `document.documentElement.outerHTML`), secret)
		b.setValue(`.set-form [name="display_name"]`, "Local vLLM")
		save()
		b.waitJS("the renamed provider", `!`+form+` && `+row("provider", "Local vLLM"))

		click(row("provider", "Local vLLM"), ".test")
		b.waitJS("the test result", row("provider", "Local vLLM")+`?.querySelector('.provider-result.set-good')?.textContent === 'Connected · 2 models'`)
		reqs := llm.Requests()
		require.Equal(t, "Bearer "+secret, reqs[len(reqs)-1].Header.Get("Authorization"), "the key was kept")

		click(row("provider", "Local vLLM"), ".discover")
		discovered := row("provider", "Local vLLM") + `?.querySelector('.discovered li[data-model="qwen3"]')`
		b.waitJS("the discovered models", discovered+`?.textContent.includes('32,768 tokens')`)
		b.shot("70-settings-discover")
		click(row("provider", "Local vLLM"), `.discovered li[data-model="qwen3"] .add-discovered`)
		b.waitJS("the prefilled model form", form+`?.querySelector('[name="model"]').value === 'qwen3' && `+form+`.querySelector('[name="context_limit"]').value === '32768'`)
		save()
		b.waitJS("the new model", `!`+form+` && `+model("qwen3")+`?.textContent.includes('32,768 tokens')`)
		m := models()["qwen3"]
		require.Equal(t, local.ID, m.AIProviderID)
		require.Equal(t, int64(32768), m.ContextLimit)
		require.False(t, m.IsDefault)

		// The new model is in the composer's picker without a reload.
		eval[chromedp.Void](b, `window.__sameDocument = true`)
		b.click(`.sidebar .new-chat`)
		b.waitJS("the new model in the picker", `document.querySelector('.hero') && [...document.querySelectorAll('.composer .picker:not(.effort) option')].some(o => o.textContent.includes('qwen3'))`)
		require.True(t, eval[bool](b, `window.__sameDocument === true`), "no reload")
		b.click(`.sidebar .settings-link`)
		b.waitJS("the settings again", row("provider", "Local vLLM")+` && `+model("qwen3"))

		// Remove the stored key.
		click(row("provider", "Local vLLM"), ".edit")
		b.waitJS("the edit form", form+`?.querySelector('[name="remove_key"]')`)
		b.click(`.set-form [name="remove_key"]`)
		save()
		b.waitJS("the provider without a key", `!`+form+` && `+row("provider", "Local vLLM")+`?.textContent.includes('no key')`)
		for _, p := range providers() {
			if p.ID == local.ID {
				require.False(t, p.HasAPIKey)
			}
		}
	})

	t.Run("models: default star, enable, effort bounds, errors, delete", func(t *testing.T) {
		b.t = t
		click(model("qwen3"), ".star")
		b.waitJS("the moved star", model("qwen3")+`?.querySelector('.star').getAttribute('aria-pressed') === 'true' && `+model("demo")+`.querySelector('.star').getAttribute('aria-pressed') === 'false'`)
		require.True(t, models()["qwen3"].IsDefault)
		require.False(t, models()["demo"].IsDefault)

		click(model("demo"), ".switch")
		b.waitJS("the disabled demo model", model("demo")+`?.querySelector('.switch').getAttribute('aria-checked') === 'false'`)
		require.False(t, models()["demo"].Enabled)
		click(model("demo"), ".switch")
		b.waitJS("the enabled demo model", model("demo")+`?.querySelector('.switch').getAttribute('aria-checked') === 'true'`)
		require.True(t, models()["demo"].Enabled)

		click(model("qwen3"), ".edit")
		b.waitJS("the model form", form+`?.querySelector('[name="effort_max"]')`)
		b.setValue(`.set-form [name="effort_max"]`, "low")
		b.setValue(`.set-form [name="effort_default"]`, "high")
		save()
		b.waitJS("the API's error inline", form+`?.querySelector('.set-error').textContent.includes('reasoning_effort')`)
		b.setValue(`.set-form [name="effort_max"]`, "high")
		b.setValue(`.set-form [name="effort_default"]`, "low")
		b.setValue(`.set-form [name="display_name"]`, "Qwen 3")
		save()
		b.waitJS("the edited model", `!`+form+` && `+row("model", "Qwen 3")+`?.textContent.includes('effort low (max high)')`)
		m := models()["qwen3"]
		require.Equal(t, "Qwen 3", m.DisplayName)
		require.NotNil(t, m.ModelConfig)
		require.NotNil(t, m.ModelConfig.ReasoningEffort)
		require.Equal(t, "high", m.ModelConfig.ReasoningEffort.Max)
		require.Equal(t, "low", m.ModelConfig.ReasoningEffort.Default)

		// A model added by hand, then deleted.
		b.click(`.add-model`)
		b.waitJS("the new model form", form+`?.querySelector('[name="model"]')`)
		b.setValue(`.set-form [name="provider"]`, models()["qwen3"].AIProviderID.String())
		b.setValue(`.set-form [name="model"]`, "llama3")
		save()
		b.waitJS("the llama3 row", `!`+form+` && `+model("llama3"))
		click(model("llama3"), ".delete")
		confirm()
		b.waitJS("the llama3 row gone", `!`+model("llama3"))
		_, ok := models()["llama3"]
		require.False(t, ok)
	})

	t.Run("MCP servers: state, tools, test, disable, add, delete", func(t *testing.T) {
		b.t = t
		b.waitJS("the connected server with its tools", row("mcp", "everything")+`?.querySelector('.mcp-state-connected') && `+row("mcp", "everything")+`.querySelectorAll('.mcp-tool').length === 3`)
		effects := eval[[]string](b, `[...`+row("mcp", "everything")+`.querySelectorAll('.mcp-tool .effect')].map(e => e.textContent).sort()`)
		require.Equal(t, []string{"effectful", "idempotent", "pure"}, effects)
		b.waitJS("the failed server with its error", row("mcp", "offline")+`?.querySelector('.mcp-state-failed') && `+row("mcp", "offline")+`.querySelector('.mcp-error').textContent !== ''`)
		click(row("mcp", "everything"), ".test")
		b.waitJS("the MCP test result", row("mcp", "everything")+`?.querySelector('.provider-result.set-good')?.textContent.startsWith('Connected')`)
		click(row("mcp", "offline"), ".test")
		b.waitJS("the failed MCP test", row("mcp", "offline")+`?.querySelector('.provider-result.set-bad')?.textContent.startsWith('Connection failed')`)

		click(row("mcp", "offline"), ".switch")
		b.waitJS("the disabled server", row("mcp", "offline")+`?.querySelector('.mcp-state-disabled')`)
		servers, err := b.api.MCPServers(b.ctx)
		require.NoError(t, err)
		for _, s := range servers {
			if s.Name == "offline" {
				require.Equal(t, "disabled", s.State)
			}
		}

		b.click(`.add-mcp`)
		b.waitJS("the MCP form", form+`?.querySelector('[name="name"]')`)
		b.setValue(`.set-form [name="name"]`, "extra")
		b.setValue(`.set-form [name="kind"]`, "http")
		b.setValue(`.set-form [name="url"]`, closedPortURL(t))
		b.setValue(`.set-form [name="access"]`, "users")
		b.setValue(`.set-form [name="access_users"]`, " admin, ")
		save()
		b.waitJS("the new server", `!`+form+` && `+row("mcp", "extra"))
		b.waitJS("its access in the row", row("mcp", "extra")+`.querySelector('.set-facts').textContent.includes('used by admin and admins')`)
		b.waitJS("the default access shown", row("mcp", "everything")+`.querySelector('.set-facts').textContent.includes('used by all users (default)')`)
		servers, err = b.api.MCPServers(b.ctx)
		require.NoError(t, err)
		for _, s := range servers {
			if s.Name == "extra" {
				require.Equal(t, sdk.MCPAccess{Mode: sdk.MCPAccessUsers, Users: []string{"admin"}}, s.Config.Access)
				require.False(t, s.Config.AccessDefault)
			}
		}
		b.shot("71-settings-mcp")
		click(row("mcp", "extra"), ".delete")
		confirm()
		b.waitJS("the server gone", `!`+row("mcp", "extra"))
		servers, err = b.api.MCPServers(b.ctx)
		require.NoError(t, err)
		require.Len(t, servers, 2)
	})

	t.Run("users: create, admin, disable, the last admin", func(t *testing.T) {
		b.t = t
		b.click(`.add-user`)
		b.waitJS("the user form", form+`?.querySelector('[name="username"]')`)
		b.setValue(`.set-form [name="username"]`, "bad name")
		save()
		b.waitJS("the username error", form+`?.querySelector('.set-error').textContent.includes('username')`)
		b.setValue(`.set-form [name="username"]`, "bob")
		save()
		b.waitJS("bob", `!`+form+` && `+user("bob"))

		// A login link for bob, from here rather than the server's shell;
		// in another browser it signs bob in.
		click(user("bob"), ".login-link-btn")
		b.waitJS("the link", `/^http:\/\/[^/]+\/login#code=chatdlc_/.test(document.querySelector('#settings-users .login-link')?.textContent)`)
		link := eval[string](b, `document.querySelector('#settings-users .login-link').textContent`)
		require.True(t, strings.HasPrefix(link, b.base+"/login#code="), link)
		b.checkViews([]view{phoneLight, phoneDark}, "76-settings-login-link", "#settings-users .login-link", "#settings-users .copy-link")
		other := openTab(t, b.base, conns)
		other.do(chromedp.Navigate(link))
		other.waitJS("bob signed in", `location.pathname === '/' && document.querySelector('.user-name')?.textContent === 'bob'`)
		b.clickText("#settings-users .token-new .btn", "Done")
		b.waitJS("the link gone", `!document.querySelector('#settings-users .login-link')`)

		click(user("bob"), ".admin-toggle")
		b.waitJS("bob the admin", user("bob")+`?.querySelector('.set-badge')?.textContent === 'admin'`)
		click(user("bob"), ".disable-toggle")
		b.waitJS("bob disabled", user("bob")+`?.textContent.includes('disabled')`)
		var users struct{ Users []sdk.User }
		get("/users", &users)
		for _, u := range users.Users {
			if u.Name == "bob" {
				require.True(t, u.Admin)
				require.True(t, u.Disabled)
			}
		}
		// bob is disabled: the bootstrap admin is the last enabled admin.
		click(user("admin"), ".admin-toggle")
		b.waitJS("the LAST_ADMIN error", `document.querySelector('#settings-users .set-error').textContent !== ''`)
		require.Contains(t, eval[string](b, `document.querySelector('#settings-users .set-error').textContent`), "admin")
		me, err := b.api.Me(b.ctx)
		require.NoError(t, err)
		require.True(t, me.Admin)
	})

	t.Run("my tokens: create with the secret once, revoke", func(t *testing.T) {
		b.t = t
		b.click(`.add-token`)
		b.waitJS("the token form", form+`?.querySelector('[name="token_name"]')`)
		b.setValue(`.set-form [name="token_name"]`, "ci")
		save()
		b.waitJS("the secret", `document.querySelector('.token-secret')?.textContent.startsWith('chatd_') && `+row("token", "ci"))
		key := eval[string](b, `document.querySelector('.token-secret').textContent`)
		require.Contains(t, eval[string](b, row("token", "ci")+`.textContent`), "expires")
		me, err := sdk.New(b.base, key).Me(b.ctx)
		require.NoError(t, err)
		require.Equal(t, "admin", me.Name)
		b.click(`.copy-token`)
		b.waitJS("copied", `document.querySelector('.copy-token .label').textContent !== 'Copy'`)
		b.shot("72-settings-token")
		b.clickText(".token-new .btn", "Done")
		b.waitJS("the secret gone", `!document.querySelector('.token-secret')`)
		click(row("token", "ci"), ".revoke")
		confirm()
		b.waitJS("the token gone", `!`+row("token", "ci"))
		_, err = sdk.New(b.base, key).Me(b.ctx)
		require.Error(t, err, "the revoked token answers 401")
	})

	t.Run("both themes, desktop and phone", func(t *testing.T) {
		b.t = t
		for _, scheme := range []string{"light", "dark"} {
			b.scheme(scheme)
			b.do(chromedp.EmulateViewport(1280, 860))
			b.waitJS("no overflow", `document.querySelector('.settings-page').scrollWidth <= document.querySelector('.settings-page').clientWidth`)
			b.shot("73-settings-" + scheme + "-wide")
			b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
			b.waitJS("the phone width", `innerWidth === 390`)
			require.True(t, eval[bool](b, `document.documentElement.scrollWidth <= innerWidth && [...document.querySelectorAll('.set-row')].every(r => r.scrollWidth <= r.clientWidth + 1)`), "nothing wider than the phone")
			b.shot("74-settings-" + scheme + "-phone")
		}
		b.scheme("light")
		b.do(chromedp.EmulateViewport(1280, 860))
		// Every control has a name a screen reader reads.
		unnamed := eval[[]string](b, `[...document.querySelectorAll('.settings-view button, .settings-view a, .settings-view input, .settings-view select, .settings-view textarea')]
			.filter(e => !(e.getAttribute('aria-label') || e.textContent.trim() || (e.id && document.querySelector('label[for="' + e.id + '"]')) || e.closest('label')))
			.map(e => e.outerHTML.slice(0, 80))`)
		require.Empty(t, unnamed)
		// Keyboard: a section link moves focus to its heading; Enter on a star.
		b.do(chromedp.Focus(chromedp.CSS(`.set-toc-link[href="#settings-tokens"]`)))
		b.do(pressEnter)
		b.waitJS("the focused heading", `document.activeElement?.id === 'settings-tokens-h'`)
		b.do(chromedp.Focus(chromedp.CSS(`.model-row .star:not([disabled])`)))
		b.do(chromedp.KeyEvent("\r"))
		b.waitJS("the demo model default again", model("demo")+`?.querySelector('.star').getAttribute('aria-pressed') === 'true'`)
		require.True(t, models()["demo"].IsDefault)
	})

	t.Run("a user sees only tokens and the models", func(t *testing.T) {
		b.t = t
		b.do(chromedp.Navigate(b.base + "/login#token=" + userToken))
		b.waitJS("carol signed in", `location.pathname === '/' && document.querySelector('.hero')`)
		b.do(chromedp.Navigate(b.base + "/settings"))
		b.waitJS("her settings", `document.querySelectorAll('.set-section').length === 4 && `+model("demo")+` && document.querySelector('.token-row')`)
		require.Equal(t, []string{"Models", "My MCP connections", "My tokens", "Webhooks"}, eval[[]string](b, `[...document.querySelectorAll('.set-section h2')].map(e => e.textContent)`))
		require.False(t, eval[bool](b, `!!document.querySelector('.add-model, .model-row .switch, .model-row .edit, .model-row .star:not([disabled])')`), "read-only models")
		require.False(t, eval[bool](b, `!!`+model("llama3")), "enabled models only")
		b.scheme("dark")
		b.shot("75-settings-user-dark")
		b.scheme("light")
	})
	b.t = t
	b.checkNoProblems()
}
