package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/llm/anthropic"
	"github.com/chatd/chatd/app/llm/demo"
	"github.com/chatd/chatd/app/llm/openai"
	"github.com/chatd/chatd/app/mcp"
	"github.com/chatd/chatd/app/modelconfig"
	"github.com/chatd/chatd/app/redact"
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
// of a chat's model call is a provider_attempt stage. Every client masks
// the secrets out of its errors (redact.Provider), its own key learnt
// first.
func llmFactory(cfg Config, clk clock.Clock, secrets *redact.Secrets) modelconfig.Factory {
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
func rawFactory(cfg Config, clk clock.Clock) modelconfig.Factory {
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
	case a.cfg.secretKeyFile != "":
		return "the secret key in " + a.cfg.secretKeyFile
	case a.cfg.SecretKey != "":
		return "CHATD_SECRET_KEY"
	}
	return "the random secret key of an app without Config.SecretKey"
}

// requireSecretKey refuses PostgreSQL without CHATD_SECRET_KEY: replicas
// must share one key.
func requireSecretKey(cfg Config) error {
	if cfg.SecretKey == "" && IsPostgres(cfg.DB) {
		return errors.New("CHATD_SECRET_KEY is required with PostgreSQL: every replica must seal provider API keys with the same key")
	}
	return nil
}

// keyFileSuffix names the SQLite key file after the database file.
const keyFileSuffix = ".secret-key"

// keyFiles are where the SQLite key file of db may be: next to the
// database's real path (symlinks resolved, so every symlinked route finds
// the same file), then next to db itself when db is a symlink (where
// versions before this one put it).
func keyFiles(db string) []string {
	abs, err := filepath.Abs(db)
	if err != nil {
		return []string{db + keyFileSuffix}
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil || real == abs {
		return []string{abs + keyFileSuffix}
	}
	return []string{real + keyFileSuffix, abs + keyFileSuffix}
}

// SecretKeyFile is the key file a start on the SQLite database db reads
// when CHATD_SECRET_KEY is unset: the first of keyFiles that exists, else
// where a first start creates it.
func SecretKeyFile(db string) string {
	files := keyFiles(db)
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			return f
		}
	}
	return files[0]
}

// loadKeyFile returns the SQLite secret key and its file, for a store
// that is open (so this process holds the database's lock: a start that
// is refused writes nothing) and migrated. A missing key file is created
// next to the database's real path, unless the database already holds
// sealed secrets: a new key could not open them, so the start is refused,
// naming the file it looked for.
func loadKeyFile(ctx context.Context, db string, s store.Store) (key, file string, err error) {
	files := keyFiles(db)
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

// workerPrice is a model config's price for the usage ledger.
func workerPrice(p *sdk.ModelPrice) worker.Price {
	if p == nil {
		return worker.Price{}
	}
	return worker.Price{InputPerMillion: p.InputPerMillion, OutputPerMillion: p.OutputPerMillion}
}
