package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/modelconfig"
	"github.com/chatd/chatd/app/sdk"
)

// ModelConfigs administers providers and model configs
// (app/modelconfig.Service).
type ModelConfigs interface {
	Providers(ctx context.Context) ([]sdk.ChatProviderConfig, error)
	CreateProvider(ctx context.Context, req sdk.CreateChatProviderConfigRequest) (sdk.ChatProviderConfig, error)
	UpdateProvider(ctx context.Context, id uuid.UUID, req sdk.UpdateChatProviderConfigRequest) (sdk.ChatProviderConfig, error)
	DeleteProvider(ctx context.Context, id uuid.UUID) error
	ModelConfigs(ctx context.Context, enabledOnly bool) ([]sdk.ChatModelConfig, error)
	CreateModelConfig(ctx context.Context, req sdk.CreateChatModelConfigRequest) (sdk.ChatModelConfig, error)
	UpdateModelConfig(ctx context.Context, id uuid.UUID, req sdk.UpdateChatModelConfigRequest) (sdk.ChatModelConfig, error)
	DeleteModelConfig(ctx context.Context, id uuid.UUID) error
}

// The provider and model config routes. GET and POST never take the shape
// /chats/<word>/{id}: it would collide with /chats/{chat}/messages.
func (s *Server) providerRoutes(chat func(method, path string, h func(http.ResponseWriter, *http.Request, *caller) error)) {
	chat("GET", "/chats/providers", s.listProviders)
	chat("POST", "/chats/providers", s.createProvider)
	chat("PATCH", "/chats/providers/{provider}", s.updateProvider)
	chat("DELETE", "/chats/providers/{provider}", s.deleteProvider)
	chat("POST", "/chats/model-configs", s.createModelConfig)
	chat("PATCH", "/chats/model-configs/{modelConfig}", s.updateModelConfig)
	chat("DELETE", "/chats/model-configs/{modelConfig}", s.deleteModelConfig)
	chat("POST", "/chats/providers/{provider}/test", s.testProvider)
}

var errNoModelAdmin = newError(http.StatusNotFound, sdk.CodeNotFound, "Model configuration is not managed by this server.", "")

// modelAdmin returns the model configuration service for an admin caller.
func (s *Server) modelAdmin(c *caller) (ModelConfigs, error) {
	if !c.user.Admin {
		return nil, errAdminOnly
	}
	if s.deps.ModelConfigs == nil {
		return nil, errNoModelAdmin
	}
	return s.deps.ModelConfigs, nil
}

// modelConfigError maps the service's errors to answers.
func modelConfigError(err error) error {
	var ie *modelconfig.InvalidError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ie):
		return validation(ie.Field, ie.Error())
	case errors.Is(err, modelconfig.ErrNotFound):
		return newError(http.StatusNotFound, sdk.CodeNotFound, "Not found.", "No provider or model config has that id.")
	case errors.Is(err, modelconfig.ErrConflict):
		return newError(http.StatusConflict, sdk.CodeModelConfigConflict, "That provider already has a config for this model.", "")
	}
	return err
}

