// The model configuration, the MCP servers and the automation (schedules
// and webhooks), wired from the Config: secret keys, presets, the provider
// factory, the stored MCP servers, the schedules runner and the webhooks
// deliverer.

package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/elicit"
	"github.com/chatd/chatd/app/files"
	"github.com/chatd/chatd/app/hooks"
	"github.com/chatd/chatd/app/schedules"
	"github.com/chatd/chatd/app/webhooks"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/api"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/llm/anthropic"
	"github.com/chatd/chatd/app/llm/demo"
	"github.com/chatd/chatd/app/llm/openai"
	"github.com/chatd/chatd/app/mcp"
	"github.com/chatd/chatd/app/modelconfig"
	"github.com/chatd/chatd/app/redact"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/app/worker"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/open"
)

// llmFactory builds the LLM clients of provider configs. Each round trip
// of a chat's model call is a provider_attempt stage. Every client masks
// the secrets out of its errors (redact.Provider), its own key learnt
// first.
func llmFactory(cfg config.Config, clk clock.Clock, secrets *redact.Secrets) modelconfig.Factory {
	build := rawFactory(cfg, clk)
	return func(p store.AIProvider, apiKey string, useResponsesAPI *bool) (llm.Provider, error) {
		// A replaced key stays masked: a late error may still quote it.
		secrets.Add("provider:"+p.ID.String(), redact.LabelAPIKey, apiKey)
		l, err := build(p, apiKey, useResponsesAPI)
		if err != nil {
			return nil, err
		}
		return redact.Provider(l, secrets), nil
	}
}

// rawFactory is llmFactory without the masking.
func rawFactory(cfg config.Config, clk clock.Clock) modelconfig.Factory {
	httpClient := &http.Client{Transport: worker.ProviderTransport(nil)}
	demoClient := demo.New(demo.Config{TokenDelay: cfg.DemoTokenDelay, Clock: clk})
	return func(p store.AIProvider, apiKey string, useResponsesAPI *bool) (llm.Provider, error) {
		switch p.Provider {
		case store.ProviderDemo:
			return demoClient, nil
		case store.ProviderOpenAI, store.ProviderOpenAICompat:
			cfg := openai.Config{APIKey: apiKey, BaseURL: p.BaseURL, HTTPClient: httpClient, UseResponsesAPI: useResponsesAPI}
			if p.Provider == store.ProviderOpenAICompat {
				// OpenAI-compatible servers speak Chat Completions only,
				// unless the config forces the Responses API.
				cfg.Name = "openai-compat"
				if useResponsesAPI == nil {
					cfg.UseResponsesAPI = new(false)
				}
			}
			return openai.New(cfg), nil
		case store.ProviderAnthropic:
			return anthropic.New(anthropic.Config{APIKey: apiKey, BaseURL: p.BaseURL, HTTPClient: httpClient}), nil
		}
		return nil, fmt.Errorf("unknown provider type %q", p.Provider)
	}
}

// workerModels resolves chats' models for the worker from the database
// configuration (cached by modelconfig).
type workerModels struct{ svc *modelconfig.Service }

// Resolve implements worker.Models.
func (w workerModels) Resolve(id uuid.NullUUID) (worker.Model, error) {
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	defer cancel()
	m, err := w.svc.Resolve(ctx, id)
	if err != nil {
		return worker.Model{}, fmt.Errorf("resolve model config: %w", err)
	}
	return worker.Model{ID: m.Config.ID, Provider: m.Client, Name: m.Config.Model, ContextLimit: m.ContextLimit,
		ReasoningEffort: m.ReasoningEffort, MaxOutputTokens: m.MaxOutputTokens,
		CompactThresholdPercent: int(m.Config.CompressionThreshold), Price: workerPrice(m.Price())}, nil
}

// randomSecretKey is the key of an app built over a store without a
// configured one (NewWithStore in tests and embeddings): API keys sealed
// with it do not survive the process.
func randomSecretKey() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// resolveTimeout bounds the configuration read of a worker's Resolve.
const resolveTimeout = 10 * time.Second

