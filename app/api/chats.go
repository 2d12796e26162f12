package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/hooks"
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

func (s *Server) createChat(w http.ResponseWriter, r *http.Request, c *caller) (err error) {
	var req struct {
		sdk.CreateChatRequest
		RequestID json.RawMessage `json:"request_id"`
		// Raw, so a bad entry gets a 400 that names it.
		MCPServerIDs json.RawMessage `json:"mcp_server_ids"`
		ProjectID    json.RawMessage `json:"project_id"`
	}
	if err := decodeDurable(r, &req); err != nil {
		return err
	}
	requestID, err := parseRequestID(req.RequestID)
	if err != nil {
		return err
	}
	defer func() { err = withRequestID(err, requestID) }()
	parts, err := s.inputParts(req.Content, true)
	if err != nil {
		return err
	}
	model := optUUID(req.ModelConfigID)
	if err := errors.Join(s.checkModel("model_config_id", model), checkEffort("reasoning_effort", req.ReasoningEffort),
		checkLabels(req.Labels), checkTitle(req.Title, true)); err != nil {
		return firstError(err)
	}
	if err := s.checkFiles(r.Context(), c, parts, model, uuid.NullUUID{}); err != nil {
		return err
	}
	if err := s.checkCreateLimits(req.SystemPrompt, len(req.UnsafeDynamicTools)); err != nil {
		return err
	}
	tools, err := dynamicTools(req.UnsafeDynamicTools)
	if err != nil {
		return err
	}
	// servers is the chat's MCP selection as stored (nil: every server).
	servers, err := s.parseMCPServerIDs(req.MCPServerIDs, c)
	if err != nil {
		return err
	}
	project, err := parseProjectID(req.ProjectID)
	if err != nil {
		return err
	}
	if project.Value.Valid {
		req.CreateChatRequest.ProjectID = &project.Value.UUID
	}
	p := chatstate.CreateParams{
		ProjectID: project.Value,
		OwnerID:   c.user.ID, ParentChatID: optUUID(req.ParentChatID), SystemPrompt: req.SystemPrompt,
		Labels: req.Labels, DynamicTools: tools, MCPServerIDs: servers, ToolApproval: req.ToolApproval,
		Input: chatstate.UserInput{Content: parts, CreatedBy: uuid.NullUUID{UUID: c.user.ID, Valid: true},
			ModelConfigID: model, ReasoningEffort: req.ReasoningEffort, FileCap: s.fileCap()},
		Title: strings.TrimSpace(req.Title), TitleSource: store.TitleSourceUser,
	}
	if len(parts) > 0 {
		if err := s.checkBudget(r.Context(), c.user.ID, requestID); err != nil {
			return err
		}
	}
	// Lifecycle hooks see the chat's id before it exists; the prompt may
	// come back replaced, so the fallback title follows the admission.
	p.ID = uuid.New()
	if p.Input, err = s.admit(r.Context(), c, p.ID, requestID, hooks.SessionCreate, p.Input); err != nil {
		return err
	}
	parts = p.Input.Content
	generate := p.Title == ""
	if generate {
		p.Title, p.TitleSource = chatstate.FallbackTitle(firstText(parts), DefaultFallbackLength), store.TitleSourceFallback
	}
	p.Input.RequestID = requestID
	var res chatstate.Result
	create := func(t *chatstate.Tx) error {
		if err := s.checkChatQuota(r, t, c.user.ID); err != nil {
			return err
		}
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
		req.CreateChatRequest.MCPServerIDs = servers // the selection as parsed: null, [] or the ids
		b, err := sdk.CreateChatBinding(req.CreateChatRequest)
		if err != nil {
			return err
		}
		key, err := bindRequest(b, req.Content)
		if err != nil {
			return err
		}
		return s.admitDurable(w, r, c, requestID.UUID, key,
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
				out := wire.ToChat(res.Chat)
				out.SystemPrompt = p.SystemPrompt
				return res.Chat.ID, msgID, nil, http.StatusCreated, out, nil
			})
	}
	if err := s.deps.Machine.Do(r.Context(), create); err != nil {
		return err
	}
	out := wire.ToChat(res.Chat)
	out.SystemPrompt = p.SystemPrompt
	writeJSON(w, http.StatusCreated, out)
	return nil
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

