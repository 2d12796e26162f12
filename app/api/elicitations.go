package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// ElicitationNotifier hears of answered MCP elicitations, so the replica
// holding the server's request delivers the answer at once.
type ElicitationNotifier interface {
	Answered(ctx context.Context, e store.Elicitation)
}

// listElicitations lists the chat's questions from MCP servers that await
// an answer (GET /chats/{chat}/elicitations).
func (s *Server) listElicitations(w http.ResponseWriter, r *http.Request, c *caller) error {
	id, err := pathUUID(r, "chat")
	if err != nil {
		return err
	}
	out := []sdk.Elicitation{}
	err = s.deps.Store.ReadTx(r.Context(), func(tx store.Reader) error {
		if _, err := s.readChat(r.Context(), c, tx, id); err != nil {
			return err
		}
		pending, err := tx.ElicitationListPending(r.Context(), id)
		for _, e := range pending {
			out = append(out, chatstate.ElicitationOf(e))
		}
		return err
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// submitElicitationResponse answers one question of an MCP server
// (POST /chats/{chat}/elicitation-responses), shaped like tool approvals:
// whoever may see the chat may answer. The answer goes back to the server
// and the tool call goes on.
func (s *Server) submitElicitationResponse(w http.ResponseWriter, r *http.Request, c *caller) error {
	id, err := pathUUID(r, "chat")
	if err != nil {
		return err
	}
	var req sdk.ElicitationResponse
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var answered store.Elicitation
	_, err = s.transition(r, c, id, func(t *chatstate.Tx) error {
		answered, err = t.AnswerElicitation(id, req)
		return err
	})
	if errors.Is(err, chatstate.ErrElicitationAnswered) {
		return newError(http.StatusConflict, sdk.CodeElicitationAnswered, "The question was already answered or cancelled.", err.Error())
	}
	if err != nil {
		return err
	}
	if s.deps.Elicitations != nil {
		s.deps.Elicitations.Answered(r.Context(), answered)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