// initModels opens the model configuration: the secret key's cipher, the
// presets from the environment, a rotation when a previous key is set, and
// the change hints of other replicas.
func (a *App) initModels(ctx context.Context) error {
	key := a.cfg.SecretKey
	if key == "" {
		key = randomSecretKey()
	}
	cipher, err := modelconfig.NewCipher(key, a.cfg.SecretKeyPrevious)
	if err != nil {
		return fmt.Errorf("CHATD_SECRET_KEY: %w", err)
	}
	// Before anything is sealed with it (presets, a rotation).
	if err := a.checkSecretKey(ctx, cipher); err != nil {
		return err
	}
	a.cipher = cipher // the MCP servers' secrets too (mcpservers.go)
	a.models = modelconfig.New(a.store, modelconfig.Options{Cipher: cipher, Clock: a.clock, Publisher: a.pubsub,
		Factory: llmFactory(a.cfg, a.clock, a.secrets), CacheTTL: a.cfg.ModelCacheTTL})
	presets, def, err := modelconfig.EnvPresets(modelconfig.Env{
		OpenAIAPIKey: a.cfg.OpenAIAPIKey, OpenAIBaseURL: a.cfg.OpenAIBaseURL,
		AnthropicAPIKey: a.cfg.AnthropicAPIKey, AnthropicBaseURL: a.cfg.AnthropicBaseURL,
		Models: a.cfg.Models, DefaultModel: a.cfg.DefaultModel,
	})
	if err != nil {
		return fmt.Errorf("models: %w", err)
	}
	if err := a.models.ApplyPresets(ctx, presets, def); err != nil {
		return fmt.Errorf("models: %w", err)
	}
	if a.cfg.SecretKeyPrevious != "" {
		n, err := a.models.Rotate(ctx)
		if err != nil {
			return fmt.Errorf("rotate the secret key: %w", err)
		}
		a.log.Info("secret key rotated: provider API keys sealed again with CHATD_SECRET_KEY; CHATD_SECRET_KEY_PREVIOUS may go", "sealed", n)
	}
	cancel, err := a.pubsub.Subscribe(ctx, modelconfig.ChangedChannel, func([]byte) { a.models.Invalidate() })
	if err != nil {
		return fmt.Errorf("subscribe to model configuration changes: %w", err)
	}
	closePub := a.closePub
	a.closePub = func() { cancel(); closePub() }
	return nil
}

// sealedSecret is a secret stored sealed: a provider's API key, an MCP
// server's env and header values.
type sealedSecret struct {
	owner string // "provider:<id>" or "mcp:<id>", as a.secrets names them
	what  string // for messages
	data  []byte
}

