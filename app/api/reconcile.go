package api

import (
	"errors"
	"net/http"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/wire"
	"github.com/chatd/chatd/store"
)

// reconcileRequest is POST /requests/{request_id}/reconcile: an admin's
// review of an unresolved durable request (chatstate.Tx.Reconcile, as
// `chatd invocation reconcile --request-id` does).
func (s *Server) reconcileRequest(w http.ResponseWriter, r *http.Request, c *caller) error {
	parsed, err := uuid.Parse(r.PathValue("request_id"))
	if err != nil || parsed == uuid.Nil {
		return invocationError(http.StatusBadRequest, sdk.CodeInvalidInvocationID,
			"The request id must be a non-nil UUID.", uuid.NullUUID{}, uuid.Nil)
	}
	id := uuid.NullUUID{UUID: parsed, Valid: true}
	err = s.reconcile(w, r, c, chatstate.ReconcileTarget{RequestID: parsed})
	if errors.Is(err, store.ErrNotFound) {
		err = invocationError(http.StatusNotFound, sdk.CodeInvocationNotFound, "No request with this id was admitted.", id, uuid.Nil)
	}
	return withRequestID(err, id)
}

// reconcileToolCall is POST /chats/{chat}/tool-calls/{tool_call_id}/reconcile:
// an admin's review of one unresolved tool call, for turns sent without a
// request id (a call whose turn has one is reviewed with its request).
func (s *Server) reconcileToolCall(w http.ResponseWriter, r *http.Request, c *caller) error {
	chatID, err := pathUUID(r, "chat")
	if err != nil {
		return err
	}
	callID := r.PathValue("tool_call_id")
	if callID == "" {
		return validation("tool_call_id", "is required")
	}
	err = s.reconcile(w, r, c, chatstate.ReconcileTarget{ChatID: chatID, ToolCallID: callID})
	if errors.Is(err, store.ErrNotFound) {
		err = newError(http.StatusNotFound, sdk.CodeNotFound, "No such tool call in the chat's tool journal.", err.Error())
	}
	return err
}

// reconcile runs the review for an admin and answers sdk.ReconcileResponse.
func (s *Server) reconcile(w http.ResponseWriter, r *http.Request, c *caller, g chatstate.ReconcileTarget) error {
	if !c.user.Admin {
		return errAdminOnly
	}
	var review sdk.ReconcileRequest
	if err := decodeJSON(r, &review); err != nil {
		return err
	}
	if err := review.Validate(); err != nil {
		return validation("assessment", err.Error())
	}
	var out sdk.ReconcileResponse
	err := s.deps.Machine.Do(r.Context(), func(t *chatstate.Tx) error {
		res, err := t.Reconcile(g, review)
		if err != nil {
			return err
		}
		out = wire.ToReconcileResponse(res.Request, res.Chat, res.ToolCallIDs)
		return nil
	})
	var te *chatstate.TransitionError
	if err != nil && !errors.As(err, &te) && errors.Is(err, chatstate.ErrTransitionNotAllowed) {
		// A request or tool call that is not unresolved.
		return newError(http.StatusConflict, sdk.CodeTransitionNotAllowed, "Only unresolved requests and tool calls are reconciled.", err.Error())
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