func (s *Server) listProviders(w http.ResponseWriter, r *http.Request, c *caller) error {
	svc, err := s.modelAdmin(c)
	if err != nil {
		return err
	}
	out, err := svc.Providers(r.Context())
	if err != nil {
		return modelConfigError(err)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// modelAdminCall runs one admin write of providers or model configs: the
// admin check, the path id (pathKey; "" for none), then do. It answers
// do's value with status, or 204 without a body when do returns nil.
func (s *Server) modelAdminCall(w http.ResponseWriter, r *http.Request, c *caller, pathKey string, status int,
	do func(svc ModelConfigs, id uuid.UUID) (any, error)) error {
	svc, err := s.modelAdmin(c)
	if err != nil {
		return err
	}
	var id uuid.UUID
	if pathKey != "" {
		if id, err = pathUUID(r, pathKey); err != nil {
			return err
		}
	}
	out, err := do(svc, id)
	if err != nil {
		return modelConfigError(err)
	}
	if out == nil {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	writeJSON(w, status, out)
	return nil
}

// withBody decodes the request body into a Req and calls fn with it.
func withBody[Req, Out any](r *http.Request, fn func(Req) (Out, error)) (any, error) {
	var req Req
	if err := decodeJSON(r, &req); err != nil {
		return nil, err
	}
	return fn(req)
}

func (s *Server) createProvider(w http.ResponseWriter, r *http.Request, c *caller) error {
	return s.modelAdminCall(w, r, c, "", http.StatusCreated, func(svc ModelConfigs, _ uuid.UUID) (any, error) {
		return withBody(r, func(req sdk.CreateChatProviderConfigRequest) (sdk.ChatProviderConfig, error) {
			return svc.CreateProvider(r.Context(), req)
		})
	})
}

func (s *Server) updateProvider(w http.ResponseWriter, r *http.Request, c *caller) error {
	return s.modelAdminCall(w, r, c, "provider", http.StatusOK, func(svc ModelConfigs, id uuid.UUID) (any, error) {
		return withBody(r, func(req sdk.UpdateChatProviderConfigRequest) (sdk.ChatProviderConfig, error) {
			return svc.UpdateProvider(r.Context(), id, req)
		})
	})
}

func (s *Server) deleteProvider(w http.ResponseWriter, r *http.Request, c *caller) error {
	return s.modelAdminCall(w, r, c, "provider", 0, func(svc ModelConfigs, id uuid.UUID) (any, error) {
		return nil, svc.DeleteProvider(r.Context(), id)
	})
}

func (s *Server) createModelConfig(w http.ResponseWriter, r *http.Request, c *caller) error {
	return s.modelAdminCall(w, r, c, "", http.StatusCreated, func(svc ModelConfigs, _ uuid.UUID) (any, error) {
		return withBody(r, func(req sdk.CreateChatModelConfigRequest) (sdk.ChatModelConfig, error) {
			return svc.CreateModelConfig(r.Context(), req)
		})
	})
}

func (s *Server) updateModelConfig(w http.ResponseWriter, r *http.Request, c *caller) error {
	return s.modelAdminCall(w, r, c, "modelConfig", http.StatusOK, func(svc ModelConfigs, id uuid.UUID) (any, error) {
		return withBody(r, func(req sdk.UpdateChatModelConfigRequest) (sdk.ChatModelConfig, error) {
			return svc.UpdateModelConfig(r.Context(), id, req)
		})
	})
}

func (s *Server) deleteModelConfig(w http.ResponseWriter, r *http.Request, c *caller) error {
	return s.modelAdminCall(w, r, c, "modelConfig", 0, func(svc ModelConfigs, id uuid.UUID) (any, error) {
		return nil, svc.DeleteModelConfig(r.Context(), id)
	})
}

// --- connection test and model discovery ---

// ProviderClient gives a provider's wire view and a client of it for the
// connection test (modelconfig.Service has it). The client holds the API
// key and masks it out of its errors; the key never reaches the API.
type ProviderClient interface {
	ProviderClient(ctx context.Context, id uuid.UUID) (sdk.ChatProviderConfig, llm.Provider, error)
}

// providerTestTimeout bounds one connection test.
const providerTestTimeout = 20 * time.Second

// providerTest and discoveredModel are the answer of POST
// /chats/providers/{id}/test (sdk.ChatProviderTest).
type (
	providerTest    = sdk.ChatProviderTest
	discoveredModel = sdk.DiscoveredModel
)

// testProvider asks the provider for its model list (its cheapest call)
// with the stored key and base URL. A provider that cannot be reached or
// refuses the key is a 200 with ok false and the error: the test worked,
// the provider did not.
func (s *Server) testProvider(w http.ResponseWriter, r *http.Request, c *caller) error {
	svc, err := s.modelAdmin(c)
	if err != nil {
		return err
	}
	id, err := pathUUID(r, "provider")
	if err != nil {
		return err
	}
	access, ok := svc.(ProviderClient)
	if !ok {
		return errNoModelAdmin
	}
	p, client, err := access.ProviderClient(r.Context(), id)
	switch {
	case errors.Is(err, modelconfig.ErrKeyUnreadable):
		// The provider cannot be reached until its key is set again.
		writeJSON(w, http.StatusOK, providerTest{Error: modelconfig.ErrKeyUnreadable.Error(), Models: []discoveredModel{}})
		return nil
	case err != nil:
		return modelConfigError(err)
	}
	ctx, cancel := context.WithTimeout(r.Context(), providerTestTimeout)
	defer cancel()
	models, err := listProviderModels(ctx, client)
	out := providerTest{OK: err == nil, Models: models}
	if err != nil {
		out.Error = err.Error()
	}
	if out.Models == nil {
		out.Models = []discoveredModel{}
	}
	for i := range out.Models {
		if out.Models[i].ContextLimit == 0 {
			out.Models[i].ContextLimit, _ = modelconfig.ContextLimit(p.Provider, out.Models[i].ID)
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// listProviderModels lists the models of the provider client talks to
// (llm.ModelLister: GET {base}/models for OpenAI and OpenAI-compatible
// servers, which also finds Ollama's context windows, GET {base}/v1/models
// for Anthropic). The demo provider lists nothing.
func listProviderModels(ctx context.Context, client llm.Provider) ([]discoveredModel, error) {
	l, ok := client.(llm.ModelLister)
	if !ok {
		return nil, nil
	}
	listed, err := l.ListModels(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]discoveredModel, 0, len(listed))
	for _, m := range listed {
		out = append(out, discoveredModel{ID: m.ID, DisplayName: m.DisplayName, ContextLimit: m.ContextLimit})
	}
	return out, nil
}
