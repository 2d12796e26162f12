package api

import (
	"net/http"
	"slices"

	"github.com/chatd/chatd/app/sdk"
)

func (s *Server) listModels(w http.ResponseWriter, r *http.Request, c *caller) error {
	models := s.deps.Models.List()
	resp := sdk.ChatModelsResponse{Models: models, Providers: []sdk.ChatModelProvider{}, UnsupportedProviders: []sdk.ChatModelProvider{}}
	for _, m := range models {
		i := slices.IndexFunc(resp.Providers, func(p sdk.ChatModelProvider) bool { return p.Provider == m.Provider })
		if i < 0 {
			resp.Providers = append(resp.Providers, sdk.ChatModelProvider{Provider: m.Provider, Available: true})
			i = len(resp.Providers) - 1
		}
		resp.Providers[i].Models = append(resp.Providers[i].Models, m)
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// listModelConfigs answers Coder's GET /chats/model-configs: every config
// for an admin, the enabled configs of enabled providers for anyone else.
func (s *Server) listModelConfigs(w http.ResponseWriter, r *http.Request, c *caller) error {
	if s.deps.ModelConfigs != nil {
		out, err := s.deps.ModelConfigs.ModelConfigs(r.Context(), !c.user.Admin)
		if err != nil {
			return modelConfigError(err)
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	out := []sdk.ChatModelConfig{}
	for _, m := range s.deps.Models.List() {
		out = append(out, sdk.ChatModelConfig{ID: m.ID, Provider: m.Provider, Model: m.Model,
			DisplayName: m.DisplayName, Enabled: true, IsDefault: m.Default, ContextLimit: m.ContextLimit,
			ReasoningEfforts: []string{}})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
