package api

import (
	"net/http"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/wire"
	"github.com/chatd/chatd/store"
)

// chatAction runs a body-less transition and answers with the chat.
func (s *Server) chatAction(w http.ResponseWriter, r *http.Request, c *caller, fn func(t *chatstate.Tx, chat uuid.UUID) error) error {
	id, err := pathUUID(r, "chat")
	if err != nil {
		return err
	}
	chat, err := s.transition(r, c, id, func(t *chatstate.Tx) error { return fn(t, id) })
	if err != nil {
		return err
	}
	out := wire.ToChat(chat)
	// The chat object carries its usage totals, as GET /chats/{chat} does.
	err = s.deps.Store.ReadTx(r.Context(), func(tx store.Reader) error {
		var err error
		out.Usage, err = chatUsage(r.Context(), tx, id)
		return err
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) interrupt(w http.ResponseWriter, r *http.Request, c *caller) error {
	return s.chatAction(w, r, c, func(t *chatstate.Tx, id uuid.UUID) error {
		_, err := t.Interrupt(id)
		return err
	})
}

func (s *Server) compact(w http.ResponseWriter, r *http.Request, c *caller) error {
	return s.chatAction(w, r, c, func(t *chatstate.Tx, id uuid.UUID) error {
		_, err := t.RequestCompaction(id)
		return err
	})
}

func (s *Server) clear(w http.ResponseWriter, r *http.Request, c *caller) error {
	return s.chatAction(w, r, c, func(t *chatstate.Tx, id uuid.UUID) error {
		_, err := t.ClearContext(id, uuid.NullUUID{UUID: c.user.ID, Valid: true})
		return err
	})
}

func (s *Server) reconcileInvalid(w http.ResponseWriter, r *http.Request, c *caller) error {
	return s.chatAction(w, r, c, func(t *chatstate.Tx, id uuid.UUID) error {
		_, err := t.ReconcileInvalidState(id)
		return err
	})
}

func (s *Server) submitToolResults(w http.ResponseWriter, r *http.Request, c *caller) error {
	id, err := pathUUID(r, "chat")
	if err != nil {
		return err
	}
	var req sdk.SubmitToolResultsRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if len(req.Results) == 0 {
		return validation("results", "results is empty")
	}
	_, err = s.transition(r, c, id, func(t *chatstate.Tx) error {
		_, err := t.CompleteRequiresAction(id, req.Results, uuid.NullUUID{UUID: c.user.ID, Valid: true})
		return err
	})
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