func (s *Server) listChats(w http.ResponseWriter, r *http.Request, c *caller) error {
	q := r.URL.Query()
	for key, vals := range q {
		if slices.ContainsFunc(vals, func(v string) bool { return strings.ContainsRune(v, 0) }) {
			return validation(key, "must not contain the NUL character")
		}
	}
	if n := utf8.RuneCountInString(q.Get("q")); n > MaxQueryLen {
		return validation("q", fmt.Sprintf("q is %d characters; at most %d", n, MaxQueryLen))
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
		return validation("archived", fmt.Sprintf("%q must be true, false or all", a))
	}
	for _, l := range q["label"] {
		k, v, ok := strings.Cut(l, ":")
		if !ok || k == "" {
			return validation("label", fmt.Sprintf("%q must be key:value", l))
		}
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
		if len(p.Labels) > maxLabels {
			return validation("label", fmt.Sprintf("at most %d label filters", maxLabels))
		}
	}
	limit, err := queryInt(r, "limit", DefaultListLimit, 1, MaxListLimit)
	if err != nil {
		return err
	}
	p.Limit = int(limit)
	if raw := q.Get("project_id"); raw != "" {
		id, err := uuid.Parse(raw)
		if err != nil || id == uuid.Nil {
			return validation("project_id", fmt.Sprintf("%q is not a valid project id", raw))
		}
		p.ProjectID = uuid.NullUUID{UUID: id, Valid: true}
	}
	if raw := q.Get("after_id"); raw != "" {
		id, err := uuid.Parse(raw)
		if err != nil {
			return validation("after_id", fmt.Sprintf("%q is not a valid UUID", raw))
		}
		p.AfterID = uuid.NullUUID{UUID: id, Valid: id != uuid.Nil}
	}
	var (
		chats    []store.Chat
		snippets map[uuid.UUID]*sdk.SearchSnippet
		usages   map[uuid.UUID]*sdk.UsageTotals
	)
	err = s.deps.Store.ReadTx(r.Context(), func(tx store.Reader) error {
		var err error
		if chats, err = tx.ChatList(r.Context(), p); err != nil {
			return err
		}
		if usages, err = chatUsages(r.Context(), tx, chats); err != nil || p.Query == "" {
			return err
		}
		snippets, err = searchSnippets(r.Context(), tx, chats, p.Query)
		return err
	})
	if err != nil {
		return err
	}
	out := make([]sdk.Chat, 0, len(chats))
	for _, ch := range chats {
		c := wire.ToChat(ch)
		c.SearchSnippet = snippets[ch.ID]
		c.Usage = usages[ch.ID]
		out = append(out, c)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
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

func (s *Server) getChat(w http.ResponseWriter, r *http.Request, c *caller) error {
	id, err := pathUUID(r, "chat")
	if err != nil {
		return err
	}
	var out sdk.Chat
	err = s.deps.Store.ReadTx(r.Context(), func(tx store.Reader) error {
		chat, err := s.readChat(r.Context(), c, tx, id)
		if err != nil {
			return err
		}
		out = wire.ToChat(chat)
		if out.Usage, err = chatUsage(r.Context(), tx, chat.ID); err != nil {
			return err
		}
		if out.SystemPrompt, err = tx.ChatSystemPromptGet(r.Context(), chat.ID); err != nil {
			return err
		}
		family, err := tx.ChatDescendants(r.Context(), chat.Root())
		for _, f := range family {
			if f.ParentChatID.Valid && f.ParentChatID.UUID == id {
				out.Children = append(out.Children, wire.ToChat(f))
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) patchChat(w http.ResponseWriter, r *http.Request, c *caller) error {
	id, err := pathUUID(r, "chat")
	if err != nil {
		return err
	}
	var req struct {
		sdk.UpdateChatRequest
		// Raw, so absent (nil) and null ("null") stay apart.
		MCPServerIDs json.RawMessage `json:"mcp_server_ids"`
		ProjectID    json.RawMessage `json:"project_id"`
		SystemPrompt json.RawMessage `json:"system_prompt"`
	}
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	prompt, err := s.parseSystemPrompt(req.SystemPrompt)
	if err != nil {
		return err
	}
	project, err := parseProjectID(req.ProjectID)
	if err != nil {
		return err
	}
	if req.Title != nil {
		if err := checkTitle(*req.Title, false); err != nil {
			return err
		}
	}
	if req.Labels != nil {
		if err := checkLabels(*req.Labels); err != nil {
			return err
		}
	}
	if req.PinOrder != nil && *req.PinOrder < 0 {
		return validation("pin_order", "pin_order must be >= 0 (0 unpins)")
	}
	change := chatstate.MetadataChange{
		Archived: req.Archived, Labels: req.Labels, PinOrder: req.PinOrder, ToolApproval: req.ToolApproval,
		ProjectID: project, SystemPrompt: prompt,
	}
	if req.MCPServerIDs != nil {
		servers, err := s.parseMCPServerIDs(req.MCPServerIDs, c)
		if err != nil {
			return err
		}
		change.MCPServerIDs = store.Some(servers)
	}
	if req.Title != nil {
		title := strings.TrimSpace(*req.Title)
		change.Title = &title
	}
	_, err = s.transition(r, c, id, func(t *chatstate.Tx) error {
		_, err := t.UpdateMetadata(id, change)
		return err
	})
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// parseSystemPrompt reads PATCH /chats/{chat}'s system_prompt: absent
// leaves the prompt alone (nil); null and "" clear it; a string sets it.
func (s *Server) parseSystemPrompt(raw json.RawMessage) (*string, error) {
	if raw == nil {
		return nil, nil
	}
	var text *string
	if err := json.Unmarshal(raw, &text); err != nil {
		return nil, validation("system_prompt", "system_prompt must be a string or null")
	}
	if text == nil {
		text = new(string)
	}
	if err := s.checkCreateLimits(*text, 0); err != nil {
		return nil, err
	}
	return text, nil
}

func (s *Server) deleteChat(w http.ResponseWriter, r *http.Request, c *caller) error {
	id, err := pathUUID(r, "chat")
	if err != nil {
		return err
	}
	_, err = s.transition(r, c, id, func(t *chatstate.Tx) error {
		_, st, err := t.Peek(id)
		if err != nil {
			return err
		}
		if err := chatstate.MetadataAllowed(st, true); err != nil {
			return err
		}
		_, err = t.Delete(id)
		return err
	})
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
