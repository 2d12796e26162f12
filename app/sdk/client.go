package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// Error is a non-2xx answer of the API.
type Error struct {
	StatusCode int
	Response
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%d %s: %s", e.StatusCode, e.Code, e.Message)
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	return msg
}

// Client talks to a chatd server.
type Client struct {
	// BaseURL is the server, e.g. http://127.0.0.1:8080.
	BaseURL string
	// Token is sent as Authorization: Bearer.
	Token string
	// HTTP is the client to use; http.DefaultClient when nil.
	HTTP *http.Client
	// Prefix is the API prefix; "/api/v2" when empty.
	Prefix string
}

// New returns a client for baseURL authenticated with token.
func New(baseURL, token string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), Token: token}
}

// Do sends a request with a JSON body (nil for none) and decodes a JSON
// answer into out (nil to discard). Non-2xx answers become *Error.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(raw)
	}
	prefix := c.Prefix
	if prefix == "" {
		prefix = "/api/v2"
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+prefix+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := &Error{StatusCode: resp.StatusCode}
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if json.Unmarshal(raw, &e.Response) != nil || e.Message == "" {
			e.Message = strings.TrimSpace(string(raw))
		}
		return e
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decode %s %s: %w", method, path, err)
	}
	return nil
}

// CreateChat creates a chat (POST /chats).
func (c *Client) CreateChat(ctx context.Context, req CreateChatRequest) (Chat, error) {
	var out Chat
	return out, c.Do(ctx, http.MethodPost, "/chats", req, &out)
}

// ListChatsOptions filter GET /chats.
type ListChatsOptions struct {
	Query    string
	Archived string // "", "true", "false" or "all"
	Labels   map[string]string
	Limit    int
	AfterID  uuid.UUID
}

