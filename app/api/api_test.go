package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/chatstate/chatstatetest"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// The tests of this package drive the whole server (app.NewWithStore) over
// HTTP with the sdk client, on both stores. Chats are put into each
// execution state by chatstatetest.Seed through the app's state machine
// (the recipe every package's tests share), then checked over HTTP; the
// worker's transitions, which HTTP does not expose, have helpers below.

// fixture is one running server over an isolated store.
type fixture struct {
	ctx        context.Context
	app        *app.App
	srv        *httptest.Server
	adminToken string
	admin      *sdk.Client // the bootstrap admin
	alice      *sdk.Client // a user; the seeded chats are hers
	aliceToken string
	aliceID    uuid.UUID
	worker     uuid.UUID // the worker that owns seeded R, I and A chats
}

// setup starts a server over a new store of the kind newStore makes.
// configure, when given, adjusts the app config (e.g. QueueLimit).
func setup(t testing.TB, newStore func(t testing.TB) store.Store, configure ...func(*config.Config)) *fixture {
	t.Helper()
	return setupOn(t, newStore(t), configure...)
}

func setupOn(t testing.TB, s store.Store, configure ...func(*config.Config)) *fixture {
	t.Helper()
	ctx := context.Background()
	h := &fixture{ctx: ctx, adminToken: auth.NewToken(), worker: uuid.New()}
	cfg := config.Config{BootstrapToken: h.adminToken}
	for _, fn := range configure {
		fn(&cfg)
	}
	a, err := app.NewWithStore(ctx, cfg, s, io.Discard)
	require.NoError(t, err)
	// Cleanups run last-in first-out: the server stops before the app.
	t.Cleanup(func() { require.NoError(t, a.Close()) })
	h.app = a
	h.srv = httptest.NewServer(a.Handler())
	t.Cleanup(h.srv.Close)
	h.admin = h.client(h.adminToken)
	var u store.User
	h.alice, u, h.aliceToken = h.newUser(t, "alice")
	h.aliceID = u.ID
	return h
}

// client is an sdk client of this server authenticated with token.
func (h *fixture) client(token string) *sdk.Client {
	return &sdk.Client{BaseURL: h.srv.URL, Token: token, HTTP: h.srv.Client()}
}

// newUser creates a non-admin user with a token.
func (h *fixture) newUser(t testing.TB, name string) (*sdk.Client, store.User, string) {
	t.Helper()
	tok, u, err := auth.CreateToken(h.ctx, h.app.Internals().Store, name, false, "test", time.Now())
	require.NoError(t, err)
	require.False(t, u.Admin)
	return h.client(tok), u, tok
}

// --- raw HTTP, for bodies and headers the sdk client would not send ---

type rawResponse struct {
	status int
	header http.Header
	body   []byte
}

// raw sends body (a string, []byte, io.Reader or nil) to the API path
// (with its prefix) and returns the answer. headers are name, value pairs.
func (h *fixture) raw(t testing.TB, method, path string, body any, headers ...string) rawResponse {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	case io.Reader:
		rd = b
	default:
		t.Fatalf("raw: unsupported body type %T", body)
	}
	req, err := http.NewRequestWithContext(h.ctx, method, h.srv.URL+path, rd)
	require.NoError(t, err)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := h.srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return rawResponse{status: resp.StatusCode, header: resp.Header, body: raw}
}

// requireJSONError checks that r is the API's JSON error with this status
// and code, with a message for people.
func requireJSONError(t testing.TB, r rawResponse, status int, code string) sdk.Response {
	t.Helper()
	require.Equal(t, status, r.status, "body: %s", r.body)
	require.Contains(t, r.header.Get("Content-Type"), "application/json", "body: %s", r.body)
	var e sdk.Response
	require.NoError(t, json.Unmarshal(r.body, &e), "error body is not JSON: %s", r.body)
	require.Equal(t, code, e.Code, "body: %s", r.body)
	require.NotEmpty(t, e.Message, "body: %s", r.body)
	return e
}

// requireAPIError checks that err is the API's answer with this status and
// code, with a message for people.
func requireAPIError(t testing.TB, err error, status int, code string) *sdk.Error {
	t.Helper()
	var e *sdk.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, status, e.StatusCode, "%v", err)
	require.Equal(t, code, e.Code, "%v", err)
	require.NotEmpty(t, e.Message, "%v", err)
	return e
}

// --- observing a chat ---

// view is what GET /chats/{chat} and GET /chats/{chat}/messages show of a
// chat (read as admin), for landing-state and "changed nothing" checks.
type view struct {
	Found    bool
	Chat     sdk.Chat
	Messages sdk.ChatMessagesResponse
}

func (h *fixture) view(t testing.TB, id uuid.UUID) view {
	t.Helper()
	chat, err := h.admin.Chat(h.ctx, id)
	var e *sdk.Error
	if errors.As(err, &e) && e.StatusCode == http.StatusNotFound {
		_, err := h.admin.ChatMessages(h.ctx, id, sdk.MessagesOptions{})
		requireAPIError(t, err, http.StatusNotFound, sdk.CodeNotFound)
		return view{}
	}
	require.NoError(t, err)
	msgs, err := h.admin.ChatMessages(h.ctx, id, sdk.MessagesOptions{Limit: 500})
	require.NoError(t, err)
	return view{Found: true, Chat: chat, Messages: msgs}
}

// state classifies the chat as the spec's execution-state table does.
func (v view) state() chatstate.State {
	return chatstate.Classify(v.Found, store.ChatStatus(v.Chat.Status), v.Chat.Archived, len(v.Messages.QueuedMessages) > 0)
}

