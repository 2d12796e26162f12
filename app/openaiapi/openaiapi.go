// Package openaiapi serves chatd's OpenAI-compatible API under /v1, so the
// official OpenAI SDKs drive chatd's durable chats unchanged (docs/API.md,
// "OpenAI-compatible API").
//
// It is a translator (DESIGN rule 9), not a second chat system: every
// write is a request to the native API (create chat, send with a durable
// request id, tool results, interrupt, delete), dispatched in process to
// the native handler with the caller's own credentials, so admission,
// hooks, limits and the one state machine apply unchanged. Streams are
// built from the native stream loop (app/stream's Watch: stored messages,
// the part buffer, the relay), and reads from the native read routes.
//
// Files: openaiapi.go (routes, auth, errors, the native client),
// types.go (wire shapes as the SDKs name them), ids.go (response,
// conversation and item ids), layout.go (a response's output items and
// its deterministic event sequence), responses.go, stream.go (SSE),
// conversations.go, models.go.
package openaiapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/loopback"
	"github.com/chatd/chatd/app/sdk"
)

// Deps are the surface's collaborators.
type Deps struct {
	// Native is the native API handler (app/api); /v1 requests become
	// requests to it with the caller's Authorization header.
	Native http.Handler
	// Authenticate resolves the caller's user id (401 otherwise).
	Authenticate func(*http.Request) (uuid.UUID, error)
	// Watch runs the native stream loop of a chat (stream.Server.Watch).
	Watch func(ctx context.Context, chatID uuid.UUID, fn func(ctx context.Context, events []sdk.ChatStreamEvent) error) error
	// Log is slog.Default when nil.
	Log *slog.Logger
	// MaxBodyBytes caps a request body (1 MiB when zero).
	MaxBodyBytes int64
	// ModelName names a model as /v1 does (provider/model as
	// CHATD_DEFAULT_MODEL spells it); provider type/model when nil.
	ModelName func(sdk.ChatModel) string
}

// Server serves /v1.
type Server struct {
	deps Deps
	mux  *http.ServeMux
}

// New returns the /v1 handler.
func New(deps Deps) *Server {
	if deps.Log == nil {
		deps.Log = slog.Default()
	}
	if deps.ModelName == nil {
		deps.ModelName = func(m sdk.ChatModel) string { return m.Provider + "/" + m.Model }
	}
	if deps.MaxBodyBytes == 0 {
		deps.MaxBodyBytes = 1 << 20
	}
	s := &Server{deps: deps, mux: http.NewServeMux()}
	s.routes()
	return s
}

func (s *Server) routes() {
	h := func(pattern string, fn func(w http.ResponseWriter, r *http.Request, c *caller) error) {
		s.mux.Handle(pattern, s.handle(fn))
	}
	h("GET /v1/models", s.listModels)
	h("GET /v1/models/{model...}", s.getModel)
	h("POST /v1/responses", s.createResponse)
	h("GET /v1/responses/{id}", s.getResponse)
	h("DELETE /v1/responses/{id}", s.deleteResponse)
	h("POST /v1/responses/{id}/cancel", s.cancelResponse)
	h("GET /v1/responses/{id}/input_items", s.inputItems)
	h("POST /v1/conversations", s.createConversation)
	h("GET /v1/conversations/{id}", s.getConversation)
	h("POST /v1/conversations/{id}", s.updateConversation)
	h("DELETE /v1/conversations/{id}", s.deleteConversation)
	h("GET /v1/conversations/{id}/items", s.listItems)
	h("POST /v1/conversations/{id}/items", s.createItems)
	h("GET /v1/conversations/{id}/items/{item}", s.getItem)
	h("DELETE /v1/conversations/{id}/items/{item}", s.deleteItem)
	// Anything else under /v1 is an OpenAI-shaped 404, never the web UI.
	s.mux.Handle("/v1/", s.handle(func(w http.ResponseWriter, r *http.Request, c *caller) error {
		return &apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: "not_found",
			msg: fmt.Sprintf("Unknown request URL: %s %s.", r.Method, r.URL.Path)}
	}))
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	// A known path with the wrong method is 405, in the same shape.
	if _, pattern := s.mux.Handler(r); pattern == "/v1/" {
		if allow := s.allowed(r); allow != "" {
			w.Header().Set("Allow", allow)
			writeError(w, &apiError{status: http.StatusMethodNotAllowed, typ: "invalid_request_error", code: "method_not_allowed",
				msg: fmt.Sprintf("%s is not allowed on %s (allowed: %s).", r.Method, r.URL.Path, allow)})
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) allowed(r *http.Request) string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, p := s.mux.Handler(probe); p != "/v1/" {
			out = append(out, m)
		}
	}
	return strings.Join(out, ", ")
}

