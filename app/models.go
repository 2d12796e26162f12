package app

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/llm/anthropic"
	"github.com/chatd/chatd/app/llm/demo"
	"github.com/chatd/chatd/app/llm/openai"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/worker"
)

// modelNamespace makes model config ids stable: the same provider/model
// always has the same id, across restarts and replicas.
var modelNamespace = uuid.MustParse("5b0e1a8e-8b2b-4a51-9f44-7c2f6e0c4a7d")

// ModelID is the stable id of provider/model.
func ModelID(provider, model string) uuid.UUID {
	return uuid.NewSHA1(modelNamespace, []byte(provider+"/"+model))
}

// DemoModelName is the built-in offline model.
const DemoModelName = "demo"

// demoContextLimit is the demo model's pretend context window (in words),
// small enough that automatic compaction can be seen in a long demo chat.
const demoContextLimit = 4000

// ModelList is the configured models; the offline demo model is always in it.
type ModelList struct {
	models    []sdk.ChatModel
	providers map[string]llm.Provider
}

// List returns the models, the default first.
func (l *ModelList) List() []sdk.ChatModel { return append([]sdk.ChatModel(nil), l.models...) }

// Default returns the default model.
func (l *ModelList) Default() sdk.ChatModel { return l.models[0] }

// NewModelList builds the list from "provider/model" names (plus demo) and
// the default name ("" = the first configured, else demo).
func NewModelList(names []string, def string) (*ModelList, error) {
	l := &ModelList{}
	add := func(name string) error {
		provider, model, ok := strings.Cut(name, "/")
		if name == DemoModelName {
			provider, model, ok = DemoModelName, DemoModelName, true
		}
		if !ok || provider == "" || model == "" {
			return fmt.Errorf("model %q: want provider/model (e.g. openai/gpt-4.1-mini) or demo", name)
		}
		id := ModelID(provider, model)
		for _, m := range l.models {
			if m.ID == id {
				return nil
			}
		}
		display, limit := model, int64(0)
		if provider == DemoModelName {
			display, limit = "Demo (offline)", demoContextLimit
		}
		l.models = append(l.models, sdk.ChatModel{ID: id, Provider: provider, Model: model, DisplayName: display,
			Enabled: true, ContextLimit: limit})
		return nil
	}
	for _, n := range names {
		if err := add(strings.TrimSpace(n)); err != nil {
			return nil, err
		}
	}
	if err := add(DemoModelName); err != nil {
		return nil, err
	}
	if def == "" {
		def = l.models[0].Provider + "/" + l.models[0].Model
		if l.models[0].Provider == DemoModelName {
			def = DemoModelName
		}
	}
	if err := add(def); err != nil {
		return nil, err
	}
	defID := ModelID(DemoModelName, DemoModelName)
	if def != DemoModelName {
		p, m, _ := strings.Cut(def, "/")
		defID = ModelID(p, m)
	}
	for i := range l.models {
		if l.models[i].ID == defID {
			l.models[i].Default, l.models[i].IsDefault = true, true
			l.models[0], l.models[i] = l.models[i], l.models[0]
		}
	}
	return l, nil
}

// Resolve implements worker.Models: the model config id (unset = the
// default) to its provider.
func (l *ModelList) Resolve(id uuid.NullUUID) (worker.Model, error) {
	m := l.Default()
	if id.Valid {
		i := slices.IndexFunc(l.models, func(m sdk.ChatModel) bool { return m.ID == id.UUID })
		if i < 0 {
			return worker.Model{}, fmt.Errorf("model config %s is no longer configured", id.UUID)
		}
		m = l.models[i]
	}
	p, ok := l.providers[m.Provider]
	if !ok {
		return worker.Model{}, fmt.Errorf("provider %q of model %s is not configured (set its API key or base URL)", m.Provider, m.Model)
	}
	return worker.Model{ID: m.ID, Provider: p, Name: m.Model, ContextLimit: m.ContextLimit}, nil
}

// providersFromConfig builds the configured providers (demo always) and
// the models they bring when none are named.
func providersFromConfig(cfg Config, clk clock.Clock) (map[string]llm.Provider, []string) {
	ps := map[string]llm.Provider{DemoModelName: demo.New(demo.Config{TokenDelay: cfg.DemoTokenDelay, Clock: clk})}
	var models []string
	// Each round trip of a chat's model call is a provider_attempt stage.
	httpClient := &http.Client{Transport: worker.ProviderTransport(nil)}
	if cfg.OpenAIAPIKey != "" || cfg.OpenAIBaseURL != "" {
		ps["openai"] = openai.New(openai.Config{APIKey: cfg.OpenAIAPIKey, BaseURL: cfg.OpenAIBaseURL, HTTPClient: httpClient})
		if cfg.OpenAIBaseURL == "" {
			models = append(models, "openai/gpt-4.1-mini")
		}
	}
	if cfg.AnthropicAPIKey != "" || cfg.AnthropicBaseURL != "" {
		ps["anthropic"] = anthropic.New(anthropic.Config{APIKey: cfg.AnthropicAPIKey, BaseURL: cfg.AnthropicBaseURL, HTTPClient: httpClient})
		if cfg.AnthropicBaseURL == "" {
			models = append(models, "anthropic/claude-sonnet-4-5")
		}
	}
	return ps, models
}
