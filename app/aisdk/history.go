package aisdk

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/loopback"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// resume is GET /ai-sdk/chat/{id}/stream: 204 when the chat runs nothing,
// else the running turn replayed from its start chunk, then live until it
// finishes (on any replica: Watch relays the parts of the one running it).
func (h *Handler) resume(w http.ResponseWriter, r *http.Request, user uuid.UUID) {
	ctx := r.Context()
	c := loopback.Client(h.deps.API, r)
	chatID, err := h.resolveChat(ctx, c, user, r.PathValue("id"), nil)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if chatID == uuid.Nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	var (
		active bool
		anchor int64
		tools  map[string]bool
	)
	err = h.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
		chat, err := tx.ChatGet(ctx, chatID)
		if err != nil {
			return err
		}
		active = chat.Status == store.ChatStatusRunning || chat.Status == store.ChatStatusInterrupting
		if !active {
			return nil
		}
		if tools, err = toolNames(chat); err != nil {
			return err
		}
		anchor, err = latestUserMessage(ctx, tx, chatID)
		return err
	})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if !active || anchor == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	h.stream(w, r, chatID, Target{MessageID: anchor}, tools)
}

// latestUserMessage is the id of the newest user message people see in
// the chat (0: none), read newest first a page at a time: the running
// turn's is near the end, whatever the history's length.
func latestUserMessage(ctx context.Context, tx store.Reader, chatID uuid.UUID) (int64, error) {
	p := store.MessageListParams{PeopleOnly: true, Descending: true, Limit: 32}
	for {
		ms, err := tx.MessageList(ctx, chatID, p)
		if err != nil || len(ms) == 0 {
			return 0, err
		}
		for _, m := range ms {
			if m.Role == store.RoleUser {
				return m.ID, nil
			}
		}
		p.BeforeID = ms[len(ms)-1].ID
	}
}

