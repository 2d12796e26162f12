package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/google/uuid"

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

func (s *Server) createProvider(w http.ResponseWriter, r *http.Request, c *caller) error {
	svc, err := s.modelAdmin(c)
	if err != nil {
		return err
	}
	var req sdk.CreateChatProviderConfigRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	out, err := svc.CreateProvider(r.Context(), req)
	if err != nil {
		return modelConfigError(err)
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) updateProvider(w http.ResponseWriter, r *http.Request, c *caller) error {
	svc, err := s.modelAdmin(c)
	if err != nil {
		return err
	}
	id, err := pathUUID(r, "provider")
	if err != nil {
		return err
	}
	var req sdk.UpdateChatProviderConfigRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	out, err := svc.UpdateProvider(r.Context(), id, req)
	if err != nil {
		return modelConfigError(err)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) deleteProvider(w http.ResponseWriter, r *http.Request, c *caller) error {
	svc, err := s.modelAdmin(c)
	if err != nil {
		return err
	}
	id, err := pathUUID(r, "provider")
	if err != nil {
		return err
	}
	if err := svc.DeleteProvider(r.Context(), id); err != nil {
		return modelConfigError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) createModelConfig(w http.ResponseWriter, r *http.Request, c *caller) error {
	svc, err := s.modelAdmin(c)
	if err != nil {
		return err
	}
	var req sdk.CreateChatModelConfigRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	out, err := svc.CreateModelConfig(r.Context(), req)
	if err != nil {
		return modelConfigError(err)
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) updateModelConfig(w http.ResponseWriter, r *http.Request, c *caller) error {
	svc, err := s.modelAdmin(c)
	if err != nil {
		return err
	}
	id, err := pathUUID(r, "modelConfig")
	if err != nil {
		return err
	}
	var req sdk.UpdateChatModelConfigRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	out, err := svc.UpdateModelConfig(r.Context(), id, req)
	if err != nil {
		return modelConfigError(err)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) deleteModelConfig(w http.ResponseWriter, r *http.Request, c *caller) error {
	svc, err := s.modelAdmin(c)
	if err != nil {
		return err
	}
	id, err := pathUUID(r, "modelConfig")
	if err != nil {
		return err
	}
	if err := svc.DeleteModelConfig(r.Context(), id); err != nil {
		return modelConfigError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
