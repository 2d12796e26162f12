package openaiapi

import (
	"context"
	"net/http"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
)

func (s *Server) modelObject(m sdk.ChatModel) map[string]any {
	return map[string]any{"id": s.deps.ModelName(m), "object": "model", "created": 0, "owned_by": m.Provider}
}

func (s *Server) listModels(w http.ResponseWriter, r *http.Request, c *caller) error {
	resp, err := c.native.Models(r.Context())
	if err != nil {
		return err
	}
	data := []map[string]any{}
	for _, m := range resp.Models {
		data = append(data, s.modelObject(m))
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
	return nil
}

func (s *Server) getModel(w http.ResponseWriter, r *http.Request, c *caller) error {
	name := r.PathValue("model")
	resp, err := c.native.Models(r.Context())
	if err != nil {
		return err
	}
	for _, m := range resp.Models {
		if s.deps.ModelName(m) == name {
			writeJSON(w, http.StatusOK, s.modelObject(m))
			return nil
		}
	}
	return &apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: "model_not_found", param: "model",
		msg: "The model '" + name + "' does not exist (GET /v1/models lists the models)."}
}

// resolveModel maps a request's model to the native model config id; an
// empty model is the default.
func (s *Server) resolveModel(ctx context.Context, c *caller, name string) (*uuid.UUID, error) {
	if name == "" {
		return nil, nil
	}
	resp, err := c.native.Models(ctx)
	if err != nil {
		return nil, err
	}
	for _, m := range resp.Models {
		if s.deps.ModelName(m) == name || m.ID.String() == name {
			id := m.ID
			return &id, nil
		}
	}
	return nil, &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", code: "model_not_found", param: "model",
		msg: "The requested model '" + name + "' does not exist (GET /v1/models lists the models)."}
}

// modelName of a turn: the model of its last reply, else its prompt's,
// else the chat's last.
func (s *Server) modelName(ctx context.Context, c *caller, t turn) string {
	var id *uuid.UUID
	for _, m := range t.out {
		if m.ModelConfigID != nil {
			id = m.ModelConfigID
		}
	}
	if id == nil {
		id = t.anchor.ModelConfigID
	}
	if id == nil {
		id = t.chat.LastModelConfigID
	}
	resp, err := c.native.Models(ctx)
	if err != nil {
		return ""
	}
	for _, m := range resp.Models {
		if id != nil && m.ID == *id || id == nil && m.Default {
			return s.deps.ModelName(m)
		}
	}
	return ""
}
