package aisdk

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/loopback"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// ChatRequest is the body of POST /ai-sdk/chat: what HttpChatTransport
// sends ({id, messages, trigger, messageId}; `message` alone is accepted
// too, for apps that send only the last message), plus chatd's own
// optional fields an app adds with the transport's `body`.
type ChatRequest struct {
	ID        string      `json:"id"`
	Messages  []UIMessage `json:"messages"`
	Message   *UIMessage  `json:"message"`
	Trigger   string      `json:"trigger"`
	MessageID string      `json:"messageId"`

	// Tools are the app's client-side tools, in the shape of the native
	// unsafe_dynamic_tools; they are the chat's from its first POST.
	Tools []sdk.DynamicTool `json:"tools"`
	// Title, SystemPrompt and ToolApproval are the chat's, set when the
	// first POST creates it (without a title chatd generates one).
	Title           string     `json:"title"`
	SystemPrompt    string     `json:"system_prompt"`
	ToolApproval    string     `json:"tool_approval"`
	ModelConfigID   *uuid.UUID `json:"model_config_id"`
	ReasoningEffort string     `json:"reasoning_effort"`
	// BusyBehavior is the native send's: "queue" (default) or "interrupt".
	BusyBehavior string `json:"busy_behavior"`
}

// UIMessage is the AI SDK's UIMessage, the fields chatd reads or writes.
type UIMessage struct {
	ID       string   `json:"id"`
	Role     string   `json:"role"`
	Parts    []UIPart `json:"parts"`
	Metadata any      `json:"metadata,omitempty"`
}

// UIPart is one part of a UIMessage: text, reasoning, step-start, file,
// a tool part (`tool-NAME` or `dynamic-tool`).
type UIPart struct {
	Type       string          `json:"type"`
	Text       string          `json:"text,omitempty"`
	State      string          `json:"state,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
	ToolName   string          `json:"toolName,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
	Output     json.RawMessage `json:"output,omitempty"`
	ErrorText  string          `json:"errorText,omitempty"`
	Approval   *UIApproval     `json:"approval,omitempty"`
	URL        string          `json:"url,omitempty"`
	MediaType  string          `json:"mediaType,omitempty"`
	Title      string          `json:"title,omitempty"`
	SourceID   string          `json:"sourceId,omitempty"`
}