// ListChats lists chats (GET /chats).
func (c *Client) ListChats(ctx context.Context, opts ListChatsOptions) ([]Chat, error) {
	q := url.Values{}
	if opts.Query != "" {
		q.Set("q", opts.Query)
	}
	if opts.Archived != "" {
		q.Set("archived", opts.Archived)
	}
	for k, v := range opts.Labels {
		q.Add("label", k+":"+v)
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.AfterID != uuid.Nil {
		q.Set("after_id", opts.AfterID.String())
	}
	path := "/chats"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out []Chat
	return out, c.Do(ctx, http.MethodGet, path, nil, &out)
}

// Chat reads one chat (GET /chats/{chat}).
func (c *Client) Chat(ctx context.Context, id uuid.UUID) (Chat, error) {
	var out Chat
	return out, c.Do(ctx, http.MethodGet, "/chats/"+id.String(), nil, &out)
}

// UpdateChat changes title, archived, pin order or labels (PATCH /chats/{chat}).
func (c *Client) UpdateChat(ctx context.Context, id uuid.UUID, req UpdateChatRequest) error {
	return c.Do(ctx, http.MethodPatch, "/chats/"+id.String(), req, nil)
}

// DeleteChat deletes a chat and its descendants (DELETE /chats/{chat}).
func (c *Client) DeleteChat(ctx context.Context, id uuid.UUID) error {
	return c.Do(ctx, http.MethodDelete, "/chats/"+id.String(), nil, nil)
}

// MessagesOptions page GET /chats/{chat}/messages.
type MessagesOptions struct {
	BeforeID int64
	AfterID  int64
	Limit    int
}

// ChatMessages reads a page of history and the queue.
func (c *Client) ChatMessages(ctx context.Context, id uuid.UUID, opts MessagesOptions) (ChatMessagesResponse, error) {
	q := url.Values{}
	if opts.BeforeID > 0 {
		q.Set("before_id", strconv.FormatInt(opts.BeforeID, 10))
	}
	if opts.AfterID > 0 {
		q.Set("after_id", strconv.FormatInt(opts.AfterID, 10))
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	path := "/chats/" + id.String() + "/messages"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out ChatMessagesResponse
	return out, c.Do(ctx, http.MethodGet, path, nil, &out)
}

// SendMessage sends or queues a message (POST /chats/{chat}/messages).
func (c *Client) SendMessage(ctx context.Context, id uuid.UUID, req CreateChatMessageRequest) (CreateChatMessageResponse, error) {
	var out CreateChatMessageResponse
	return out, c.Do(ctx, http.MethodPost, "/chats/"+id.String()+"/messages", req, &out)
}

// EditMessage replaces a user message and reruns from it.
func (c *Client) EditMessage(ctx context.Context, id uuid.UUID, messageID int64, req EditChatMessageRequest) (EditChatMessageResponse, error) {
	var out EditChatMessageResponse
	return out, c.Do(ctx, http.MethodPatch, fmt.Sprintf("/chats/%s/messages/%d", id, messageID), req, &out)
}

// DeleteQueuedMessage removes a queued message.
func (c *Client) DeleteQueuedMessage(ctx context.Context, id uuid.UUID, queuedID int64) error {
	return c.Do(ctx, http.MethodDelete, fmt.Sprintf("/chats/%s/queue/%d", id, queuedID), nil, nil)
}

// PromoteQueuedMessage makes a queued message the next one to run.
func (c *Client) PromoteQueuedMessage(ctx context.Context, id uuid.UUID, queuedID int64) error {
	return c.Do(ctx, http.MethodPost, fmt.Sprintf("/chats/%s/queue/%d/promote", id, queuedID), nil, nil)
}

func (c *Client) chatAction(ctx context.Context, id uuid.UUID, action string) (Chat, error) {
	var out Chat
	return out, c.Do(ctx, http.MethodPost, "/chats/"+id.String()+"/"+action, nil, &out)
}

// Interrupt stops active work (POST /chats/{chat}/interrupt).
func (c *Client) Interrupt(ctx context.Context, id uuid.UUID) (Chat, error) {
	return c.chatAction(ctx, id, "interrupt")
}

// Compact requests a manual compaction (POST /chats/{chat}/compact).
func (c *Client) Compact(ctx context.Context, id uuid.UUID) (Chat, error) {
	return c.chatAction(ctx, id, "compact")
}

// Clear resets the model's context (POST /chats/{chat}/clear).
func (c *Client) Clear(ctx context.Context, id uuid.UUID) (Chat, error) {
	return c.chatAction(ctx, id, "clear")
}

// ReconcileInvalid repairs a chat in an invalid state.
func (c *Client) ReconcileInvalid(ctx context.Context, id uuid.UUID) (Chat, error) {
	return c.chatAction(ctx, id, "reconcile-invalid")
}

// SubmitToolResults answers pending dynamic tool calls.
func (c *Client) SubmitToolResults(ctx context.Context, id uuid.UUID, req SubmitToolResultsRequest) error {
	return c.Do(ctx, http.MethodPost, "/chats/"+id.String()+"/tool-results", req, nil)
}

// Models lists the configured models (GET /chats/models).
func (c *Client) Models(ctx context.Context) (ChatModelsResponse, error) {
	var out ChatModelsResponse
	return out, c.Do(ctx, http.MethodGet, "/chats/models", nil, &out)
}

// MCPServers lists the configured MCP servers with their state and tools
// (GET /chats/mcp-servers).
func (c *Client) MCPServers(ctx context.Context) ([]MCPServer, error) {
	var out []MCPServer
	return out, c.Do(ctx, http.MethodGet, "/chats/mcp-servers", nil, &out)
}

// Me returns the authenticated user.
func (c *Client) Me(ctx context.Context) (User, error) {
	var out User
	return out, c.Do(ctx, http.MethodGet, "/users/me", nil, &out)
}

// Text is a one-part text content, for convenience.
func Text(s string) []ChatMessagePart {
	return []ChatMessagePart{{Type: PartText, Text: s}}
}
