package api

import (
	"net/http"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
)

// queueAction parses {chat} and {queuedMessage} and runs fn.
func (s *Server) queueAction(w http.ResponseWriter, r *http.Request, c *caller, status int, fn func(t *chatstate.Tx, chat uuid.UUID, qid int64) error) error {
	id, err := pathUUID(r, "chat")
	if err != nil {
		return err
	}
	qid, err := pathInt(r, "queuedMessage")
	if err != nil {
		return err
	}
	if _, err := s.transition(r, c, id, func(t *chatstate.Tx) error { return fn(t, id, qid) }); err != nil {
		return err
	}
	w.WriteHeader(status)
	return nil
}

func (s *Server) deleteQueued(w http.ResponseWriter, r *http.Request, c *caller) error {
	return s.queueAction(w, r, c, http.StatusNoContent, func(t *chatstate.Tx, chat uuid.UUID, qid int64) error {
		_, err := t.DeleteQueuedMessage(chat, qid)
		return err
	})
}

func (s *Server) promoteQueued(w http.ResponseWriter, r *http.Request, c *caller) error {
	return s.queueAction(w, r, c, http.StatusAccepted, func(t *chatstate.Tx, chat uuid.UUID, qid int64) error {
		_, err := t.PromoteQueuedMessage(chat, qid)
		return err
	})
}