// sealedSecrets lists the secrets in the database that a secret key
// sealed (MCP rows written before sealing existed, "plain:", are not).
func sealedSecrets(ctx context.Context, s store.Store) ([]sealedSecret, error) {
	var out []sealedSecret
	err := s.ReadTx(ctx, func(tx store.Reader) error {
		providers, err := tx.AIProviderList(ctx)
		if err != nil {
			return err
		}
		for _, p := range providers {
			if len(p.APIKeyCipher) > 0 {
				out = append(out, sealedSecret{"provider:" + p.ID.String(), "provider " + p.DisplayName, p.APIKeyCipher})
			}
		}
		servers, err := tx.MCPServerList(ctx)
		if err != nil {
			return err
		}
		for _, m := range servers {
			if _, err := (mcp.PlainSealer{}).Open(m.Secrets); len(m.Secrets) > 0 && err != nil {
				out = append(out, sealedSecret{"mcp:" + m.ID.String(), "MCP server " + m.Name, m.Secrets})
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the sealed secrets: %w", err)
	}
	return out, nil
}

// checkSecretKey refuses a secret key that opens none of the secrets
// already sealed in the database: it is not the key they were sealed with
// (a key file created next to another path to the database, a wrong
// CHATD_SECRET_KEY), and running on would drop the MCP servers and fail
// every provider until their secrets were entered again. The secrets it
// opens are learnt for masking.
func (a *App) checkSecretKey(ctx context.Context, c *modelconfig.Cipher) error {
	sealed, err := sealedSecrets(ctx, a.store)
	if err != nil {
		return err
	}
	opened := 0
	for _, sec := range sealed {
		plain, _, err := c.Open(sec.data)
		if err != nil {
			continue
		}
		opened++
		if strings.HasPrefix(sec.owner, "provider:") {
			a.secrets.Add(sec.owner, redact.LabelAPIKey, plain)
		} // an MCP server's values are learnt when the manager gets its config
	}
	if len(sealed) == 0 || opened > 0 {
		return nil
	}
	return fmt.Errorf("%s opens none of the %d secrets sealed in the database (%s, ...): it is not the key they were sealed with; "+
		"start with that key (CHATD_SECRET_KEY, or on SQLite the key file next to the path the database was first served from)",
		a.secretKeySource(), len(sealed), sealed[0].what)
}

// secretKeySource names where the secret key came from, for errors.
func (a *App) secretKeySource() string {
	switch {
	case a.secretKeyFile != "":
		return "the secret key in " + a.secretKeyFile
	case a.cfg.SecretKey != "":
		return "CHATD_SECRET_KEY"
	}
	return "the random secret key of an app without Config.SecretKey"
}

// requireSecretKey refuses PostgreSQL without CHATD_SECRET_KEY: replicas
// must share one key.
func requireSecretKey(cfg config.Config) error {
	if cfg.SecretKey == "" && open.IsPostgres(cfg.DB) {
		return errors.New("CHATD_SECRET_KEY is required with PostgreSQL: every replica must seal provider API keys with the same key")
	}
	return nil
}

// loadKeyFile returns the SQLite secret key and its file, for a store
// that is open (so this process holds the database's lock: a start that
// is refused writes nothing) and migrated. A missing key file is created
// next to the database's real path, unless the database already holds
// sealed secrets: a new key could not open them, so the start is refused,
// naming the file it looked for.
func loadKeyFile(ctx context.Context, db string, s store.Store) (key, file string, err error) {
	files := modelconfig.KeyFiles(db)
	for _, f := range files {
		key, err := modelconfig.ReadKeyFile(f)
		if err == nil {
			return key, f, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", "", fmt.Errorf("CHATD_SECRET_KEY unset: %w", err)
		}
	}
	sealed, err := sealedSecrets(ctx, s)
	if err != nil {
		return "", "", err
	}
	if len(sealed) > 0 {
		return "", "", fmt.Errorf("CHATD_SECRET_KEY unset and no key file %s, but the database holds %d sealed secrets (%s, ...); "+
			"a new key could not open them. Copy the key file they were sealed with (next to the path the database was first "+
			"served from; a hard link or a moved database has none) to %s, mode 0600, or set CHATD_SECRET_KEY",
			files[0], len(sealed), sealed[0].what, files[0])
	}
	if key, err = modelconfig.CreateKeyFile(files[0]); err != nil {
		return "", "", fmt.Errorf("CHATD_SECRET_KEY unset: %w", err)
	}
	return key, files[0], nil
}

// openMCP builds the MCP servers: the manager, and the stored servers it
// follows, seeded from CHATD_MCP_CONFIG (a bad file stops startup) and
// loaded once before anything asks for tools.
func (a *App) openMCP(ctx context.Context) error {
	var file mcp.Config
	if a.cfg.MCPConfig != "" {
		var err error
		if file, err = mcp.LoadConfig(a.cfg.MCPConfig); err != nil {
			return fmt.Errorf("load the MCP servers: %w", err)
		}
	}
	// Nothing connects before the first chat or status asks.
	a.elicit = elicit.New(a.machine, a.store, a.pubsub, a.clock, a.log, elicit.Config{Timeout: a.cfg.MCPElicitationTimeout})
	a.mcp = mcp.NewManager(mcp.Config{}, mcp.Options{
		Log: a.log, Registerer: a.metrics.Registry, Clock: a.clock, Secrets: a.secrets, Elicitor: mcpElicitor{a.elicit},
		// The authorization servers send the admin's browser back here.
		OAuthRedirectURL: func() string {
			if a.cfg.AdvertiseURL == "" {
				return ""
			}
			return strings.TrimRight(a.cfg.AdvertiseURL, "/") + api.MCPOAuthCallbackPath
		},
		// OAuth tokens are sealed like the servers' other secrets, so a
		// restart keeps a connected server connected.
		Tokens: mcp.StoreTokens{Store: a.store, Sealer: mcp.CipherSealer{Cipher: a.cipher}, Clock: a.clock},
	})
	a.mcpServers = mcp.NewServers(a.mcp, mcp.ServersOptions{
		Store: a.store, Pubsub: a.pubsub, Clock: a.clock, Log: a.log, File: file,
		ResyncInterval: a.cfg.MCPResyncInterval,
		// Env and header values are sealed with the providers' key.
		Sealer: mcp.CipherSealer{Cipher: a.cipher},
	})
	if err := a.mcpServers.Seed(ctx); err != nil {
		return fmt.Errorf("seed the MCP servers from %s: %w", a.cfg.MCPConfig, err)
	}
	if err := a.mcpServers.Reload(ctx); err != nil {
		return fmt.Errorf("load the MCP servers: %w", err)
	}
	return nil
}

// mcpAdmin is mcp.Servers as the API sees it, its errors translated.
type mcpAdmin struct{ s *mcp.Servers }

var _ api.MCPAdmin = mcpAdmin{}

func (m mcpAdmin) Create(ctx context.Context, body []byte) (sdk.MCPServer, error) {
	out, err := m.s.Create(ctx, body)
	return out, mcpAPIError(err)
}

func (m mcpAdmin) Update(ctx context.Context, id uuid.UUID, body []byte) (sdk.MCPServer, error) {
	out, err := m.s.Update(ctx, id, body)
	return out, mcpAPIError(err)
}

func (m mcpAdmin) Delete(ctx context.Context, id uuid.UUID) error {
	return mcpAPIError(m.s.Delete(ctx, id))
}

func (m mcpAdmin) Test(ctx context.Context, id uuid.UUID) (sdk.MCPServerTest, error) {
	out, err := m.s.Test(ctx, id)
	return out, mcpAPIError(err)
}

func (m mcpAdmin) Configs(ctx context.Context) (map[uuid.UUID]sdk.MCPServerConfig, error) {
	return m.s.Configs(ctx)
}

// mcpCatalog is the API's view of the MCP servers' resources and prompts:
// the manager's calls, their errors mapped to the API's kinds.
type mcpCatalog struct{ m *mcp.Manager }

var _ api.MCPCatalog = mcpCatalog{}

func (c mcpCatalog) Resources(ctx context.Context, u tools.User, id uuid.UUID, cursor string) (sdk.MCPResourceList, error) {
	out, err := c.m.Resources(ctx, u, id, cursor)
	return out, mcpAPIError(err)
}

func (c mcpCatalog) ReadResource(ctx context.Context, u tools.User, id uuid.UUID, uri string) (sdk.MCPResourceRead, error) {
	out, err := c.m.ReadResource(ctx, u, id, uri)
	return out, mcpAPIError(err)
}

func (c mcpCatalog) Prompts(ctx context.Context, u tools.User, id uuid.UUID, cursor string) (sdk.MCPPromptList, error) {
	out, err := c.m.Prompts(ctx, u, id, cursor)
	return out, mcpAPIError(err)
}

func (c mcpCatalog) GetPrompt(ctx context.Context, u tools.User, id uuid.UUID, name string, args map[string]string) (sdk.MCPPromptResult, error) {
	out, err := c.m.GetPrompt(ctx, u, id, name, args)
	return out, mcpAPIError(err)
}

// mcpAPIError maps app/mcp's admin, resource and prompt errors to the
// API's kinds.
func mcpAPIError(err error) error {
	for _, k := range []struct{ mcp, api error }{
		{mcp.ErrInvalid, api.ErrMCPServerInvalid},
		{mcp.ErrNotFound, api.ErrMCPServerNotFound},
		{mcp.ErrNameTaken, api.ErrMCPServerExists},
		{mcp.ErrInConfigFile, api.ErrMCPServerInConfigFile},
		{mcp.ErrUnavailable, api.ErrMCPServerUnavailable},
		{mcp.ErrUnsupported, api.ErrMCPUnsupported},
		{mcp.ErrItemNotFound, api.ErrMCPItemNotFound},
		{mcp.ErrInvalidArguments, api.ErrMCPInvalidArguments},
		{mcp.ErrInvalidCursor, api.ErrMCPInvalidCursor},
		{mcp.ErrServerError, api.ErrMCPServerFailed},
	} {
		if errors.Is(err, k.mcp) {
			return &api.MCPAdminError{Kind: k.api, Detail: err.Error()}
		}
	}
	return err
}

// workerPrice is a model config's price for the usage ledger.
func workerPrice(p *sdk.ModelPrice) worker.Price {
	if p == nil {
		return worker.Price{}
	}
	return worker.Price{InputPerMillion: p.InputPerMillion, OutputPerMillion: p.OutputPerMillion}
}

// automation is what makes chats work without a person at the keyboard:
// the schedules' runner and the webhooks' deliverer, one of each per
// replica (both are safe to run on every replica).
type automation struct {
	schedules *schedules.Service
	runner    *schedules.Runner
	webhooks  *webhooks.Service
	deliverer *webhooks.Deliverer
}

// initAutomation builds the schedules and webhooks parts over the app's
// store, machine and lifecycle hooks (scheduled prompts are evaluated like
// a person's).
func (a *App) initAutomation(h *hooks.Dispatcher) {
	fileCap := a.cfg.Files.MaxPerChat
	if fileCap == 0 {
		fileCap = files.DefaultMaxPerChat
	}
	au := &a.auto
	au.schedules = schedules.New(a.store, a.clock, a.cfg.Schedules)
	au.runner = schedules.NewRunner(schedules.RunnerConfig{Machine: a.machine, Store: a.store, Hooks: h, Clock: a.clock,
		Log: a.log, FileCap: fileCap, MaxChats: a.cfg.Limits.MaxChatsPerUser})
	au.schedules.OnChange(au.runner.Wake)
	au.webhooks = webhooks.New(a.store, a.clock, a.cfg.Webhooks)
	au.deliverer = webhooks.NewDeliverer(webhooks.DelivererConfig{Store: a.store, Clock: a.clock, Log: a.log,
		AllowPrivate: a.cfg.Webhooks.AllowPrivate})
}

// wakeDeliverer is the machine's OnOutbox: deliveries a bundle wrote go
// out at once from this replica.
func (a *App) wakeDeliverer() {
	if a.auto.deliverer != nil {
		a.auto.deliverer.Wake()
	}
}

func (a *App) startAutomation(ctx context.Context) error {
	if err := a.auto.runner.Start(ctx); err != nil {
		return err
	}
	return a.auto.deliverer.Start(ctx)
}

func (a *App) stopAutomation() {
	if a.auto.runner != nil {
		a.auto.runner.Stop()
		a.auto.deliverer.Stop()
	}
}

// mcpElicitor puts the MCP servers' questions to the chats through the
// elicitation service.
type mcpElicitor struct{ s *elicit.Service }

func (e mcpElicitor) Elicit(ctx context.Context, q mcp.Elicitation) (mcp.ElicitationAnswer, error) {
	a, err := e.s.Ask(ctx, elicit.Question{
		ChatID: q.ChatID, ToolCallID: q.ToolCallID, Server: q.Server, Mode: q.Mode, Message: q.Message,
		Schema: q.Schema, URL: q.URL,
	})
	return mcp.ElicitationAnswer{Action: a.Action, Content: a.Content}, err
}

// startElicit runs the sweep that cancels questions whose holder is gone
// (a restart), until stopElicit.
func (a *App) startElicit(ctx context.Context) {
	if a.elicit == nil || a.elicitStop != nil {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.elicit.Run(ctx)
	}()
	a.elicitStop = func() { cancel(); <-done }
}

func (a *App) stopElicit() {
	if a.elicitStop != nil {
		a.elicitStop()
		a.elicitStop = nil
	}
}
