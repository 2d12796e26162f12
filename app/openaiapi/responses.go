package openaiapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
)

// createRequest is the body of POST /v1/responses (openai-go
// responses.ResponseNewParams); fields chatd ignores are not decoded.
type createRequest struct {
	Model              string            `json:"model"`
	Input              json.RawMessage   `json:"input"`
	Instructions       *string           `json:"instructions"`
	Conversation       json.RawMessage   `json:"conversation"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Tools              []json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	Background         *bool             `json:"background"`
	Stream             *bool             `json:"stream"`
	Store              *bool             `json:"store"`
	MaxOutputTokens    *int64            `json:"max_output_tokens"`
	Metadata           map[string]string `json:"metadata"`
	Reasoning          *struct {
		Effort *string `json:"effort"`
	} `json:"reasoning"`
}

// input is a request's input, translated.
type input struct {
	text    []sdk.ChatMessagePart // the prompt (user messages)
	system  []string              // system and developer messages
	results []sdk.ToolResult      // function_call_output items
}

// idempotencyNamespace scopes Idempotency-Key values: the durable request
// id is a name-based UUID of the caller and the key, so two users' keys
// never meet.
var idempotencyNamespace = uuid.MustParse("6f0c1b7e-2f38-4c4e-9a43-0a1d7d1b0e51")

func (s *Server) createResponse(w http.ResponseWriter, r *http.Request, c *caller) error {
	var req createRequest
	if _, err := s.decode(w, r, &req); err != nil {
		return err
	}
	in, err := parseInput(req.Input)
	if err != nil {
		return err
	}
	tools, err := functionTools(req.Tools)
	if err != nil {
		return err
	}
	if req.Store != nil && !*req.Store {
		return badRequest("store", "store: false is not supported: chatd stores every response (it is what makes them durable); omit store or set it to true.")
	}
	if len(req.Conversation) > 0 && string(req.Conversation) != "null" && req.PreviousResponseID != nil && *req.PreviousResponseID != "" {
		return badRequest("previous_response_id", "Use either conversation or previous_response_id, not both.")
	}
	ctx := r.Context()
	model, err := s.resolveModel(ctx, c, req.Model)
	if err != nil {
		return err
	}
	echo := requestEcho{Instructions: req.Instructions, MaxOutputTokens: req.MaxOutputTokens, Tools: req.Tools, ToolChoice: req.ToolChoice}
	echo.Background = req.Background != nil && *req.Background
	if req.Reasoning != nil && req.Reasoning.Effort != nil {
		echo.Effort = *req.Reasoning.Effort
	}
	if req.PreviousResponseID != nil {
		echo.PreviousResponseID = *req.PreviousResponseID
	}
	var (
		chatID uuid.UUID
		anchor int64
	)
	requestID := uuid.New()
	if key := r.Header.Get("Idempotency-Key"); key != "" {
		requestID = uuid.NewSHA1(idempotencyNamespace, []byte(c.user.String()+"\x00"+key))
	}
	existing, hasChat, err := s.targetChat(ctx, c, req, requestID)
	if err != nil {
		return err
	}
	switch {
	case len(in.results) > 0:
		if !hasChat {
			return badRequest("input", "function_call_output items need previous_response_id or conversation: the chat whose function calls they answer.")
		}
		if len(in.text) > 0 || len(in.system) > 0 {
			return badRequest("input", "Send function_call_output items without other input: the chat continues from them; send the next message in a later response.")
		}
		chatID = existing
		if anchor, err = s.submitResults(ctx, c, chatID, in.results); err != nil {
			return err
		}
	case len(in.text) == 0:
		return badRequest("input", "input is empty: send a string or at least one user message.")
	case hasChat:
		if len(in.system) > 0 {
			return badRequest("input", "system and developer messages set a chat's instructions when it is created; this response continues an existing chat.")
		}
		chatID = existing
		send := sdk.CreateChatMessageRequest{Content: in.text, ModelConfigID: model, ReasoningEffort: echo.Effort, RequestID: &requestID}
		if anchor, err = s.send(ctx, c, chatID, requestID, send); err != nil {
			return err
		}
	default:
		system := strings.Join(in.system, "\n\n")
		if req.Instructions != nil && *req.Instructions != "" {
			system = strings.TrimSpace(*req.Instructions + "\n\n" + system)
		}
		create := sdk.CreateChatRequest{Content: in.text, SystemPrompt: system, Title: titleOf(in.text), ModelConfigID: model, ReasoningEffort: echo.Effort,
			Labels: req.Metadata, UnsafeDynamicTools: tools, RequestID: &requestID}
		if chatID, anchor, err = s.create(ctx, c, requestID, create); err != nil {
			return err
		}
	}
	echo.Conversation = len(req.Conversation) > 0
	id := responseID(chatID, anchor)
	switch {
	case req.Stream != nil && *req.Stream:
		return s.streamResponse(w, r, c, id, -1, echo)
	case echo.Background:
		t, err := s.loadTurn(ctx, c, id)
		if err != nil {
			return err
		}
		t.request = echo
		status, _ := t.status()
		writeJSON(w, http.StatusOK, t.response(status, t.items(status)))
		return nil
	}
	t, err := s.await(ctx, w, c, id)
	if err != nil {
		return err
	}
	t.request = echo
	status, _ := t.status()
	writeJSON(w, http.StatusOK, t.response(status, t.items(status)))
	return nil
}

// targetChat is the chat a request continues: its conversation's, or its
// previous response's. ok is false for a new chat.
func (s *Server) targetChat(ctx context.Context, c *caller, req createRequest, requestID uuid.UUID) (uuid.UUID, bool, error) {
	if raw := req.Conversation; len(raw) > 0 && string(raw) != "null" {
		var id string
		if json.Unmarshal(raw, &id) != nil {
			var obj struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(raw, &obj) != nil {
				return uuid.Nil, false, badRequest("conversation", "conversation must be a conversation id or {\"id\": ...}.")
			}
			id = obj.ID
		}
		chat, ok := parseConversationID(id)
		if !ok {
			return uuid.Nil, false, notFound("conversation", id)
		}
		if _, err := c.native.Chat(ctx, chat); err != nil {
			return uuid.Nil, false, notFoundIf(err, "conversation", id)
		}
		return chat, true, nil
	}
	if req.PreviousResponseID == nil || *req.PreviousResponseID == "" {
		return uuid.Nil, false, nil
	}
	prev := *req.PreviousResponseID
	chat, anchor, ok := parseResponseID(prev)
	if !ok {
		return uuid.Nil, false, &apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: "previous_response_not_found",
			param: "previous_response_id", msg: fmt.Sprintf("Previous response with id '%s' not found.", prev)}
	}
	notFound := &apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: "previous_response_not_found",
		param: "previous_response_id", msg: fmt.Sprintf("Previous response with id '%s' not found.", prev)}
	sdkChat, msgs, err := s.loadChat(ctx, c, chat)
	if err != nil {
		if isNotFound(err) {
			return uuid.Nil, false, notFound
		}
		return uuid.Nil, false, err
	}
	t, found := newTurn(sdkChat, msgs, anchor)
	if !found {
		return uuid.Nil, false, notFound
	}
	// A chat has one history: it continues from its latest response only
	// (a retry of the request that continued it is that request again).
	if b := t.boundary; b != nil && b.Role == "user" && (b.RequestID == nil || *b.RequestID != requestID) {
		return uuid.Nil, false, badRequest("previous_response_id", fmt.Sprintf(
			"Response '%s' is not the latest of its conversation: chatd keeps one history per chat and cannot branch from an earlier response; continue from the latest one (or use conversation: %s).",
			prev, conversationID(chat)))
	}
	return chat, true, nil
}

// create creates the chat with its first message under the durable
// request id and returns the chat and the message.
func (s *Server) create(ctx context.Context, c *caller, requestID uuid.UUID, req sdk.CreateChatRequest) (uuid.UUID, int64, error) {
	var resp sdk.CreateChatResponse
	err := c.native.Do(ctx, http.MethodPost, "/chats", req, &resp)
	chatID := resp.ID
	if err != nil {
		var ne *sdk.Error
		if !errors.As(err, &ne) || ne.Code != sdk.CodeInvocationInProgress || ne.ChatID == nil {
			return uuid.Nil, 0, err
		}
		chatID = *ne.ChatID // the same request, still running: the same response
	}
	anchor, err := s.messageOf(ctx, c, chatID, requestID)
	return chatID, anchor, err
}

// send sends the prompt to an existing chat under the durable request id.
// A chat still busy with another response is 409: chatd would queue the
// prompt, which the Responses API has no shape for.
func (s *Server) send(ctx context.Context, c *caller, chatID, requestID uuid.UUID, req sdk.CreateChatMessageRequest) (int64, error) {
	_, err := c.native.LookupRequest(ctx, requestID, sdk.LookupOptions{})
	var ne *sdk.Error
	fresh := errors.As(err, &ne) && ne.StatusCode == http.StatusNotFound
	if fresh {
		chat, err := c.native.Chat(ctx, chatID)
		if err != nil {
			return 0, err
		}
		switch chat.Status {
		case sdk.ChatStatusRunning, sdk.ChatStatusInterrupting:
			return 0, conflict("conversation_busy", "Another response is in progress in this conversation; wait for it (or cancel it) first.")
		case sdk.ChatStatusRequiresAction:
			return 0, conflict("function_call_output_required", "The previous response ended with function calls: send their function_call_output items first.")
		}
	}
	resp, err := c.native.SendMessage(ctx, chatID, req)
	if err != nil {
		if !errors.As(err, &ne) || ne.Code != sdk.CodeInvocationInProgress {
			return 0, err
		}
	} else if resp.Message == nil && resp.Queued {
		return 0, conflict("conversation_busy", "Another response is in progress in this conversation; this input waits in the chat's queue and runs after it.")
	}
	return s.messageOf(ctx, c, chatID, requestID)
}

// messageOf finds the message a durable request put into the chat.
func (s *Server) messageOf(ctx context.Context, c *caller, chatID, requestID uuid.UUID) (int64, error) {
	var before int64
	for {
		page, err := c.native.ChatMessages(ctx, chatID, sdk.MessagesOptions{BeforeID: before, Limit: 500})
		if err != nil {
			return 0, err
		}
		for i := len(page.Messages) - 1; i >= 0; i-- {
			if m := page.Messages[i]; m.RequestID != nil && *m.RequestID == requestID {
				return m.ID, nil
			}
		}
		if !page.HasMore || len(page.Messages) == 0 {
			return 0, conflict("conversation_busy", "The input was accepted but waits in the chat's queue behind another response.")
		}
		before = page.Messages[0].ID
	}
}

// submitResults delivers function_call_output items as the chat's tool
// results and returns the tool message they became. Results already
// delivered (a retry) return that message again.
func (s *Server) submitResults(ctx context.Context, c *caller, chatID uuid.UUID, results []sdk.ToolResult) (int64, error) {
	if id, ok, err := s.resultsMessage(ctx, c, chatID, results); err != nil || ok {
		return id, err
	}
	err := c.native.SubmitToolResults(ctx, chatID, sdk.SubmitToolResultsRequest{Results: results})
	if err != nil {
		// A concurrent retry may have delivered them first.
		if id, ok, lerr := s.resultsMessage(ctx, c, chatID, results); lerr == nil && ok {
			return id, nil
		}
		return 0, err
	}
	id, ok, err := s.resultsMessage(ctx, c, chatID, results)
	if err == nil && !ok {
		err = fmt.Errorf("tool results of chat %s are not in its history after they were accepted", chatID)
	}
	return id, err
}

func (s *Server) resultsMessage(ctx context.Context, c *caller, chatID uuid.UUID, results []sdk.ToolResult) (int64, bool, error) {
	page, err := c.native.ChatMessages(ctx, chatID, sdk.MessagesOptions{Limit: 50})
	if err != nil {
		return 0, false, err
	}
	for i := len(page.Messages) - 1; i >= 0; i-- {
		m := page.Messages[i]
		if m.Role != "tool" || !personal(m) {
			continue
		}
		if slices.ContainsFunc(m.Content, func(p sdk.ChatMessagePart) bool { return p.ToolCallID == results[0].ToolCallID }) {
			return m.ID, true, nil
		}
	}
	return 0, false, nil
}

// parseInput reads input: a string, or a list of items.
func parseInput(raw json.RawMessage) (input, error) {
	var in input
	if len(raw) == 0 || string(raw) == "null" {
		return in, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		in.text = sdk.Text(s)
		return in, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return in, badRequest("input", "input must be a string or a list of input items.")
	}
	for i, rawItem := range items {
		var it struct {
			Type    string          `json:"type"`
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
			CallID  string          `json:"call_id"`
			Output  json.RawMessage `json:"output"`
		}
		param := fmt.Sprintf("input[%d]", i)
		if err := json.Unmarshal(rawItem, &it); err != nil {
			return in, badRequest(param, "an input item must be an object.")
		}
		switch {
		case it.Type == "function_call_output":
			if it.CallID == "" {
				return in, badRequest(param+".call_id", "function_call_output needs call_id.")
			}
			out, err := outputText(it.Output)
			if err != nil {
				return in, badRequest(param+".output", err.Error()+".")
			}
			enc, _ := json.Marshal(out)
			in.results = append(in.results, sdk.ToolResult{ToolCallID: it.CallID, Output: enc})
		case it.Type == "message" || it.Type == "" && it.Role != "":
			text, err := contentText(it.Content)
			if err != nil {
				return in, badRequest(param+".content", err.Error()+".")
			}
			switch it.Role {
			case "user":
				in.text = append(in.text, sdk.Text(text)...)
			case "system", "developer":
				in.system = append(in.system, text)
			default:
				return in, badRequest(param+".role", fmt.Sprintf("role %q: chatd keeps the history itself; send only new user input (with previous_response_id or conversation to continue).", it.Role))
			}
		default:
			return in, badRequest(param+".type", fmt.Sprintf("input items of type %q are not supported: chatd keeps the history itself; send user messages and function_call_output items only.", it.Type))
		}
	}
	return in, nil
}

// contentText is a message's content (a string or input_text parts) as text.
func contentText(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("content must be a string or a list of content parts")
	}
	var texts []string
	for i, p := range parts {
		if p.Type != "input_text" && p.Type != "output_text" && p.Type != "text" {
			return "", fmt.Errorf("content[%d]: parts of type %q are not supported (only input_text)", i, p.Type)
		}
		texts = append(texts, p.Text)
	}
	return strings.Join(texts, "\n"), nil
}

// outputText is a function_call_output's output as a string.
func outputText(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	text, err := contentText(raw)
	if err != nil {
		return "", errors.New("output must be a string or a list of input_text parts")
	}
	return text, nil
}

// functionTools turns function tools into chatd dynamic (client) tools;
// any other tool type is refused, naming it.
func functionTools(tools []json.RawMessage) ([]sdk.DynamicTool, error) {
	var out []sdk.DynamicTool
	for i, raw := range tools {
		var t struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		param := fmt.Sprintf("tools[%d]", i)
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, badRequest(param, "a tool must be an object.")
		}
		if t.Type != "function" {
			return nil, badRequest(param+".type", fmt.Sprintf("tools of type %q are not supported: chatd runs its own server-side tools (MCP, built-in) and takes function tools as client tools.", t.Type))
		}
		if t.Name == "" {
			return nil, badRequest(param+".name", "a function tool needs a name.")
		}
		out = append(out, sdk.DynamicTool{Name: t.Name, Description: t.Description, InputSchema: t.Parameters})
	}
	return out, nil
}

func (s *Server) getResponse(w http.ResponseWriter, r *http.Request, c *caller) error {
	id := r.PathValue("id")
	q := r.URL.Query()
	// The npm client asks for a stream in the query; openai-go sends
	// {"stream": true} as the body of the GET.
	var body struct {
		Stream bool `json:"stream"`
	}
	if r.ContentLength != 0 {
		if _, err := s.decode(w, r, &body); err != nil {
			return err
		}
	}
	if v := q.Get("stream"); v == "true" || body.Stream {
		after := int64(-1)
		if v := q.Get("starting_after"); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < -1 {
				return badRequest("starting_after", "starting_after must be a sequence number (an integer >= -1).")
			}
			after = n
		}
		return s.streamResponse(w, r, c, id, after, requestEcho{})
	}
	t, err := s.loadTurn(r.Context(), c, id)
	if err != nil {
		return err
	}
	status, _ := t.status()
	writeJSON(w, http.StatusOK, t.response(status, t.items(status)))
	return nil
}

func (s *Server) cancelResponse(w http.ResponseWriter, r *http.Request, c *caller) error {
	id := r.PathValue("id")
	ctx := r.Context()
	t, err := s.loadTurn(ctx, c, id)
	if err != nil {
		return err
	}
	if status, _ := t.status(); !terminal(status) {
		if _, err := c.native.Interrupt(ctx, t.chat.ID); err != nil {
			return err
		}
		if t, err = s.await(ctx, w, c, id); err != nil {
			return err
		}
	}
	status, _ := t.status()
	writeJSON(w, http.StatusOK, t.response(status, t.items(status)))
	return nil
}

// deleteResponse deletes the response's chat when it is the chat's only
// response: chatd keeps a chat's history whole, so a response inside a
// longer conversation cannot be cut out of it.
func (s *Server) deleteResponse(w http.ResponseWriter, r *http.Request, c *caller) error {
	id := r.PathValue("id")
	ctx := r.Context()
	chat, anchor, ok := parseResponseID(id)
	if !ok {
		return notFound("response", id)
	}
	_, msgs, err := s.loadChat(ctx, c, chat)
	if err != nil {
		return notFoundIf(err, "response", id)
	}
	if _, found := newTurn(sdk.Chat{}, msgs, anchor); !found {
		return notFound("response", id)
	}
	for _, m := range msgs {
		if personal(m) && m.ID != anchor {
			return conflict("response_in_conversation", "This response is one of several in its conversation, and chatd keeps a conversation's history whole; delete the conversation ("+conversationID(chat)+") instead.")
		}
	}
	if err := c.native.DeleteChat(ctx, chat); err != nil {
		return notFoundIf(err, "response", id)
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "response", "deleted": true})
	return nil
}

func (s *Server) inputItems(w http.ResponseWriter, r *http.Request, c *caller) error {
	t, err := s.loadTurn(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeList(w, t.inputItems())
	return nil
}

func writeList(w http.ResponseWriter, data []map[string]any) {
	if data == nil {
		data = []map[string]any{}
	}
	list := map[string]any{"object": "list", "data": data, "has_more": false, "first_id": nil, "last_id": nil}
	if len(data) > 0 {
		list["first_id"], list["last_id"] = data[0]["id"], data[len(data)-1]["id"]
	}
	writeJSON(w, http.StatusOK, list)
}

// loadChat reads a chat and its whole people-visible history.
func (s *Server) loadChat(ctx context.Context, c *caller, chatID uuid.UUID) (sdk.Chat, []sdk.ChatMessage, error) {
	chat, err := c.native.Chat(ctx, chatID)
	if err != nil {
		return chat, nil, err
	}
	var msgs []sdk.ChatMessage
	var after int64
	for {
		page, err := c.native.ChatMessages(ctx, chatID, sdk.MessagesOptions{AfterID: after, Limit: 500})
		if err != nil {
			return chat, nil, err
		}
		msgs = append(msgs, page.Messages...)
		if !page.HasMore || len(page.Messages) == 0 {
			return chat, msgs, nil
		}
		after = page.Messages[len(page.Messages)-1].ID
	}
}

// loadTurn reads a response's turn from the native API.
func (s *Server) loadTurn(ctx context.Context, c *caller, id string) (turn, error) {
	chatID, anchor, ok := parseResponseID(id)
	if !ok {
		return turn{}, notFound("response", id)
	}
	chat, msgs, err := s.loadChat(ctx, c, chatID)
	if err != nil {
		return turn{}, notFoundIf(err, "response", id)
	}
	t, found := newTurn(chat, msgs, anchor)
	if !found {
		return turn{}, notFound("response", id)
	}
	if err := s.complete(ctx, c, &t, msgs); err != nil {
		return turn{}, err
	}
	return t, nil
}

// complete adds what the turn's messages do not say: the model's name
// and, once the response may have ended, its request's outcome.
func (s *Server) complete(ctx context.Context, c *caller, t *turn, msgs []sdk.ChatMessage) error {
	if t.model == "" {
		t.model = s.modelName(ctx, c, *t)
	}
	if t.outcome != nil {
		return nil
	}
	if t.boundary == nil && (t.chat.Status == sdk.ChatStatusRunning || t.chat.Status == sdk.ChatStatusInterrupting || t.chat.Status == sdk.ChatStatusRequiresAction) {
		return nil
	}
	if t.boundary != nil && t.boundary.Role == "tool" {
		return nil
	}
	rid := requestOf(msgs, t.anchor.ID)
	if rid == nil {
		return nil
	}
	res, err := c.native.LookupRequest(ctx, *rid, sdk.LookupOptions{})
	if err != nil {
		var ne *sdk.Error
		if errors.As(err, &ne) && ne.StatusCode < 500 {
			return nil // not finished (or not the caller's to read): the chat's status decides
		}
		return err
	}
	t.outcome = res.Outcome
	return nil
}

func isNotFound(err error) bool {
	var ne *sdk.Error
	return errors.As(err, &ne) && ne.StatusCode == http.StatusNotFound
}

// notFoundIf answers a native 404 as the OpenAI not-found of what.
func notFoundIf(err error, what, id string) error {
	if isNotFound(err) {
		return notFound(what, id)
	}
	return err
}

// titleOf is a new chat's title: the start of its first input. A chat the
// API creates gets no generated title, so a response costs the model
// calls it makes and no other.
func titleOf(parts []sdk.ChatMessagePart) string {
	for _, p := range parts {
		text := strings.Join(strings.Fields(p.Text), " ")
		if text == "" {
			continue
		}
		if r := []rune(text); len(r) > 60 {
			text = strings.TrimSpace(string(r[:59])) + "…"
		}
		return text
	}
	return "Untitled"
}
