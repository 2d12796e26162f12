package api

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/hooks"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/wire"
	"github.com/chatd/chatd/store"
)

func (s *Server) listMessages(w http.ResponseWriter, r *http.Request, c *caller) error {
	id, err := pathUUID(r, "chat")
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", DefaultMessagesLimit, 1, MaxListLimit)
	if err != nil {
		return err
	}
	before, err := queryInt(r, "before_id", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	after, err := queryInt(r, "after_id", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	if r.URL.Query().Has("message_id") {
		return s.listBranch(w, r, c, id, limit) // versions.go
	}
	var resp sdk.ChatMessagesResponse
	err = s.deps.Store.ReadTx(r.Context(), func(tx store.Reader) error {
		ctx := r.Context()
		if _, err := s.readChat(ctx, c, tx, id); err != nil {
			return err
		}
		p := store.MessageListParams{AfterID: after, BeforeID: before, Limit: int(limit) + 1, PeopleOnly: true}
		p.Descending = after == 0 // without after_id, page back from the newest
		ms, err := tx.MessageList(ctx, id, p)
		if err != nil {
			return err
		}
		if resp.HasMore = len(ms) > int(limit); resp.HasMore {
			ms = ms[:limit]
		}
		if p.Descending {
			slices.Reverse(ms)
		}
		resp.Messages = wire.ToMessages(ms)
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

func (s *Server) userInput(ctx context.Context, c *caller, chatID uuid.UUID, requestID uuid.NullUUID, content []sdk.ChatMessagePart, model *uuid.UUID, effort string) (chatstate.UserInput, error) {
	content, err := s.resolveMCPResources(ctx, c, requestID, content) // mcpresources.go
	if err != nil {
		return chatstate.UserInput{}, err
	}
	parts, err := s.inputParts(content, false)
	if err != nil {
		return chatstate.UserInput{}, err
	}
	m := optUUID(model)
	if err := s.checkModel("model_config_id", m); err != nil {
		return chatstate.UserInput{}, err
	}
	if err := checkEffort("reasoning_effort", effort); err != nil {
		return chatstate.UserInput{}, err
	}
	if err := s.checkFiles(ctx, c, parts, m, uuid.NullUUID{UUID: chatID, Valid: true}); err != nil {
		return chatstate.UserInput{}, err
	}
	return chatstate.UserInput{Content: parts, CreatedBy: uuid.NullUUID{UUID: c.user.ID, Valid: true},
		ModelConfigID: m, ReasoningEffort: effort, FileCap: s.fileCap()}, nil
}

func (s *Server) sendMessage(w http.ResponseWriter, r *http.Request, c *caller) (err error) {
	var req struct {
		sdk.CreateChatMessageRequest
		RequestID json.RawMessage `json:"request_id"`
	}
	if err := decodeDurable(r, &req); err != nil {
		return err
	}
	requestID, err := parseRequestID(req.RequestID)
	if err != nil {
		return err
	}
	defer func() { err = withRequestID(err, requestID) }()
	id, err := pathUUID(r, "chat")
	if err != nil {
		return err
	}
	in, err := s.userInput(r.Context(), c, id, requestID, req.Content, req.ModelConfigID, req.ReasoningEffort)
	if err != nil {
		return err
	}
	busy, err := busyBehavior(req.BusyBehavior)
	if err != nil {
		return err
	}
	if err := s.checkChatBudget(r, c, id, requestID); err != nil {
		return err
	}
	if in, err = s.admitToChat(r, c, id, requestID, "", in); err != nil {
		return err
	}
	in.RequestID = requestID
	var retitled bool
	send := func(t *chatstate.Tx) (chatstate.Result, error) {
		if _, err := s.readChat(r.Context(), c, t.Reader(), id); err != nil {
			return chatstate.Result{}, err
		}
		res, err := t.SendMessage(id, in, busy)
		if err != nil {
			return res, err
		}
		// A chat created empty gets its fallback title from its first message.
		chat, err := t.Reader().ChatGet(r.Context(), id)
		if err == nil && chat.TitleSource == store.TitleSourceFallback && chat.Title == chatstate.DefaultTitle {
			title := chatstate.FallbackTitle(firstText(in.Content), DefaultFallbackLength)
			retitled, err = t.WriteTitle(id, title, store.TitleSourceFallback)
		}
		return res, err
	}
	defer func() {
		if retitled && s.deps.Titles != nil {
			s.deps.Titles.GenerateTitle(id)
		}
	}()
	if requestID.Valid {
		b, err := sdk.SendMessageBinding(id, req.CreateChatMessageRequest)
		if err != nil {
			return err
		}
		key, err := bindRequest(b, req.Content)
		if err != nil {
			return err
		}
		return s.admitDurable(w, r, c, requestID.UUID, key,
			func(t *chatstate.Tx) (uuid.UUID, *int64, *int64, int, any, error) {
				res, err := send(t)
				if err != nil {
					return id, nil, nil, 0, nil, err
				}
				var msgID, queuedID *int64
				if res.Message != nil {
					msgID = &res.Message.ID
				}
				if res.Queued != nil {
					queuedID = &res.Queued.ID
				}
				return id, msgID, queuedID, http.StatusOK, sendResponse(res), nil
			})
	}
	var res chatstate.Result
	err = s.deps.Machine.Do(r.Context(), func(t *chatstate.Tx) error {
		var err error
		res, err = send(t)
		return err
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sendResponse(res))
	return nil
}

func sendResponse(res chatstate.Result) sdk.CreateChatMessageResponse {
	resp := sdk.CreateChatMessageResponse{Queued: res.Queued != nil}
	if res.Message != nil {
		m := wire.ToMessage(*res.Message)
		resp.Message = &m
	}
	if res.Queued != nil {
		q := wire.ToQueued(*res.Queued)
		resp.QueuedMessage = &q
	}
	if len(res.Promoted) > 0 {
		resp.Messages = wire.ToMessages(res.Promoted)
	}
	return resp
}

func (s *Server) editMessage(w http.ResponseWriter, r *http.Request, c *caller) error {
	id, err := pathUUID(r, "chat")
	if err != nil {
		return err
	}
	msgID, err := pathInt(r, "message")
	if err != nil {
		return err
	}
	var req sdk.EditChatMessageRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	in, err := s.userInput(r.Context(), c, id, uuid.NullUUID{}, req.Content, req.ModelConfigID, req.ReasoningEffort)
	if err != nil {
		return err
	}
	// An edit starts the conversation over from the message: a new session.
	if err := s.checkChatBudget(r, c, id, uuid.NullUUID{}); err != nil {
		return err
	}
	if in, err = s.admitToChat(r, c, id, uuid.NullUUID{}, hooks.SessionEdit, in); err != nil {
		return err
	}
	var res chatstate.Result
	_, err = s.transition(r, c, id, func(t *chatstate.Tx) error {
		var err error
		res, err = t.EditMessage(id, msgID, in)
		return err
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sdk.EditChatMessageResponse{
		Message: wire.ToMessage(*res.Message), Messages: wire.ToMessages([]store.Message{*res.Message}), DeletedMessageIDs: res.DeletedIDs,
	})
	return nil
}
