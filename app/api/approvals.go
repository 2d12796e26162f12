package api

import (
	"net/http"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
)

// submitToolApprovals answers tool calls awaiting a person's approval
// (POST /chats/{chat}/tool-approvals). Whoever may see the chat may answer:
// its owner, and admins. Partial answers keep the chat waiting for the
// rest; the last one resumes it, and the worker runs the approved calls.
func (s *Server) submitToolApprovals(w http.ResponseWriter, r *http.Request, c *caller) error {
	id, err := pathUUID(r, "chat")
	if err != nil {
		return err
	}
	var req sdk.SubmitToolApprovalsRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if len(req.Approvals) == 0 {
		return validation("approvals", "approvals is empty")
	}
	_, err = s.transition(r, c, id, func(t *chatstate.Tx) error {
		_, err := t.AnswerApproval(id, req.Approvals)
		return err
	})
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
