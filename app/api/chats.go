package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/wire"
	"github.com/chatd/chatd/store"
)

// Label limits: labels are small key/value tags for filtering.
const (
	maxLabels        = 32
	maxLabelKeyLen   = 64
	maxLabelValueLen = 256
	maxTitleLen      = 200
)

// readChat reads a chat the caller may see; anything else is 404.
func (s *Server) readChat(ctx context.Context, c *caller, tx store.Reader, id uuid.UUID) (store.Chat, error) {
	chat, err := tx.ChatGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !c.owns(chat)) {
		return store.Chat{}, errChatNotFound
	}
	return chat, err
}

// transition runs fn as one bundle on a chat the caller may see, and
// returns the chat as committed.
func (s *Server) transition(r *http.Request, c *caller, id uuid.UUID, fn func(t *chatstate.Tx) error) (store.Chat, error) {
	ctx := r.Context()
	var chat store.Chat
	err := s.deps.Machine.Do(ctx, func(t *chatstate.Tx) error {
		if _, err := s.readChat(ctx, c, t.Reader(), id); err != nil {
			return err
		}
		if err := fn(t); err != nil {
			return err
		}
		var err error
		chat, err = t.Reader().ChatGet(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil // deleted by fn
		}
		return err
	})
	return chat, err
}

func (s *Server) createChat(w http.ResponseWriter, r *http.Request, c *caller) {
	var req struct {
		sdk.CreateChatRequest
		RequestID json.RawMessage `json:"request_id"`
	}
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	requestID, err := parseRequestID(req.RequestID)
	if err != nil {
		writeError(w, r, err)
		return
	}
	parts, err := s.inputParts(req.Content, true)
	if err != nil {
		writeError(w, r, err)
		return
	}
	model := optUUID(req.ModelConfigID)
	if err := errors.Join(s.checkModel("model_config_id", model), checkEffort("reasoning_effort", req.ReasoningEffort),
		checkLabels(req.Labels), checkTitle(req.Title, true)); err != nil {
		writeError(w, r, firstError(err))
		return
	}
	tools, err := dynamicTools(req.UnsafeDynamicTools)
	if err != nil {
		writeError(w, r, err)
		return
	}
	p := chatstate.CreateParams{
		OwnerID: c.user.ID, ParentChatID: optUUID(req.ParentChatID), SystemPrompt: req.SystemPrompt,
		Labels: req.Labels, DynamicTools: tools,
		Input: chatstate.UserInput{Content: parts, CreatedBy: uuid.NullUUID{UUID: c.user.ID, Valid: true},
			ModelConfigID: model, ReasoningEffort: req.ReasoningEffort},
		Title: strings.TrimSpace(req.Title), TitleSource: store.TitleSourceUser,
	}
	generate := p.Title == ""
	if generate {
		p.Title, p.TitleSource = chatstate.FallbackTitle(firstText(parts), DefaultFallbackLength), store.TitleSourceFallback
	}
	p.Input.RequestID = requestID
	var res chatstate.CreateResult
	create := func(t *chatstate.Tx) error {
		if p.ParentChatID.Valid {
			if _, err := s.readChat(r.Context(), c, t.Reader(), p.ParentChatID.UUID); err != nil {
				return validation("parent_chat_id", "the parent chat does not exist")
			}
		}
		var err error
		res, err = t.Create(p)
		return err
	}
	defer func() {
		if generate && len(parts) > 0 && s.deps.Titles != nil && res.Chat.ID != uuid.Nil {
			s.deps.Titles.GenerateTitle(res.Chat.ID)
		}
	}()
	if requestID.Valid {
		s.admitDurable(w, r, c, requestID.UUID, ContentSHA256(parts), kindCreateChat, uuid.NullUUID{},
			func(t *chatstate.Tx) (uuid.UUID, *int64, *int64, int, any, error) {
				if err := create(t); err != nil {
					return uuid.Nil, nil, nil, 0, nil, err
				}
				var msgID *int64
				for _, m := range res.Messages {
					if m.Role == store.RoleUser {
						msgID = &m.ID
					}
				}
				return res.Chat.ID, msgID, nil, http.StatusCreated, wire.ToChat(res.Chat), nil
			})
		return
	}
	if err := s.deps.Machine.Do(r.Context(), create); err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, wire.ToChat(res.Chat))
}

