package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

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
	// ProjectID lists only the chats in this project.
	ProjectID uuid.UUID
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
	if opts.ProjectID != uuid.Nil {
		q.Set("project_id", opts.ProjectID.String())
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

// SubmitToolApprovals approves or denies tool calls awaiting a person's
// approval (POST /chats/{chat}/tool-approvals).
func (c *Client) SubmitToolApprovals(ctx context.Context, id uuid.UUID, req SubmitToolApprovalsRequest) error {
	return c.Do(ctx, http.MethodPost, "/chats/"+id.String()+"/tool-approvals", req, nil)
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

// LookupOptions are the optional hashes of GET /requests/{id}: each one
// given must match the claim (else INVOCATION_CONFLICT).
type LookupOptions struct {
	// RequestSHA256 is the hash of the whole request (RequestBinding.SHA256).
	RequestSHA256 string
	// ContentSHA256 is the older text-only hash (ContentSHA256).
	ContentSHA256 string
}

// RequestResult is a durable request's saved answer, as a lookup or a
// replay returns it.
type RequestResult struct {
	RequestID uuid.UUID       `json:"request_id"`
	AuditID   uuid.UUID       `json:"audit_id"`
	Replayed  bool            `json:"replayed"`
	Outcome   *RequestOutcome `json:"outcome,omitempty"`
	// Messages are the turn's messages: the request's message and its replies.
	Messages []ChatMessage `json:"messages"`
	// Body is the whole answer: the original admission answer
	// (CreateChatResponse or CreateChatMessageResponse) with the fields
	// above; decode it into the endpoint's own type.
	Body json.RawMessage `json:"-"`
}

// LookupRequest looks a durable request up without creating a claim or
// starting work (GET /requests/{id}). Its errors are *Error: notably
// INVOCATION_NOT_FOUND (nothing was admitted under id: sending it again
// is safe), INVOCATION_IN_PROGRESS, INVOCATION_UNRESOLVED,
// INVOCATION_RECONCILED and INVOCATION_CONFLICT.
func (c *Client) LookupRequest(ctx context.Context, id uuid.UUID, opts LookupOptions) (RequestResult, error) {
	q := url.Values{}
	if opts.RequestSHA256 != "" {
		q.Set("request_sha256", opts.RequestSHA256)
	}
	if opts.ContentSHA256 != "" {
		q.Set("content_sha256", opts.ContentSHA256)
	}
	path := "/requests/" + id.String()
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var raw json.RawMessage
	if err := c.Do(ctx, http.MethodGet, path, nil, &raw); err != nil {
		return RequestResult{}, err
	}
	var out RequestResult
	if err := json.Unmarshal(raw, &out); err != nil {
		return RequestResult{}, fmt.Errorf("decode request %s: %w", id, err)
	}
	out.Body = raw
	return out, nil
}

// RetryPolicy says how SendWithID and CreateChatWithID retry a durable
// request whose answer was lost. The zero value makes 4 attempts with a
// backoff from 250 ms doubling to 4 s.
type RetryPolicy struct {
	// Attempts is the number of sends, at least 1 (0: 4).
	Attempts int
	// Backoff is the wait before attempt n (n >= 1, the second send);
	// nil: 250 ms doubling, at most 4 s.
	Backoff func(n int) time.Duration
}

func (p RetryPolicy) attempts() int {
	if p.Attempts <= 0 {
		return 4
	}
	return p.Attempts
}

func (p RetryPolicy) wait(ctx context.Context, n int) error {
	d := 250 * time.Millisecond << min(n-1, 4) // 250 ms .. 4 s
	if p.Backoff != nil {
		d = p.Backoff(n)
	}
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Retryable reports whether err may have lost the answer of a request the
// server could have admitted, so that the outcome must be looked up before
// sending again: a transport error, a 5xx answer (AUDIT_UNAVAILABLE,
// STORAGE_FULL, a proxy's 502) or RATE_LIMITED. Any other *Error is the
// server's definite answer.
func Retryable(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
	}
	return e.StatusCode >= 500 || e.Code == CodeRateLimited
}

// SendWithID sends req to the chat as the durable request id, and on a
// lost answer (Retryable) looks the request up and sends it again with the
// SAME id only when nothing was admitted (INVOCATION_NOT_FOUND), so the
// message is admitted at most once. A request that was admitted answers
// with its saved answer (Replayed set) once its turn has ended; while it
// runs or waits in the queue the error is *Error INVOCATION_IN_PROGRESS
// (its ChatID, RequestID and AuditID are set): follow the chat's stream or
// call LookupRequest later, never send it under a new id.
func (c *Client) SendWithID(ctx context.Context, chatID, id uuid.UUID, req CreateChatMessageRequest, p RetryPolicy) (CreateChatMessageResponse, error) {
	req.RequestID = &id
	b, err := SendMessageBinding(chatID, req)
	if err != nil {
		return CreateChatMessageResponse{}, err
	}
	var out CreateChatMessageResponse
	err = c.durable(ctx, id, b, p, func() error {
		out = CreateChatMessageResponse{}
		return c.Do(ctx, http.MethodPost, "/chats/"+chatID.String()+"/messages", req, &out)
	}, &out)
	return out, err
}

// CreateChatWithID creates a chat as the durable request id, retrying as
// SendWithID does.
func (c *Client) CreateChatWithID(ctx context.Context, id uuid.UUID, req CreateChatRequest, p RetryPolicy) (CreateChatResponse, error) {
	req.RequestID = &id
	b, err := CreateChatBinding(req)
	if err != nil {
		return CreateChatResponse{}, err
	}
	var out CreateChatResponse
	err = c.durable(ctx, id, b, p, func() error {
		out = CreateChatResponse{}
		return c.Do(ctx, http.MethodPost, "/chats", req, &out)
	}, &out)
	return out, err
}

// durable runs send until it answers definitely, looking the request up
// after every lost answer; a saved answer found by the lookup is decoded
// into out.
func (c *Client) durable(ctx context.Context, id uuid.UUID, b RequestBinding, p RetryPolicy, send func() error, out any) error {
	hash, err := b.SHA256()
	if err != nil {
		return err
	}
	var last error
	for n := range p.attempts() {
		if n > 0 {
			if err := p.wait(ctx, n); err != nil {
				return errors.Join(last, err)
			}
			res, err := c.LookupRequest(ctx, id, LookupOptions{RequestSHA256: hash})
			var e *Error
			switch {
			case err == nil:
				if err := json.Unmarshal(res.Body, out); err != nil {
					return fmt.Errorf("decode request %s: %w", id, err)
				}
				return nil
			case errors.As(err, &e) && e.Code == CodeInvocationNotFound:
				// Nothing was admitted: sending again under id is safe.
			case Retryable(err):
				last = err
				continue // the lookup's answer was lost too
			default:
				return err // in progress, unresolved, reconciled, conflict
			}
		}
		last = send()
		if !Retryable(last) {
			return last
		}
	}
	return last
}
