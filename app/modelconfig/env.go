package modelconfig

import (
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
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

// Env is the model configuration the environment gives (the provider
// variables, CHATD_MODELS and CHATD_DEFAULT_MODEL), applied at start as
// presets.
type Env struct {
	OpenAIAPIKey, OpenAIBaseURL       string
	AnthropicAPIKey, AnthropicBaseURL string
	// Models are extra "provider/model" names; the demo model is always there.
	Models []string
	// DefaultModel is the default model ("demo" or "provider/model").
	DefaultModel string
}

// envProvider is a provider the environment configures.
type envProvider struct {
	name, typ, display, baseURL, apiKey string
	implied                             string // its model when none is named
}

func envProviders(cfg Env) []envProvider {
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

// EnvPresets turns CHATD_MODELS, CHATD_DEFAULT_MODEL and the provider
// variables into presets; the demo model is always one. Model ids are
// ModelID(provider, model), as before the models lived in the database.
func EnvPresets(cfg Env) ([]Preset, uuid.NullUUID, error) {
	eps := envProviders(cfg)
	presets := make([]Preset, len(eps))
	byName := map[string]int{}
	var implied []string
	for i, p := range eps {
		presets[i] = Preset{ID: presetProviderID(p.name), Provider: p.typ, DisplayName: p.display, BaseURL: p.baseURL, APIKey: p.apiKey}
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
		pm := PresetModel{ID: id, Model: model}
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
			presets[byName[provider]].Models = append(presets[byName[provider]].Models, PresetModel{ID: def.UUID, Model: model})
		}
	}
	return presets, def, nil
}

// EnvModelName is a model's name as CHATD_DEFAULT_MODEL and CHATD_MODELS
// spell it (provider/model, or demo): the OpenAI-compatible API's model
// id. A model an admin configured under a provider of their own is named
// by its provider type.
func EnvModelName(m sdk.ChatModel) string {
	if m.ID == ModelID(DemoModelName, m.Model) && m.Model == DemoModelName {
		return DemoModelName
	}
	for _, p := range envProviders(Env{OpenAIAPIKey: "-", AnthropicAPIKey: "-"}) {
		if m.ID == ModelID(p.name, m.Model) {
			return p.name + "/" + m.Model
		}
	}
	return m.Provider + "/" + m.Model
}