func firstText(parts []sdk.ChatMessagePart) string {
	for _, p := range parts {
		if p.Type == sdk.PartText && strings.TrimSpace(p.Text) != "" {
			return p.Text
		}
	}
	return ""
}

func firstError(err error) error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		if errs := j.Unwrap(); len(errs) > 0 {
			return errs[0]
		}
	}
	return err
}

func checkTitle(title string, allowEmpty bool) error {
	t := strings.TrimSpace(title)
	switch {
	case t == "" && !allowEmpty:
		return validation("title", "title is empty")
	case len([]rune(t)) > maxTitleLen:
		return validation("title", fmt.Sprintf("title is longer than %d characters", maxTitleLen))
	}
	return nil
}

func checkLabels(labels map[string]string) error {
	if len(labels) > maxLabels {
		return validation("labels", fmt.Sprintf("at most %d labels", maxLabels))
	}
	for k, v := range labels {
		switch {
		case k == "" || len(k) > maxLabelKeyLen || strings.ContainsAny(k, ":\x00"):
			return validation("labels", fmt.Sprintf("label key %q must be 1-%d characters without ':'", k, maxLabelKeyLen))
		case len(v) > maxLabelValueLen || strings.ContainsRune(v, 0):
			return validation("labels", fmt.Sprintf("label %q: value longer than %d characters", k, maxLabelValueLen))
		}
	}
	return nil
}

func dynamicTools(tools []sdk.DynamicTool) (json.RawMessage, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	seen := map[string]bool{}
	for i, t := range tools {
		field := fmt.Sprintf("unsafe_dynamic_tools[%d]", i)
		if t.Name == "" || len(t.Name) > 64 || strings.ContainsFunc(t.Name, func(r rune) bool {
			return !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		}) {
			return nil, validation(field+".name", fmt.Sprintf("tool name %q must be 1-64 of [A-Za-z0-9_-]", t.Name))
		}
		if seen[t.Name] {
			return nil, validation(field+".name", fmt.Sprintf("duplicate tool name %q", t.Name))
		}
		seen[t.Name] = true
		if len(t.InputSchema) > 0 {
			var schema map[string]any
			if err := json.Unmarshal(t.InputSchema, &schema); err != nil {
				return nil, validation(field+".input_schema", "input_schema must be a JSON object")
			}
		}
	}
	return json.Marshal(tools)
}

