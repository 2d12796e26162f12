package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/llm/anthropic"
	"github.com/chatd/chatd/app/llm/demo"
	"github.com/chatd/chatd/app/llm/openai"
	"github.com/chatd/chatd/app/modelconfig"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/worker"
	"github.com/chatd/chatd/store"
)

// modelNamespace makes model config ids stable: the same provider/model
// always has the same id, across restarts and replicas.
var modelNamespace = uuid.MustParse("5b0e1a8e-8b2b-4a51-9f44-7c2f6e0c4a7d")

// ModelID is the stable id of provider/model.
func ModelID(provider, model string) uuid.UUID {
	return uuid.NewSHA1(modelNamespace, []byte(provider+"/"+model))
}

// presetProviderID is the stable id of the provider config an environment
// preset creates.
func presetProviderID(name string) uuid.UUID {
	return uuid.NewSHA1(modelNamespace, []byte("provider:"+name))
}

// DemoModelName is the built-in offline model.
const DemoModelName = "demo"

// demoContextLimit is the demo model's pretend context window (in words),
// small enough that automatic compaction can be seen in a long demo chat.
const demoContextLimit = 4000

// envProvider is a provider the environment configures.
type envProvider struct {
	name, typ, display, baseURL, apiKey string
	implied                             string // its model when none is named
}

func envProviders(cfg Config) []envProvider {
	var ps []envProvider
	if cfg.OpenAIAPIKey != "" || cfg.OpenAIBaseURL != "" {
		p := envProvider{name: "openai", typ: store.ProviderOpenAI, display: "OpenAI", baseURL: cfg.OpenAIBaseURL, apiKey: cfg.OpenAIAPIKey}
		if cfg.OpenAIBaseURL != "" {
			// Ollama, vLLM, ...: Chat Completions only.
			p.typ, p.display = store.ProviderOpenAICompat, "OpenAI-compatible"
		}
		if cfg.OpenAIBaseURL == "" {
			p.implied = "gpt-4.1-mini"
		}
		ps = append(ps, p)
	}
	if cfg.AnthropicAPIKey != "" || cfg.AnthropicBaseURL != "" {
		p := envProvider{name: "anthropic", typ: store.ProviderAnthropic, display: "Anthropic", baseURL: cfg.AnthropicBaseURL, apiKey: cfg.AnthropicAPIKey}
		if cfg.AnthropicBaseURL == "" {
			p.implied = "claude-sonnet-4-5"
		}
		ps = append(ps, p)
	}
	return append(ps, envProvider{name: DemoModelName, typ: store.ProviderDemo, display: "Demo (offline)"})
}

// presetsFromConfig turns CHATD_MODELS, CHATD_DEFAULT_MODEL and the
// provider variables into presets; the demo model is always one. Model ids
// are ModelID(provider, model), as before the models lived in the database.
func presetsFromConfig(cfg Config) ([]modelconfig.Preset, uuid.NullUUID, error) {
	eps := envProviders(cfg)
	presets := make([]modelconfig.Preset, len(eps))
	byName := map[string]int{}
	var implied []string
	for i, p := range eps {
		presets[i] = modelconfig.Preset{ID: presetProviderID(p.name), Provider: p.typ, DisplayName: p.display, BaseURL: p.baseURL, APIKey: p.apiKey}
		byName[p.name] = i
		if p.implied != "" {
			implied = append(implied, p.name+"/"+p.implied)
		}
	}
	names := append(append([]string(nil), cfg.Models...), implied...)
	names = append(names, DemoModelName)
	parse := func(name string) (string, string, error) {
		name = strings.TrimSpace(name)
		if name == DemoModelName {
			return DemoModelName, DemoModelName, nil
		}
		provider, model, ok := strings.Cut(name, "/")
		if !ok || provider == "" || model == "" {
			return "", "", fmt.Errorf("model %q: want provider/model (e.g. openai/gpt-4.1-mini) or demo", name)
		}
		if _, ok := byName[provider]; !ok {
			return "", "", fmt.Errorf("model %s/%s: provider %q is not configured (set its API key or base URL)", provider, model, provider)
		}
		return provider, model, nil
	}
	seen := map[uuid.UUID]bool{}
	first := uuid.NullUUID{}
	for _, n := range names {
		provider, model, err := parse(n)
		if err != nil {
			return nil, uuid.NullUUID{}, err
		}
		id := ModelID(provider, model)
		if !first.Valid {
			first = uuid.NullUUID{UUID: id, Valid: true}
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		pm := modelconfig.PresetModel{ID: id, Model: model}
		if provider == DemoModelName {
			// The demo model takes any effort (it then shows its reasoning).
			pm.DisplayName, pm.ContextLimit = "Demo (offline)", demoContextLimit
			pm.ModelConfig = &sdk.ChatModelCallConfig{ReasoningEffort: &sdk.ReasoningEffortConfig{Max: "max"}}
		}
		presets[byName[provider]].Models = append(presets[byName[provider]].Models, pm)
	}
	def := first
	if cfg.DefaultModel != "" {
		provider, model, err := parse(cfg.DefaultModel)
		if err != nil {
			return nil, uuid.NullUUID{}, fmt.Errorf("CHATD_DEFAULT_MODEL: %w", err)
		}
		def = uuid.NullUUID{UUID: ModelID(provider, model), Valid: true}
		if !seen[def.UUID] {
			presets[byName[provider]].Models = append(presets[byName[provider]].Models, modelconfig.PresetModel{ID: def.UUID, Model: model})
		}
	}
	return presets, def, nil
}

// llmFactory builds the LLM clients of provider configs. Each round trip
// of a chat's model call is a provider_attempt stage.
func llmFactory(cfg Config, clk clock.Clock) modelconfig.Factory {
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
		CompactThresholdPercent: int(m.Config.CompressionThreshold)}, nil
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
	a.cipher = cipher // the MCP servers' secrets too (mcpservers.go)
	a.models = modelconfig.New(a.store, modelconfig.Options{Cipher: cipher, Clock: a.clock, Publisher: a.pubsub,
		Factory: llmFactory(a.cfg, a.clock), CacheTTL: a.cfg.ModelCacheTTL})
	presets, def, err := presetsFromConfig(a.cfg)
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

// secretKey is the key that seals provider API keys: CHATD_SECRET_KEY, or
// on SQLite a key file next to the database (created 0600). Replicas on
// Postgres must share one key, so there it is required.
func secretKey(cfg Config) (string, error) {
	if cfg.SecretKey != "" {
		return cfg.SecretKey, nil
	}
	if IsPostgres(cfg.DB) {
		return "", errors.New("CHATD_SECRET_KEY is required with PostgreSQL: every replica must seal provider API keys with the same key")
	}
	key, err := modelconfig.LoadKeyFile(cfg.DB + ".secret-key")
	if err != nil {
		return "", fmt.Errorf("CHATD_SECRET_KEY unset: %w", err)
	}
	return key, nil
}

// ModelName is a model's name as CHATD_DEFAULT_MODEL and CHATD_MODELS
// spell it (provider/model, or demo): the OpenAI-compatible API's model
// id. A model an admin configured under a provider of their own is named
// by its provider type.
func ModelName(m sdk.ChatModel) string {
	if m.ID == ModelID(DemoModelName, m.Model) && m.Model == DemoModelName {
		return DemoModelName
	}
	for _, p := range envProviders(Config{OpenAIAPIKey: "-", AnthropicAPIKey: "-"}) {
		if m.ID == ModelID(p.name, m.Model) {
			return p.name + "/" + m.Model
		}
	}
	return m.Provider + "/" + m.Model
}
