package api

import (
	"bytes"
	"io"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/wire"
	"github.com/chatd/chatd/store"
)

// Message versions (issue 32): regenerate, branch switch, branch reads and
// fork. Edit (messages.go) adds versions too.

func (s *Server) versionRoutes(chat func(method, path string, h func(http.ResponseWriter, *http.Request, *caller) error)) {
	chat("POST", "/chats/{chat}/messages/{message}/regenerate", s.regenerateMessage)
	chat("POST", "/chats/{chat}/branch", s.switchBranch)
	chat("POST", "/chats/{chat}/fork", s.forkChat)
}

func (s *Server) regenerateMessage(w http.ResponseWriter, r *http.Request, c *caller) error {
	id, err := pathUUID(r, "chat")
	if err != nil {
		return err
	}
	msgID, err := pathInt(r, "message")
	if err != nil {
		return err
	}
	var req sdk.RegenerateMessageRequest
	if err := decodeOptionalJSON(r, &req); err != nil {
		return err
	}
	in := chatstate.RegenerateInput{ModelConfigID: optUUID(req.ModelConfigID), ReasoningEffort: req.ReasoningEffort}
	if err := s.checkModel("model_config_id", in.ModelConfigID); err != nil {
		return err
	}
	if err := checkEffort("reasoning_effort", in.ReasoningEffort); err != nil {
		return err
	}
	var res chatstate.Result
	chat, err := s.transition(r, c, id, func(t *chatstate.Tx) error {
		var err error
		res, err = t.RegenerateMessage(id, msgID, in)
		return err
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sdk.BranchResponse{Chat: wire.ToChat(chat), DeletedMessageIDs: orEmpty(res.DeletedIDs)})
	return nil
}

func (s *Server) switchBranch(w http.ResponseWriter, r *http.Request, c *caller) error {
	id, err := pathUUID(r, "chat")
	if err != nil {
		return err
	}
	var req sdk.SwitchBranchRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.MessageID <= 0 {
		return validation("message_id", "must name a message of the chat")
	}
	var (
		res    chatstate.Result
		active []store.Message
	)
	chat, err := s.transition(r, c, id, func(t *chatstate.Tx) error {
		var err error
		if res, err = t.SwitchBranch(id, req.MessageID); err != nil {
			return err
		}
		active, err = t.Reader().MessageList(r.Context(), id, store.MessageListParams{PeopleOnly: true})
		return err
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sdk.BranchResponse{
		Chat: wire.ToChat(chat), Messages: wire.ToMessages(active), DeletedMessageIDs: orEmpty(res.DeletedIDs),
	})
	return nil
}

func (s *Server) forkChat(w http.ResponseWriter, r *http.Request, c *caller) error {
	id, err := pathUUID(r, "chat")
	if err != nil {
		return err
	}
	var req sdk.ForkChatRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.MessageID <= 0 {
		return validation("message_id", "must name a message of the chat")
	}
	if err := checkTitle(req.Title, true); err != nil {
		return err
	}
	req.Title = strings.TrimSpace(req.Title)
	var res chatstate.Result
	err = s.deps.Machine.Do(r.Context(), func(t *chatstate.Tx) error {
		if _, err := s.readChat(r.Context(), c, t.Reader(), id); err != nil {
			return err
		}
		var err error
		res, err = t.Fork(chatstate.ForkParams{ID: uuid.New(), Source: id, MessageID: req.MessageID, Title: req.Title})
		return err
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, wire.ToChat(res.Chat))
	return nil
}

// listBranch answers GET /chats/{chat}/messages?message_id=: the branch
// through the message (root to its newest leaf) that people see, without
// switching to it; limit keeps its newest messages.
func (s *Server) listBranch(w http.ResponseWriter, r *http.Request, c *caller, id uuid.UUID, limit int64) error {
	msgID, err := queryInt(r, "message_id", 0, 1, 1<<62)
	if err != nil {
		return err
	}
	if r.URL.Query().Has("before_id") || r.URL.Query().Has("after_id") {
		return validation("message_id", "cannot be combined with before_id or after_id")
	}
	var resp sdk.ChatMessagesResponse
	err = s.deps.Store.ReadTx(r.Context(), func(tx store.Reader) error {
		ctx := r.Context()
		if _, err := s.readChat(ctx, c, tx, id); err != nil {
			return err
		}
		branch, err := chatstate.BranchThrough(ctx, tx, id, msgID)
		if err != nil {
			return err
		}
		seen := make([]store.Message, 0, len(branch))
		for _, m := range branch {
			if m.Visibility != store.VisibilityModel {
				m.Deleted = false // hidden only from the active branch
				seen = append(seen, m)
			}
		}
		if resp.HasMore = len(seen) > int(limit); resp.HasMore {
			seen = seen[len(seen)-int(limit):]
		}
		resp.Messages = wire.ToMessages(seen)
		queue, err := tx.QueueList(ctx, id)
		resp.QueuedMessages = wire.ToQueue(queue)
		return err
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// decodeOptionalJSON is decodeJSON for a body that may be left out.
func decodeOptionalJSON(r *http.Request, v any) error {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return decodeError(err)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	r.Body = io.NopCloser(bytes.NewReader(raw))
	return decodeJSON(r, v)
}

func orEmpty(ids []int64) []int64 {
	if ids == nil {
		return []int64{}
	}
	return ids
}