func (s *Server) listChats(w http.ResponseWriter, r *http.Request, c *caller) {
	q := r.URL.Query()
	for key, vals := range q {
		if slices.ContainsFunc(vals, func(v string) bool { return strings.ContainsRune(v, 0) }) {
			writeError(w, r, validation(key, "must not contain the NUL character"))
			return
		}
	}
	text, archived, mine := parseChatQuery(q.Get("q"))
	p := store.ChatListParams{Query: text}
	if !c.user.Admin || mine {
		p.OwnerID = uuid.NullUUID{UUID: c.user.ID, Valid: true}
	}
	a := q.Get("archived")
	if a == "" {
		a = archived
	}
	switch a {
	case "", "false":
		no := false
		p.Archived = &no
	case "true":
		yes := true
		p.Archived = &yes
	case "all":
	default:
		writeError(w, r, validation("archived", fmt.Sprintf("%q must be true, false or all", a)))
		return
	}
	for _, l := range q["label"] {
		k, v, ok := strings.Cut(l, ":")
		if !ok || k == "" {
			writeError(w, r, validation("label", fmt.Sprintf("%q must be key:value", l)))
			return
		}
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
		if len(p.Labels) > maxLabels {
			writeError(w, r, validation("label", fmt.Sprintf("at most %d label filters", maxLabels)))
			return
		}
	}
	limit, err := queryInt(r, "limit", DefaultListLimit, 1, MaxListLimit)
	if err != nil {
		writeError(w, r, err)
		return
	}
	p.Limit = int(limit)
	if raw := q.Get("after_id"); raw != "" {
		id, err := uuid.Parse(raw)
		if err != nil {
			writeError(w, r, validation("after_id", fmt.Sprintf("%q is not a valid UUID", raw)))
			return
		}
		p.AfterID = uuid.NullUUID{UUID: id, Valid: id != uuid.Nil}
	}
	var chats []store.Chat
	err = s.deps.Store.ReadTx(r.Context(), func(tx store.Reader) error {
		var err error
		chats, err = tx.ChatList(r.Context(), p)
		return err
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := make([]sdk.Chat, 0, len(chats))
	for _, ch := range chats {
		out = append(out, wire.ToChat(ch))
	}
	writeJSON(w, http.StatusOK, out)
}

// parseChatQuery splits q into free text and the search terms Coder's
// clients put there: archived:true|false and source:created_by_me.
func parseChatQuery(q string) (text, archived string, mine bool) {
	var words []string
	for _, w := range strings.Fields(q) {
		switch {
		case w == "archived:true" || w == "archived:false":
			archived = strings.TrimPrefix(w, "archived:")
		case w == "source:created_by_me":
			mine = true
		default:
			words = append(words, w)
		}
	}
	return strings.Join(words, " "), archived, mine
}

func (s *Server) listModels(w http.ResponseWriter, r *http.Request, c *caller) {
	models := s.deps.Models.List()
	resp := sdk.ChatModelsResponse{Models: models, Providers: []sdk.ChatModelProvider{}, UnsupportedProviders: []sdk.ChatModelProvider{}}
	for _, m := range models {
		i := slices.IndexFunc(resp.Providers, func(p sdk.ChatModelProvider) bool { return p.Provider == m.Provider })
		if i < 0 {
			resp.Providers = append(resp.Providers, sdk.ChatModelProvider{Provider: m.Provider, Available: true})
			i = len(resp.Providers) - 1
		}
		resp.Providers[i].Models = append(resp.Providers[i].Models, m)
	}
	writeJSON(w, http.StatusOK, resp)
}

// listModelConfigs answers Coder's GET /chats/model-configs.
func (s *Server) listModelConfigs(w http.ResponseWriter, r *http.Request, c *caller) {
	out := []sdk.ChatModelConfig{}
	for _, m := range s.deps.Models.List() {
		out = append(out, sdk.ChatModelConfig{ID: m.ID, Provider: m.Provider, Model: m.Model,
			DisplayName: m.DisplayName, Enabled: true, IsDefault: m.Default, ContextLimit: m.ContextLimit})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getChat(w http.ResponseWriter, r *http.Request, c *caller) {
	id, err := pathUUID(r, "chat")
	if err != nil {
		writeError(w, r, err)
		return
	}
	var out sdk.Chat
	err = s.deps.Store.ReadTx(r.Context(), func(tx store.Reader) error {
		chat, err := s.readChat(r.Context(), c, tx, id)
		if err != nil {
			return err
		}
		out = wire.ToChat(chat)
		family, err := tx.ChatDescendants(r.Context(), chat.Root())
		for _, f := range family {
			if f.ParentChatID.Valid && f.ParentChatID.UUID == id {
				out.Children = append(out.Children, wire.ToChat(f))
			}
		}
		return err
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) patchChat(w http.ResponseWriter, r *http.Request, c *caller) {
	id, err := pathUUID(r, "chat")
	if err != nil {
		writeError(w, r, err)
		return
	}
	var req sdk.UpdateChatRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	if req.Title != nil {
		if err := checkTitle(*req.Title, false); err != nil {
			writeError(w, r, err)
			return
		}
	}
	if req.Labels != nil {
		if err := checkLabels(*req.Labels); err != nil {
			writeError(w, r, err)
			return
		}
	}
	if req.PinOrder != nil && *req.PinOrder < 0 {
		writeError(w, r, validation("pin_order", "pin_order must be >= 0 (0 unpins)"))
		return
	}
	change := chatstate.MetadataChange{Archived: req.Archived, Labels: req.Labels, PinOrder: req.PinOrder}
	if req.Title != nil {
		title := strings.TrimSpace(*req.Title)
		change.Title = &title
	}
	_, err = s.transition(r, c, id, func(t *chatstate.Tx) error { return t.UpdateMetadata(id, change) })
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) deleteChat(w http.ResponseWriter, r *http.Request, c *caller) {
	id, err := pathUUID(r, "chat")
	if err != nil {
		writeError(w, r, err)
		return
	}
	_, err = s.transition(r, c, id, func(t *chatstate.Tx) error {
		_, st, err := t.Peek(id)
		if err != nil {
			return err
		}
		if err := chatstate.MetadataAllowed(st, true); err != nil {
			return err
		}
		return t.Delete(id)
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listMessages(w http.ResponseWriter, r *http.Request, c *caller) {
	id, err := pathUUID(r, "chat")
	if err != nil {
		writeError(w, r, err)
		return
	}
	limit, err := queryInt(r, "limit", DefaultMessagesLimit, 1, MaxListLimit)
	if err != nil {
		writeError(w, r, err)
		return
	}
	before, err := queryInt(r, "before_id", 0, 0, 1<<62)
	if err != nil {
		writeError(w, r, err)
		return
	}
	after, err := queryInt(r, "after_id", 0, 0, 1<<62)
	if err != nil {
		writeError(w, r, err)
		return
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
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) userInput(c *caller, content []sdk.ChatMessagePart, model *uuid.UUID, effort string) (chatstate.UserInput, error) {
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
	return chatstate.UserInput{Content: parts, CreatedBy: uuid.NullUUID{UUID: c.user.ID, Valid: true},
		ModelConfigID: m, ReasoningEffort: effort}, nil
}

func (s *Server) sendMessage(w http.ResponseWriter, r *http.Request, c *caller) {
	id, err := pathUUID(r, "chat")
	if err != nil {
		writeError(w, r, err)
		return
	}
	var req struct {
		sdk.CreateChatMessageRequest
		RequestID json.RawMessage `json:"request_id"`
	}
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	requestID, err := parseRequestID(req.RequestID)
	if err != nil {
		writeError(w, r, err)
		return
	}
	in, err := s.userInput(c, req.Content, req.ModelConfigID, req.ReasoningEffort)
	if err != nil {
		writeError(w, r, err)
		return
	}
	in.RequestID = requestID
	busy, err := busyBehavior(req.BusyBehavior)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var retitled bool
	send := func(t *chatstate.Tx) (chatstate.SendResult, error) {
		if _, err := s.readChat(r.Context(), c, t.Reader(), id); err != nil {
			return chatstate.SendResult{}, err
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
		s.admitDurable(w, r, c, requestID.UUID, ContentSHA256(in.Content), kindSendMessage, uuid.NullUUID{UUID: id, Valid: true},
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
		return
	}
	var res chatstate.SendResult
	err = s.deps.Machine.Do(r.Context(), func(t *chatstate.Tx) error {
		var err error
		res, err = send(t)
		return err
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sendResponse(res))
}

func sendResponse(res chatstate.SendResult) sdk.CreateChatMessageResponse {
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

func (s *Server) editMessage(w http.ResponseWriter, r *http.Request, c *caller) {
	id, err := pathUUID(r, "chat")
	if err != nil {
		writeError(w, r, err)
		return
	}
	msgID, err := pathInt(r, "message")
	if err != nil {
		writeError(w, r, err)
		return
	}
	var req sdk.EditChatMessageRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	in, err := s.userInput(c, req.Content, req.ModelConfigID, req.ReasoningEffort)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var res chatstate.EditResult
	_, err = s.transition(r, c, id, func(t *chatstate.Tx) error {
		var err error
		res, err = t.EditMessage(id, msgID, in)
		return err
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sdk.EditChatMessageResponse{
		Message: wire.ToMessage(res.Message), Messages: wire.ToMessages([]store.Message{res.Message}), DeletedMessageIDs: res.DeletedIDs,
	})
}

// queueAction parses {chat} and {queuedMessage} and runs fn.
func (s *Server) queueAction(w http.ResponseWriter, r *http.Request, c *caller, status int, fn func(t *chatstate.Tx, chat uuid.UUID, qid int64) error) {
	id, err := pathUUID(r, "chat")
	if err != nil {
		writeError(w, r, err)
		return
	}
	qid, err := pathInt(r, "queuedMessage")
	if err != nil {
		writeError(w, r, err)
		return
	}
	if _, err := s.transition(r, c, id, func(t *chatstate.Tx) error { return fn(t, id, qid) }); err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(status)
}

func (s *Server) deleteQueued(w http.ResponseWriter, r *http.Request, c *caller) {
	s.queueAction(w, r, c, http.StatusNoContent, func(t *chatstate.Tx, chat uuid.UUID, qid int64) error {
		_, err := t.DeleteQueuedMessage(chat, qid)
		return err
	})
}

func (s *Server) promoteQueued(w http.ResponseWriter, r *http.Request, c *caller) {
	s.queueAction(w, r, c, http.StatusAccepted, func(t *chatstate.Tx, chat uuid.UUID, qid int64) error {
		_, err := t.PromoteQueuedMessage(chat, qid)
		return err
	})
}

// chatAction runs a body-less transition and answers with the chat.
func (s *Server) chatAction(w http.ResponseWriter, r *http.Request, c *caller, fn func(t *chatstate.Tx, chat uuid.UUID) error) {
	id, err := pathUUID(r, "chat")
	if err != nil {
		writeError(w, r, err)
		return
	}
	chat, err := s.transition(r, c, id, func(t *chatstate.Tx) error { return fn(t, id) })
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.ToChat(chat))
}

func (s *Server) interrupt(w http.ResponseWriter, r *http.Request, c *caller) {
	s.chatAction(w, r, c, func(t *chatstate.Tx, id uuid.UUID) error {
		_, err := t.Interrupt(id)
		return err
	})
}

func (s *Server) compact(w http.ResponseWriter, r *http.Request, c *caller) {
	s.chatAction(w, r, c, func(t *chatstate.Tx, id uuid.UUID) error {
		_, err := t.RequestCompaction(id)
		return err
	})
}

func (s *Server) clear(w http.ResponseWriter, r *http.Request, c *caller) {
	s.chatAction(w, r, c, func(t *chatstate.Tx, id uuid.UUID) error {
		_, err := t.ClearContext(id, uuid.NullUUID{UUID: c.user.ID, Valid: true})
		return err
	})
}

func (s *Server) reconcileInvalid(w http.ResponseWriter, r *http.Request, c *caller) {
	s.chatAction(w, r, c, func(t *chatstate.Tx, id uuid.UUID) error {
		_, err := t.ReconcileInvalidState(id)
		return err
	})
}

func (s *Server) submitToolResults(w http.ResponseWriter, r *http.Request, c *caller) {
	id, err := pathUUID(r, "chat")
	if err != nil {
		writeError(w, r, err)
		return
	}
	var req sdk.SubmitToolResultsRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	if len(req.Results) == 0 {
		writeError(w, r, validation("results", "results is empty"))
		return
	}
	_, err = s.transition(r, c, id, func(t *chatstate.Tx) error {
		_, err := t.CompleteRequiresAction(id, req.Results, uuid.NullUUID{UUID: c.user.ID, Valid: true})
		return err
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
