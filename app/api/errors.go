package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// apiError is an error with its HTTP answer already decided.
type apiError struct {
	status int
	resp   sdk.Response
}

func (e *apiError) Error() string { return e.resp.Message }

func newError(status int, code, message, detail string) *apiError {
	return &apiError{status: status, resp: sdk.Response{Message: message, Detail: detail, Code: code}}
}

func validation(field, detail string) *apiError {
	e := newError(http.StatusBadRequest, sdk.CodeValidation, "Invalid request: "+detail, detail)
	e.resp.Validations = []sdk.ValidationError{{Field: field, Detail: detail}}
	return e
}

var (
	errNotFoundRoute = newError(http.StatusNotFound, sdk.CodeNotFound, "No such API route.", "")
	errChatNotFound  = newError(http.StatusNotFound, sdk.CodeNotFound, "Chat not found.", "")
	errAdminOnly     = newError(http.StatusForbidden, sdk.CodeForbidden, "Only an admin may do this.", "")
)

func errMethodNotAllowed(method string, allow []string) *apiError {
	return newError(http.StatusMethodNotAllowed, sdk.CodeMethodNotAllowed, "Method not allowed.",
		method+" is not allowed here; allowed: "+strings.Join(allow, ", "))
}

// handlerFunc is an API handler. It writes its own successful answer and
// returns any failure, which handle writes; after an error it has written
// nothing.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// handle adapts h to http.Handler: the error it returns is answered through
// writeError.
func (s *Server) handle(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// writeError is the one place errors become HTTP answers. Transition
// errors keep their detail ("SendMessage not allowed from A0"). Unexpected
// errors (500s) are logged with the server's logger; the client only learns
// that the server logged the cause. The answer to a request that carried a
// valid request_id (withRequestID) carries it, whatever the error.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var (
		ae *apiError
		te *chatstate.TransitionError
		ve *chatstate.ValidationError
	)
	switch pe, isProject := projectError(err); {
	case errors.As(err, &ae):
	case isProject:
		ae = pe
	case errors.As(err, &ve):
		ae = validation(ve.Field, ve.Detail)
	case errors.Is(err, auth.ErrUnauthenticated):
		ae = newError(http.StatusUnauthorized, sdk.CodeUnauthorized, "Missing or invalid credentials.",
			"Send Authorization: Bearer <token> (or Coder-Session-Token), or log in to the web UI.")
	case errors.Is(err, chatstate.ErrNotFound):
		ae = newError(http.StatusNotFound, sdk.CodeNotFound, "Not found.", err.Error())
	case errors.Is(err, chatstate.ErrToolCallAwaitingApproval):
		ae = newError(http.StatusConflict, sdk.CodeToolCallAwaitingApproval,
			"A tool call awaits approval; answer it with POST /chats/{chat}/tool-approvals.", err.Error())
	case errors.Is(err, chatstate.ErrNotAwaitingApproval):
		ae = newError(http.StatusConflict, sdk.CodeToolCallNotAwaitingApproval,
			"The tool call is not awaiting approval.", err.Error())
	case errors.Is(err, chatstate.ErrInvalidState):
		ae = newError(http.StatusConflict, sdk.CodeInvalidState,
			"The chat is in an invalid state; reconcile it with POST /chats/{chat}/reconcile-invalid.", err.Error())
	case errors.Is(err, chatstate.ErrChatArchived):
		ae = newError(http.StatusBadRequest, sdk.CodeChatArchived, "The chat is archived; unarchive it first.", err.Error())
	case errors.As(err, &te):
		ae = newError(http.StatusConflict, sdk.CodeTransitionNotAllowed,
			"This action is not possible in the chat's current state.", te.Error())
	case errors.Is(err, chatstate.ErrNothingToCompact):
		ae = newError(http.StatusConflict, sdk.CodeNothingToCompact, "There is nothing to compact.",
			"No assistant message follows the latest compaction or clear.")
	case errors.Is(err, chatstate.ErrNothingToClear):
		ae = newError(http.StatusConflict, sdk.CodeNothingToClear, "There is nothing to clear.",
			"No message follows the latest compaction or clear.")
	case errors.Is(err, chatstate.ErrToolCallUnderReview):
		ae = newError(http.StatusConflict, sdk.CodeToolCallUnderReview,
			"This tool call is under an operator's review after a crash; only a reconcile gives it a result.", err.Error())
	case errors.Is(err, chatstate.ErrQueueFull):
		ae = newError(http.StatusTooManyRequests, sdk.CodeQueueFull,
			"The chat's queue is full; wait for it to drain or delete queued messages.", err.Error())
	case errors.Is(err, context.Canceled):
		// The client went away; nobody reads this answer.
		ae = newError(499, sdk.CodeInternal, "Request cancelled.", "")
	case errors.Is(err, store.ErrStorageFull):
		if s.guards.noteStorageFull() {
			s.deps.Log.Error("storage full: writes fail until space is freed", append(logAttrs(r), "err", err)...)
		}
		ae = newError(http.StatusServiceUnavailable, sdk.CodeStorageFull,
			"The server's storage is full; nothing was saved. Retry once an operator has freed space.", err.Error())
	case errors.Is(err, store.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		ae = newError(http.StatusServiceUnavailable, sdk.CodeAuditUnavailable,
			"The database is unavailable; the request's effects are unknown. Retry later.", err.Error())
	default:
		s.deps.Log.Error("internal error", append(logAttrs(r), "err", err)...)
		ae = newError(http.StatusInternalServerError, sdk.CodeInternal, "Internal error.", "The server logged the cause.")
	}
	// Copy the answer: ae may be a shared value (errChatNotFound).
	resp := ae.resp
	var rq *requestError
	if errors.As(err, &rq) && resp.RequestID == nil {
		id := rq.id
		resp.RequestID = &id
	}
	setRetryAfter(w, err)
	writeJSON(w, ae.status, resp)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// logAttrs names the request in a log line: method and path, and the chat
// and durable request it is about when its route has them, so every line
// about a chat carries chat_id.
func logAttrs(r *http.Request) []any {
	attrs := []any{"method", r.Method, "path", r.URL.Path}
	if id := r.PathValue("chat"); id != "" {
		attrs = append(attrs, "chat_id", id)
	}
	if id := r.PathValue("request_id"); id != "" {
		attrs = append(attrs, "request_id", id)
	}
	return attrs
}