// messages is GET /ai-sdk/chat/{id}/messages: the history as UIMessage[],
// to hydrate useChat({messages}); [] for an id that has no chat yet.
func (h *Handler) messages(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	c := loopback.Client(h.deps.API, r)
	me, err := c.Me(ctx)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	chatID, err := h.resolveChat(ctx, c, me.ID, r.PathValue("id"), nil)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	out := []UIMessage{}
	if chatID != uuid.Nil {
		tools, err := h.clientTools(ctx, chatID)
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		chat, history, pending, err := h.readChat(ctx, chatID)
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		approvals, err := chatstate.PendingApprovals(chat)
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		if out, err = toUIMessages(chatID, history, tools, approvals, pending); err != nil {
			h.writeError(w, r, err)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// interrupt is POST /ai-sdk/chat/{id}/interrupt: the native interrupt
// (POST /chats/{chat}/interrupt) of the chat the id names. The SDK's
// stop() only closes the client's connection.
func (h *Handler) interrupt(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	c := loopback.Client(h.deps.API, r)
	me, err := c.Me(ctx)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	chatID, err := h.resolveChat(ctx, c, me.ID, r.PathValue("id"), nil)
	if err == nil && chatID == uuid.Nil {
		err = notFound("chat")
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	chat, err := c.Interrupt(ctx, chatID)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(chat)
}

// toUIMessages builds the UIMessages of a history: each user message as
// itself, the replies of its turn as one assistant message (a step-start
// per stored assistant message, each tool part in its final state).
func toUIMessages(chatID uuid.UUID, history []store.Message, clientTools map[string]bool, approvals []sdk.ToolApproval, pending []chatstate.ToolCall) ([]UIMessage, error) {
	awaiting := map[string]bool{}
	for _, a := range approvals {
		awaiting[a.ToolCallID] = a.State == sdk.ApprovalPending
	}
	out := []UIMessage{}
	var reply *UIMessage
	tools := map[string]int{} // tool call id -> index in reply.Parts
	var anchor int64
	for _, m := range history {
		var parts []sdk.ChatMessagePart
		if err := json.Unmarshal(m.Content, &parts); err != nil {
			return nil, err
		}
		switch m.Role {
		case store.RoleUser:
			anchor, reply = m.ID, nil
			meta := map[string]any{"message_id": m.ID, "chat_id": chatID}
			if m.RequestID.Valid {
				meta["request_id"] = m.RequestID.UUID
			}
			u := UIMessage{ID: UserID(m.ID), Role: "user", Metadata: map[string]any{"chatd": meta}, Parts: []UIPart{}}
			for _, p := range parts {
				switch p.Type {
				case sdk.PartText:
					u.Parts = append(u.Parts, UIPart{Type: "text", Text: p.Text})
				case sdk.PartFile:
					u.Parts = append(u.Parts, UIPart{Type: "file", URL: p.URL, MediaType: p.MediaType})
				}
			}
			out = append(out, u)
		case store.RoleAssistant, store.RoleTool:
			if reply == nil {
				out = append(out, UIMessage{ID: AssistantID(anchor), Role: "assistant", Parts: []UIPart{},
					Metadata: map[string]any{"chatd": map[string]any{"chat_id": chatID, "message_id": anchor, "reply_message_ids": []int64{}}}})
				reply = &out[len(out)-1]
				tools = map[string]int{}
			}
			ids := reply.Metadata.(map[string]any)["chatd"].(map[string]any)
			ids["reply_message_ids"] = append(ids["reply_message_ids"].([]int64), m.ID)
			if m.Role == store.RoleAssistant {
				reply.Parts = append(reply.Parts, UIPart{Type: "step-start"})
			}
			for _, p := range parts {
				addPart(reply, tools, p, clientTools)
			}
		}
	}
	// Calls still waiting: on a person's approval, or on the client.
	if reply != nil {
		for _, c := range pending {
			i, ok := tools[c.ID]
			if !ok {
				continue
			}
			if awaiting[c.ID] {
				reply.Parts[i].State = "approval-requested"
				reply.Parts[i].Approval = &UIApproval{ID: c.ID}
			}
		}
	}
	return out, nil
}

// addPart adds one stored part to a reply.
func addPart(reply *UIMessage, tools map[string]int, p sdk.ChatMessagePart, clientTools map[string]bool) {
	switch p.Type {
	case sdk.PartText:
		if p.Text != "" {
			reply.Parts = append(reply.Parts, UIPart{Type: "text", Text: p.Text, State: "done"})
		}
	case sdk.PartReasoning:
		if p.Text != "" {
			reply.Parts = append(reply.Parts, UIPart{Type: "reasoning", Text: p.Text, State: "done"})
		}
	case sdk.PartSource:
		reply.Parts = append(reply.Parts, UIPart{Type: "source-url", URL: p.URL, Title: p.Title, SourceID: p.URL})
	case sdk.PartFile:
		if p.URL != "" {
			reply.Parts = append(reply.Parts, UIPart{Type: "file", URL: p.URL, MediaType: p.MediaType})
		}
	case sdk.PartToolCall:
		input := p.Args
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		part := UIPart{Type: "tool-" + p.ToolName, ToolCallID: p.ToolCallID, State: "input-available", Input: input}
		if !clientTools[p.ToolName] {
			part.Type, part.ToolName = "dynamic-tool", p.ToolName
		}
		tools[p.ToolCallID] = len(reply.Parts)
		reply.Parts = append(reply.Parts, part)
	case sdk.PartToolResult:
		i, ok := tools[p.ToolCallID]
		if !ok {
			return
		}
		if p.IsError {
			reply.Parts[i].State, reply.Parts[i].ErrorText = "output-error", errorText(p.Result)
			return
		}
		out := p.Result
		if len(out) == 0 {
			out = json.RawMessage("null")
		}
		reply.Parts[i].State, reply.Parts[i].Output = "output-available", out
	}
}

// readChat reads a chat, its history as people see it and, while it waits
// in requires_action, the tool calls it waits on, in one read transaction.
func (h *Handler) readChat(ctx context.Context, chatID uuid.UUID) (chat store.Chat, history []store.Message, pending []chatstate.ToolCall, err error) {
	err = h.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		if chat, err = tx.ChatGet(ctx, chatID); err != nil {
			return err
		}
		if history, err = tx.MessageList(ctx, chatID, store.MessageListParams{PeopleOnly: true}); err != nil {
			return err
		}
		if chat.Status == store.ChatStatusRequiresAction {
			pending, err = chatstate.OutstandingToolCalls(ctx, tx, chatID)
		}
		return err
	})
	return chat, history, pending, err
}