// UIApproval is a tool part's approval.
type UIApproval struct {
	ID       string `json:"id"`
	Approved *bool  `json:"approved,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

func (p UIPart) isTool() bool { return p.Type == "dynamic-tool" || strings.HasPrefix(p.Type, "tool-") }

// post is POST /ai-sdk/chat: admit the request through the native API,
// then stream its turn.
func (h *Handler) post(w http.ResponseWriter, r *http.Request, user uuid.UUID) {
	var req ChatRequest
	if err := decodeBody(r, h.deps.MaxBodyBytes, &req); err != nil {
		h.writeError(w, r, err)
		return
	}
	c := loopback.Client(h.deps.API, r)
	create := &sdk.CreateChatRequest{Title: req.Title, UnsafeDynamicTools: req.Tools, SystemPrompt: req.SystemPrompt, ToolApproval: req.ToolApproval,
		ModelConfigID: req.ModelConfigID, ReasoningEffort: req.ReasoningEffort}
	chatID, err := h.resolveChat(r.Context(), c, user, req.ID, create)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	t, err := h.submit(r.Context(), c, chatID, req)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	tools, err := h.clientTools(r.Context(), chatID)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	h.stream(w, r, chatID, t, tools)
}

// submit turns the request into native API calls and returns the turn to
// stream.
func (h *Handler) submit(ctx context.Context, c *sdk.Client, chatID uuid.UUID, req ChatRequest) (Target, error) {
	last := req.Message
	if n := len(req.Messages); last == nil && n > 0 {
		last = &req.Messages[n-1]
	}
	switch req.Trigger {
	case "regenerate-message":
		return h.regenerate(ctx, c, chatID, req)
	case "submit-message", "":
	default:
		return Target{}, validation("trigger", "must be submit-message or regenerate-message")
	}
	if last == nil {
		return Target{}, validation("messages", "a submit-message needs a last message")
	}
	switch last.Role {
	case "user":
		if req.MessageID != "" && req.MessageID == last.ID {
			return h.edit(ctx, c, chatID, req, *last)
		}
		return h.send(ctx, c, chatID, req, *last)
	case "assistant":
		return h.continueTurn(ctx, c, chatID, *last)
	}
	return Target{}, validation("messages", "the last message must be a user message (or the assistant message whose tool calls it answers)")
}

// content is a UIMessage's text as native input parts.
func content(m UIMessage) ([]sdk.ChatMessagePart, error) {
	var out []sdk.ChatMessagePart
	for _, p := range m.Parts {
		switch p.Type {
		case "text":
			if p.Text != "" {
				out = append(out, sdk.ChatMessagePart{Type: sdk.PartText, Text: p.Text})
			}
		case "file":
			return nil, validation("messages", "file parts are not accepted here: upload with POST /api/v2/files and send through the native API")
		}
	}
	if len(out) == 0 {
		return nil, validation("messages", "the user message has no text")
	}
	return out, nil
}

// send admits a new user message under its derived request id: a retry
// of the same message id is the same durable request (replayed, or in
// progress), and streams the same turn.
func (h *Handler) send(ctx context.Context, c *sdk.Client, chatID uuid.UUID, req ChatRequest, m UIMessage) (Target, error) {
	parts, err := content(m)
	if err != nil {
		return Target{}, err
	}
	if m.ID == "" {
		return Target{}, validation("messages", "the user message has no id")
	}
	rid := MessageRequestID(chatID, m.ID)
	body := sdk.CreateChatMessageRequest{Content: parts, BusyBehavior: req.BusyBehavior, ModelConfigID: req.ModelConfigID,
		ReasoningEffort: req.ReasoningEffort, RequestID: &rid}
	err = c.Do(ctx, http.MethodPost, "/chats/"+chatID.String()+"/messages", body, nil)
	if err != nil && !isCode(err, sdk.CodeInvocationInProgress) {
		return Target{}, err
	}
	return Target{RequestID: uuid.NullUUID{UUID: rid, Valid: true}}, nil
}

// edit is a submit-message with messageId: the transport edits that user
// message; chatd edits it and reruns from there.
func (h *Handler) edit(ctx context.Context, c *sdk.Client, chatID uuid.UUID, req ChatRequest, m UIMessage) (Target, error) {
	parts, err := content(m)
	if err != nil {
		return Target{}, err
	}
	id, err := h.findUserMessage(ctx, chatID, m.ID, req.Messages)
	if err != nil {
		return Target{}, err
	}
	res, err := c.EditMessage(ctx, chatID, id, sdk.EditChatMessageRequest{Content: parts, ModelConfigID: req.ModelConfigID, ReasoningEffort: req.ReasoningEffort})
	if err != nil {
		return Target{}, err
	}
	return Target{MessageID: res.Message.ID}, nil
}

// regenerate reruns a reply: the reply to the named user message (or the
// named reply, or the reply to the last one) gets a new version, as POST
// /chats/{chat}/messages/{message}/regenerate does; the old one stays a
// version of it. A turn with no reply yet (it failed) is rerun by editing
// its user message to itself.
func (h *Handler) regenerate(ctx context.Context, c *sdk.Client, chatID uuid.UUID, req ChatRequest) (Target, error) {
	var id int64
	var err error
	if n, ok := parseID(req.MessageID, "a-"); ok {
		id = n
	} else if req.MessageID != "" && slices.ContainsFunc(req.Messages, func(m UIMessage) bool { return m.ID == req.MessageID && m.Role == "user" }) {
		id, err = h.findUserMessage(ctx, chatID, req.MessageID, req.Messages)
	} else {
		id, err = h.lastUserMessage(ctx, chatID)
	}
	if err != nil {
		return Target{}, err
	}
	if reply, err := h.firstReply(ctx, chatID, id); err != nil {
		return Target{}, err
	} else if reply != 0 {
		_, err := c.RegenerateMessage(ctx, chatID, reply, sdk.RegenerateMessageRequest{ModelConfigID: req.ModelConfigID, ReasoningEffort: req.ReasoningEffort})
		if err != nil {
			return Target{}, err
		}
		return Target{MessageID: id}, nil
	}
	var m store.Message
	err = h.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
		m, err = tx.MessageGet(ctx, chatID, id)
		return err
	})
	if err != nil {
		return Target{}, notFound("message")
	}
	var stored []sdk.ChatMessagePart
	if err := json.Unmarshal(m.Content, &stored); err != nil {
		return Target{}, err
	}
	var parts []sdk.ChatMessagePart
	for _, p := range stored {
		switch {
		case p.Type == sdk.PartText:
			parts = append(parts, sdk.ChatMessagePart{Type: sdk.PartText, Text: p.Text})
		case p.Type == sdk.PartFile && p.FileID != nil:
			parts = append(parts, sdk.ChatMessagePart{Type: sdk.PartFile, FileID: p.FileID})
		}
	}
	edit := sdk.EditChatMessageRequest{Content: parts, ReasoningEffort: m.ReasoningEffort}
	if m.ModelConfigID.Valid {
		edit.ModelConfigID = &m.ModelConfigID.UUID
	}
	res, err := c.EditMessage(ctx, chatID, id, edit)
	if err != nil {
		return Target{}, err
	}
	return Target{MessageID: res.Message.ID}, nil
}

// firstReply is the first assistant reply to user message id on the active
// branch (0: none yet).
func (h *Handler) firstReply(ctx context.Context, chatID uuid.UUID, id int64) (int64, error) {
	var reply int64
	err := h.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
		ms, err := tx.MessageList(ctx, chatID, store.MessageListParams{AfterID: id, PeopleOnly: true})
		for _, m := range ms {
			if m.Role == store.RoleUser {
				break
			}
			if m.Role == store.RoleAssistant && !m.Compressed {
				reply = m.ID
				break
			}
		}
		return err
	})
	return reply, err
}

// continueTurn is a submit-message whose last message is the assistant's:
// the client answered tool calls (addToolOutput, addToolApprovalResponse).
// Answers to calls chatd still waits on become tool approvals and tool
// results; the stream continues the turn after the steps the client has.
func (h *Handler) continueTurn(ctx context.Context, c *sdk.Client, chatID uuid.UUID, m UIMessage) (Target, error) {
	chat, history, pending, err := h.readChat(ctx, chatID)
	if err != nil {
		return Target{}, err
	}
	approvals, err := chatstate.PendingApprovals(chat)
	if err != nil {
		return Target{}, err
	}
	awaiting := map[string]bool{}
	for _, a := range approvals {
		awaiting[a.ToolCallID] = true
	}
	outstanding := map[string]bool{}
	for _, p := range pending {
		outstanding[p.ID] = !awaiting[p.ID]
	}
	var answers sdk.SubmitToolApprovalsRequest
	var results sdk.SubmitToolResultsRequest
	known := map[string]bool{}
	for _, p := range m.Parts {
		if !p.isTool() || p.ToolCallID == "" {
			continue
		}
		known[p.ToolCallID] = true
		switch {
		case p.State == "approval-responded" && p.Approval != nil && p.Approval.Approved != nil && awaiting[p.ToolCallID]:
			answers.Approvals = append(answers.Approvals, sdk.ToolApprovalAnswer{ToolCallID: p.ToolCallID, Approved: *p.Approval.Approved, Reason: p.Approval.Reason})
		case p.State == "output-available" && outstanding[p.ToolCallID]:
			out := p.Output
			if len(out) == 0 {
				out = json.RawMessage("null")
			}
			results.Results = append(results.Results, sdk.ToolResult{ToolCallID: p.ToolCallID, Output: out})
		case p.State == "output-error" && outstanding[p.ToolCallID]:
			out, _ := json.Marshal(map[string]string{"error": p.ErrorText})
			results.Results = append(results.Results, sdk.ToolResult{ToolCallID: p.ToolCallID, Output: out, IsError: true})
		}
	}
	if len(answers.Approvals) > 0 {
		if err := c.SubmitToolApprovals(ctx, chatID, answers); err != nil {
			return Target{}, err
		}
	}
	if len(results.Results) > 0 {
		if err := c.SubmitToolResults(ctx, chatID, results); err != nil {
			return Target{}, err
		}
	}
	t := Target{Approved: map[string]bool{}}
	for _, a := range answers.Approvals {
		t.Approved[a.ToolCallID] = true
	}
	if n, ok := parseID(m.ID, "a-"); ok {
		t.MessageID = n
	} else {
		for i := len(history) - 1; i >= 0 && t.MessageID == 0; i-- {
			if history[i].Role == store.RoleUser {
				t.MessageID = history[i].ID
			}
		}
	}
	if t.MessageID == 0 {
		return Target{}, notFound("message")
	}
	// The steps the client has: up to the last stored step with a call
	// its message holds.
	for _, hm := range history {
		if hm.ID <= t.MessageID || hm.Role != store.RoleAssistant {
			continue
		}
		var parts []sdk.ChatMessagePart
		if json.Unmarshal(hm.Content, &parts) != nil {
			continue
		}
		if slices.ContainsFunc(parts, func(p sdk.ChatMessagePart) bool { return p.Type == sdk.PartToolCall && known[p.ToolCallID] }) {
			t.After = hm.ID
		}
	}
	return t, nil
}

func notFound(what string) *sdk.Error {
	return &sdk.Error{StatusCode: http.StatusNotFound, Response: sdk.Response{Message: "The " + what + " was not found.", Code: sdk.CodeNotFound}}
}

// lastUserMessage is the chat's newest visible user message.
func (h *Handler) lastUserMessage(ctx context.Context, chatID uuid.UUID) (int64, error) {
	var id int64
	err := h.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
		ms, err := tx.MessageList(ctx, chatID, store.MessageListParams{PeopleOnly: true})
		for _, m := range ms {
			if m.Role == store.RoleUser {
				id = m.ID
			}
		}
		return err
	})
	if err == nil && id == 0 {
		err = notFound("user message")
	}
	return id, err
}

// findUserMessage maps a UIMessage id to the chatd user message it names:
// a chatd id ("u-N"), else the message its derived request id admitted,
// else the user message at the same place among the user messages. A
// message an edit replaced is followed to its replacement.
func (h *Handler) findUserMessage(ctx context.Context, chatID uuid.UUID, uiID string, body []UIMessage) (int64, error) {
	var all []store.Message
	err := h.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		all, err = tx.MessageList(ctx, chatID, store.MessageListParams{IncludeDeleted: true})
		return err
	})
	if err != nil {
		return 0, err
	}
	users := slices.DeleteFunc(all, func(m store.Message) bool {
		return m.Role != store.RoleUser || m.Visibility == store.VisibilityModel
	})
	found := -1
	if n, ok := parseID(uiID, "u-"); ok {
		found = slices.IndexFunc(users, func(m store.Message) bool { return m.ID == n })
	} else {
		rid := MessageRequestID(chatID, uiID)
		found = slices.IndexFunc(users, func(m store.Message) bool { return m.RequestID.Valid && m.RequestID.UUID == rid })
	}
	if found >= 0 {
		for i := found; i < len(users); i++ {
			if !users[i].Deleted {
				return users[i].ID, nil
			}
		}
		return 0, notFound("message")
	}
	k := 0
	for _, m := range body {
		if m.ID == uiID {
			break
		}
		if m.Role == "user" {
			k++
		}
	}
	for _, m := range users {
		if m.Deleted {
			continue
		}
		if k == 0 {
			return m.ID, nil
		}
		k--
	}
	return 0, notFound("message")
}
