package openaiapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
)

// A conversation is a chat; its items are, for each response in order,
// the response's input items and then its output items.

func conversationObject(chat sdk.Chat) map[string]any {
	metadata := map[string]string{}
	for k, v := range chat.Labels {
		metadata[k] = v
	}
	return map[string]any{"id": conversationID(chat.ID), "object": "conversation", "created_at": chat.CreatedAt.Unix(), "metadata": metadata}
}

func (s *Server) createConversation(w http.ResponseWriter, r *http.Request, c *caller) error {
	var req struct {
		Items    []json.RawMessage `json:"items"`
		Metadata map[string]string `json:"metadata"`
	}
	if _, err := s.decode(w, r, &req); err != nil {
		return err
	}
	if len(req.Items) > 0 {
		return badRequest("items", "items are not supported when creating a conversation: chatd writes a chat's history only by running it; create the conversation empty and send the input with POST /v1/responses.")
	}
	chat, err := c.native.CreateChat(r.Context(), sdk.CreateChatRequest{
		Content: []sdk.ChatMessagePart{}, Labels: req.Metadata, Title: "Conversation", // no generated title: no hidden model call
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, conversationObject(chat))
	return nil
}

// conversation reads the chat of the path's conversation id.
func (s *Server) conversation(ctx context.Context, c *caller, id string) (uuid.UUID, sdk.Chat, error) {
	chatID, ok := parseConversationID(id)
	if !ok {
		return uuid.Nil, sdk.Chat{}, notFound("conversation", id)
	}
	chat, err := c.native.Chat(ctx, chatID)
	if err != nil {
		return uuid.Nil, sdk.Chat{}, notFoundIf(err, "conversation", id)
	}
	return chatID, chat, nil
}

func (s *Server) getConversation(w http.ResponseWriter, r *http.Request, c *caller) error {
	_, chat, err := s.conversation(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, conversationObject(chat))
	return nil
}

func (s *Server) updateConversation(w http.ResponseWriter, r *http.Request, c *caller) error {
	var req struct {
		Metadata map[string]string `json:"metadata"`
	}
	if _, err := s.decode(w, r, &req); err != nil {
		return err
	}
	id := r.PathValue("id")
	chatID, _, err := s.conversation(r.Context(), c, id)
	if err != nil {
		return err
	}
	labels := req.Metadata
	if labels == nil {
		labels = map[string]string{}
	}
	if err := c.native.UpdateChat(r.Context(), chatID, sdk.UpdateChatRequest{Labels: &labels}); err != nil {
		return notFoundIf(err, "conversation", id)
	}
	chat, err := c.native.Chat(r.Context(), chatID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, conversationObject(chat))
	return nil
}

func (s *Server) deleteConversation(w http.ResponseWriter, r *http.Request, c *caller) error {
	id := r.PathValue("id")
	chatID, _, err := s.conversation(r.Context(), c, id)
	if err != nil {
		return err
	}
	if err := c.native.DeleteChat(r.Context(), chatID); err != nil {
		return notFoundIf(err, "conversation", id)
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "conversation.deleted", "deleted": true})
	return nil
}

// items are every item of the conversation, oldest first.
func (s *Server) items(ctx context.Context, c *caller, id string) ([]map[string]any, error) {
	chatID, ok := parseConversationID(id)
	if !ok {
		return nil, notFound("conversation", id)
	}
	chat, msgs, err := s.loadChat(ctx, c, chatID)
	if err != nil {
		return nil, notFoundIf(err, "conversation", id)
	}
	var out []map[string]any
	for _, m := range msgs {
		if !personal(m) {
			continue
		}
		t, _ := newTurn(chat, msgs, m.ID)
		out = append(out, t.inputItems()...)
		status, _ := t.status()
		for _, it := range t.items(status) {
			out = append(out, it.json(it.done))
		}
	}
	return out, nil
}

func (s *Server) listItems(w http.ResponseWriter, r *http.Request, c *caller) error {
	all, err := s.items(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	q := r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return badRequest("limit", "limit must be an integer from 1 to 100.")
		}
		limit = n
	}
	order := q.Get("order")
	if order == "" {
		order = "desc"
	}
	if order != "asc" && order != "desc" {
		return badRequest("order", "order must be asc or desc.")
	}
	if order == "desc" {
		for i, j := 0, len(all)-1; i < j; i, j = i+1, j-1 {
			all[i], all[j] = all[j], all[i]
		}
	}
	if after := q.Get("after"); after != "" {
		for i, it := range all {
			if it["id"] == after {
				all = all[i+1:]
				break
			}
		}
	}
	more := len(all) > limit
	if more {
		all = all[:limit]
	}
	list := map[string]any{"object": "list", "data": all, "has_more": more, "first_id": nil, "last_id": nil}
	if len(all) == 0 {
		list["data"] = []any{}
	} else {
		list["first_id"], list["last_id"] = all[0]["id"], all[len(all)-1]["id"]
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

func (s *Server) getItem(w http.ResponseWriter, r *http.Request, c *caller) error {
	all, err := s.items(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	want := r.PathValue("item")
	for _, it := range all {
		if it["id"] == want {
			writeJSON(w, http.StatusOK, it)
			return nil
		}
	}
	return notFound("item", want)
}

func (s *Server) createItems(w http.ResponseWriter, r *http.Request, c *caller) error {
	if _, _, err := s.conversation(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	return badRequest("items", "Adding items to a conversation is not supported: chatd writes a chat's history only by running it; send the input with POST /v1/responses and conversation.")
}

func (s *Server) deleteItem(w http.ResponseWriter, r *http.Request, c *caller) error {
	if _, _, err := s.conversation(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	return badRequest("item_id", "Deleting a conversation item is not supported: chatd keeps a chat's history whole.")
}