// caller is an authenticated request's user and its native client.
type caller struct {
	user   uuid.UUID
	native *sdk.Client
}

func (s *Server) handle(fn func(w http.ResponseWriter, r *http.Request, c *caller) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, err := s.deps.Authenticate(r)
		if err != nil {
			writeError(w, &apiError{status: http.StatusUnauthorized, typ: "invalid_request_error", code: "invalid_api_key",
				msg: "Missing or invalid API key: send a chatd API token as the bearer token (Authorization: Bearer <token>)."})
			return
		}
		c := &caller{user: user, native: loopback.Client(s.deps.Native, r)}
		if err := fn(w, r, c); err != nil {
			s.writeErr(w, r, err)
		}
	})
}

// apiError is an answer in OpenAI's error shape.
type apiError struct {
	status int
	typ    string
	code   string
	param  string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(param, msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: param, code: "invalid_value", msg: msg}
}

func notFound(what, id string) *apiError {
	return &apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: "not_found",
		msg: fmt.Sprintf("No %s found with id '%s'.", what, id)}
}

func conflict(code, msg string) *apiError {
	return &apiError{status: http.StatusConflict, typ: "invalid_request_error", code: code, msg: msg}
}

// writeErr answers err: an apiError as is, a native error translated
// with its status and code kept, anything else 500 (logged).
func (s *Server) writeErr(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	var ne *sdk.Error
	switch {
	case errors.As(err, &ae):
	case errors.As(err, &ne):
		ae = fromNative(ne)
	case errors.Is(err, context.Canceled):
		return
	default:
		s.deps.Log.Error("openai api: unexpected error", "method", r.Method, "path", r.URL.Path, "err", err)
		ae = &apiError{status: http.StatusInternalServerError, typ: "server_error", code: "internal_error",
			msg: "The server had an error processing the request; see its log."}
	}
	writeError(w, ae)
}

// fromNative translates a native API error, keeping its status, code,
// message and field.
func fromNative(e *sdk.Error) *apiError {
	typ := "invalid_request_error"
	switch {
	case e.StatusCode == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case e.StatusCode >= 500:
		typ = "server_error"
	case e.StatusCode == http.StatusUnauthorized:
		typ = "authentication_error"
	case e.StatusCode == http.StatusForbidden:
		typ = "permission_error"
	}
	msg := e.Message
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	var param string
	if len(e.Validations) > 0 {
		param = nativeParams[e.Validations[0].Field]
		if param == "" {
			param = e.Validations[0].Field
		}
		if msg == "" || msg == "Validation failed." {
			msg = e.Validations[0].Detail
		}
	}
	return &apiError{status: e.StatusCode, typ: typ, code: strings.ToLower(e.Code), param: param, msg: msg}
}

// nativeParams name the native request fields by the OpenAI fields they
// came from.
var nativeParams = map[string]string{
	"labels": "metadata", "reasoning_effort": "reasoning.effort", "content": "input",
	"system_prompt": "instructions", "model_config_id": "model", "unsafe_dynamic_tools": "tools",
}

func writeError(w http.ResponseWriter, e *apiError) {
	body := map[string]any{"error": map[string]any{
		"message": e.msg, "type": e.typ, "code": nullable(e.code), "param": nullable(e.param),
	}}
	writeJSON(w, e.status, body)
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// decode reads a JSON body into v, with OpenAI-shaped errors.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) ([]byte, error) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.deps.MaxBodyBytes))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, &apiError{status: http.StatusRequestEntityTooLarge, typ: "invalid_request_error", code: "too_large",
				msg: fmt.Sprintf("The request body is larger than %d bytes.", mb.Limit)}
		}
		return nil, badRequest("", "could not read the request body: "+err.Error())
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, badRequest(te.Field, fmt.Sprintf("Invalid type for '%s': expected %s.", te.Field, te.Type))
		}
		return nil, badRequest("", "We could not parse the JSON body of your request: "+err.Error())
	}
	return raw, nil
}