func (v view) queueIDs() []int64 {
	ids := []int64{}
	for _, q := range v.Messages.QueuedMessages {
		ids = append(ids, q.ID)
	}
	return ids
}

func (v view) messageIDs() []int64 {
	ids := []int64{}
	for _, m := range v.Messages.Messages {
		ids = append(ids, m.ID)
	}
	return ids
}

// toolResult finds the result part answering callID in the history.
func (v view) toolResult(callID string) (sdk.ChatMessagePart, bool) {
	for _, m := range v.Messages.Messages {
		for _, p := range m.Content {
			if p.Type == sdk.PartToolResult && p.ToolCallID == callID {
				return p, true
			}
		}
	}
	return sdk.ChatMessagePart{}, false
}

// requireState checks the chat's execution state through the API.
func (h *fixture) requireState(t testing.TB, id uuid.UUID, want chatstate.State) view {
	t.Helper()
	v := h.view(t, id)
	require.Equal(t, want, v.state(), "chat %s: status=%s archived=%v queue=%v", id, v.Chat.Status, v.Chat.Archived, v.queueIDs())
	return v
}

func textOf(parts []sdk.ChatMessagePart) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Type == sdk.PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// --- worker-side transitions (not exposed over HTTP) ---

func (h *fixture) machine(t testing.TB, fn func(tx *chatstate.Tx) error) {
	t.Helper()
	require.NoError(t, h.app.Internals().Machine.Do(h.ctx, fn))
}

func (h *fixture) acquire(t testing.TB, id uuid.UUID) {
	t.Helper()
	h.machine(t, func(tx *chatstate.Tx) error {
		_, err := tx.Acquire(id, h.worker, uuid.New())
		return err
	})
}

func (h *fixture) abandon(t testing.TB, id uuid.UUID) {
	t.Helper()
	h.machine(t, func(tx *chatstate.Tx) error {
		_, err := tx.Abandon(id)
		return err
	})
}

// commitAssistant commits a plain assistant reply as the worker would.
func (h *fixture) commitAssistant(t testing.TB, id uuid.UUID, text string) {
	t.Helper()
	content, err := chatstate.EncodeParts(sdk.Text(text))
	require.NoError(t, err)
	h.machine(t, func(tx *chatstate.Tx) error {
		_, err := tx.CommitStep(id, chatstate.Step{Messages: []store.MessageInsertParams{{Role: store.RoleAssistant, Content: content}}})
		return err
	})
}

func (h *fixture) finishTurn(t testing.TB, id uuid.UUID) {
	t.Helper()
	h.machine(t, func(tx *chatstate.Tx) error {
		_, err := tx.FinishTurn(id)
		return err
	})
}

func (h *fixture) finishError(t testing.TB, id uuid.UUID) {
	t.Helper()
	h.machine(t, func(tx *chatstate.Tx) error {
		_, err := tx.FinishError(id, sdk.ChatError{Message: "provider exploded", Kind: sdk.ChatErrorGeneric})
		return err
	})
}

// --- seeding execution states ---

// seeded is a chat of alice's in a known execution state.
type seeded struct {
	state   chatstate.State
	id      uuid.UUID
	label   string  // value of its "case" label, to find it in listings
	userMsg int64   // its first user message
	queued  []int64 // its queued messages, oldest first
	call    string  // its pending dynamic tool call (A0, A1)
}

// seedOpts vary a seeded chat.
type seedOpts struct {
	unowned bool // leave R, I and A chats without a worker
	noReply bool // no assistant message in history (nothing to compact)
}

// seed brings a new chat of alice's into st with chatstatetest.Seed and
// checks it through the API. Running, interrupting and requires_action
// chats are owned by h.worker, so single transitions apply (an unowned chat
// finishes interruptions at once); waiting and error chats are let go by
// their worker. Every seeded chat but N and noReply ones has a user message
// and an assistant reply in history.
func (h *fixture) seed(t testing.TB, st chatstate.State, opts ...seedOpts) seeded {
	t.Helper()
	var o seedOpts
	if len(opts) > 0 {
		o = opts[0]
	}
	s := seeded{state: st, label: uuid.NewString()}
	if st == chatstate.StateN {
		s.id = uuid.New()
		return s
	}
	turns := 1
	if o.noReply {
		turns = 0
	}
	idle := !st.Runnable() && st != chatstate.StateInvalid
	c := chatstatetest.Seed(t, h.app.Internals().Machine, h.app.Internals().Store, chatstatetest.Spec{
		State: st, Owner: h.aliceID, Worker: h.worker, Labels: map[string]string{"case": s.label},
		Turns: turns, Unowned: idle || o.unowned && st.Runnable(),
	})
	s.id, s.queued, s.call = c.ID, c.Queued, c.Call
	v := h.requireState(t, s.id, st)
	for _, m := range v.Messages.Messages {
		if m.Role == store.RoleUser {
			s.userMsg = m.ID
			break
		}
	}
	require.NotZero(t, s.userMsg)
	require.Equal(t, s.queued, nonNil(v.queueIDs()))
	return s
}

func nonNil(ids []int64) []int64 {
	if len(ids) == 0 {
		return nil
	}
	return ids
}

func ptr[T any](v T) *T { return &v }

// allStates is every execution state plus Invalid, N included.
var allStates = chatstate.AllStates

// activeStates are the unarchived valid states of an existing chat.
var activeStates = []chatstate.State{
	chatstate.StateW, chatstate.StateE0, chatstate.StateE1, chatstate.StateR0, chatstate.StateR1,
	chatstate.StateI0, chatstate.StateI1, chatstate.StateA0, chatstate.StateA1,
}
