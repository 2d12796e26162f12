package app

import (
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
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

// ModelList is the configured models; the offline demo model is always in it.
type ModelList struct {
	models []sdk.ChatModel
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
		display := model
		if provider == DemoModelName {
			display = "Demo (offline)"
		}
		l.models = append(l.models, sdk.ChatModel{ID: id, Provider: provider, Model: model, DisplayName: display, Enabled: true})
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
