package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/chatstate/chatstatetest"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// Short names for the states, so the tables below read like the spec.
const (
	N       = chatstate.StateN
	W       = chatstate.StateW
	E0      = chatstate.StateE0
	E1      = chatstate.StateE1
	R0      = chatstate.StateR0
	R1      = chatstate.StateR1
	I0      = chatstate.StateI0
	I1      = chatstate.StateI1
	A0      = chatstate.StateA0
	A1      = chatstate.StateA1
	XW      = chatstate.StateXW
	XE0     = chatstate.StateXE0
	XE1     = chatstate.StateXE1
	Invalid = chatstate.StateInvalid
)

// checkFunc inspects an accepted call: the seeded chat, the chat before and
// after (GET /chats/{chat} and GET /chats/{chat}/messages) and the body.
type checkFunc func(t *testing.T, h *fixture, s seeded, before, after view, body []byte)

// rejection is the expected answer of a refused call.
type rejection struct {
	status int
	code   string
}

// scenario is one endpoint call, with the input states it accepts and
// where each lands (spec: "HTTP endpoints"). Every other state is refused.
type scenario struct {
	name   string
	method string
	// path and body may hold {chat}, {message} (the first user message),
	// {queued} (the queue head, or an id that does not exist), {call} (the
	// pending tool call) and {label} (the seeded chat's "case" label).
	path    string
	body    string
	tr      chatstate.Transition // the transition a refusal must name
	status  int                  // on success
	allowed map[chatstate.State]chatstate.State
	reject  map[chatstate.State]rejection // exceptions to defaultRejection
	// readOnly calls never change the chat; noopWhenSame calls change
	// nothing when the chat lands where it started (e.g. archiving an
	// archived chat).
	readOnly     bool
	noopWhenSame bool
	// bumps: an accepted call advances the chat's snapshot_version.
	bumps       bool
	check       checkFunc
	afterReject func(t *testing.T, h *fixture, s seeded)
}

// defaultRejection is API.md's error table: an absent chat is 404, an
// invalid one 409 INVALID_STATE, an archived one 400 CHAT_ARCHIVED, and a
// transition the state machine refuses 409 TRANSITION_NOT_ALLOWED.
func (sc scenario) rejection(st chatstate.State) rejection {
	if r, ok := sc.reject[st]; ok {
		return r
	}
	switch {
	case st == N:
		return rejection{http.StatusNotFound, sdk.CodeNotFound}
	case st == Invalid:
		return rejection{http.StatusConflict, sdk.CodeInvalidState}
	case st.Archived():
		return rejection{http.StatusBadRequest, sdk.CodeChatArchived}
	}
	return rejection{http.StatusConflict, sdk.CodeTransitionNotAllowed}
}

// same maps each state to itself.
func same(states ...chatstate.State) map[chatstate.State]chatstate.State {
	m := map[chatstate.State]chatstate.State{}
	for _, st := range states {
		m[st] = st
	}
	return m
}

// with adds from -> to pairs (alternating) to m.
func with(m map[chatstate.State]chatstate.State, pairs ...chatstate.State) map[chatstate.State]chatstate.State {
	out := map[chatstate.State]chatstate.State{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[pairs[i]] = pairs[i+1]
	}
	return out
}

func lands(pairs ...chatstate.State) map[chatstate.State]chatstate.State {
	return with(nil, pairs...)
}

// existing is every state of a chat that exists.
var existing = slices.DeleteFunc(slices.Clone(allStates), func(st chatstate.State) bool { return st == N })

// noSuchQueued is a queued-message id no chat has.
const noSuchQueued = 987654321

func (s seeded) expand(x string) string {
	queued := int64(noSuchQueued)
	if len(s.queued) > 0 {
		queued = s.queued[0]
	}
	call := s.call
	if call == "" {
		call = "call-none"
	}
	message := s.userMsg
	if message == 0 {
		message = 1
	}
	return strings.NewReplacer(
		"{chat}", s.id.String(), "{message}", strconv.FormatInt(message, 10),
		"{queued}", strconv.FormatInt(queued, 10), "{call}", call, "{label}", s.label,
	).Replace(x)
}

const (
	sendQueueBody     = `{"content":[{"type":"text","text":"next"}],"busy_behavior":"queue"}`
	sendInterruptBody = `{"content":[{"type":"text","text":"next"}],"busy_behavior":"interrupt"}`
	editBody          = `{"content":[{"type":"text","text":"edited"}]}`
	toolResultsBody   = `{"results":[{"tool_call_id":"{call}","output":{"answer":42},"is_error":false}]}`
)

// scenarios is every endpoint of API.md's table but the streams and
// GET /requests, with the input states the spec lets it accept.
var scenarios = []scenario{
	{
		name: "create_child", method: "POST", path: "/chats", tr: chatstate.Create, status: http.StatusCreated,
		body: `{"content":[{"type":"text","text":"sub task"}],"parent_chat_id":"{chat}","labels":{"child":"{label}"}}`,
		// A child joins an unarchived family; the parent does not move.
		allowed: same(activeStates...),
		reject: map[chatstate.State]rejection{
			// The parent is named in the body: an absent one is a bad field.
			N: {http.StatusBadRequest, sdk.CodeValidation},
		},
		check: checkCreateChild, afterReject: requireNoChild,
	},
	{
		name: "list_all", method: "GET", path: "/chats?archived=all&label=case:{label}", status: http.StatusOK,
		allowed: same(allStates...), readOnly: true, check: checkListed(true),
	},
	{
		name: "list_default", method: "GET", path: "/chats?label=case:{label}", status: http.StatusOK,
		allowed: same(allStates...), readOnly: true, check: checkListed(false),
	},
	{
		name: "get", method: "GET", path: "/chats/{chat}", status: http.StatusOK,
		allowed: same(existing...), readOnly: true, check: checkGetChat,
	},
	{
		name: "archive", method: "PATCH", path: "/chats/{chat}", body: `{"archived":true}`,
		tr: chatstate.SetArchivedTrue, status: http.StatusNoContent,
		// Archiving an archived chat changes nothing and takes no transition.
		allowed:      lands(W, XW, E0, XE0, E1, XE1, XW, XW, XE0, XE0, XE1, XE1),
		noopWhenSame: true, bumps: true, check: checkArchived(true),
	},
	{
		name: "unarchive", method: "PATCH", path: "/chats/{chat}", body: `{"archived":false}`,
		tr: chatstate.SetArchivedFalse, status: http.StatusNoContent,
		// Unarchiving an unarchived chat changes nothing.
		allowed:      with(same(activeStates...), XW, W, XE0, E0, XE1, E1),
		noopWhenSame: true, bumps: true, check: checkArchived(false),
	},
	{
		name: "rename", method: "PATCH", path: "/chats/{chat}", body: `{"title":"Renamed by user"}`, status: http.StatusNoContent,
		allowed: same(activeStates...), check: checkRenamed,
	},
	{
		// A system prompt is metadata: set in every state but archived.
		name: "system_prompt", method: "PATCH", path: "/chats/{chat}", body: `{"system_prompt":"Answer like a pirate."}`,
		status: http.StatusNoContent, allowed: same(activeStates...), check: checkSystemPrompt,
	},
	{
		name: "pin_and_label", method: "PATCH", path: "/chats/{chat}", status: http.StatusNoContent,
		body:    `{"pin_order":3,"labels":{"case":"{label}","team":"blue"}}`,
		allowed: same(activeStates...), check: checkPinned,
	},
	{
		name: "delete", method: "DELETE", path: "/chats/{chat}", status: http.StatusNoContent,
		allowed: lands(W, N, E0, N, E1, N, R0, N, R1, N, I0, N, I1, N, A0, N, A1, N),
	},
	{
		name: "messages", method: "GET", path: "/chats/{chat}/messages", status: http.StatusOK,
		allowed: same(existing...), readOnly: true, check: checkMessages,
	},
	{
		name: "send_queue", method: "POST", path: "/chats/{chat}/messages", body: sendQueueBody,
		tr: chatstate.SendMessageQueue, status: http.StatusOK,
		allowed: lands(W, R0, E0, R0, E1, R1, R0, R1, R1, R1, I0, I1, I1, I1, A0, A1, A1, A1),
		bumps:   true, check: checkSend(false),
	},
	{
		name: "send_interrupt", method: "POST", path: "/chats/{chat}/messages", body: sendInterruptBody,
		tr: chatstate.SendMessageInterrupt, status: http.StatusOK,
		allowed: lands(W, R0, E0, R0, E1, R1, R0, I1, R1, I1, I0, I1, I1, I1, A0, R1, A1, R1),
		bumps:   true, check: checkSend(true),
	},
	{
		name: "edit", method: "PATCH", path: "/chats/{chat}/messages/{message}", body: editBody,
		tr: chatstate.EditMessage, status: http.StatusOK,
		allowed: lands(W, R0, E0, R0, E1, R0, R0, R0, R1, R0, I0, R0, I1, R0, A0, R0, A1, R0),
		bumps:   true, check: checkEdit,
	},
	{
		name: "delete_queued", method: "DELETE", path: "/chats/{chat}/queue/{queued}",
		tr: chatstate.DeleteQueuedMessage, status: http.StatusNoContent,
		allowed: lands(E1, E0, R1, R0, I1, I0, A1, A0),
		bumps:   true, check: checkDeletedQueued,
	},
	{
		name: "promote", method: "POST", path: "/chats/{chat}/queue/{queued}/promote",
		tr: chatstate.PromoteQueuedMessage, status: http.StatusAccepted,
		allowed: lands(E1, R0, R1, I1, I1, I1, A1, R0),
		bumps:   true, check: checkPromoted,
	},
	{
		name: "interrupt", method: "POST", path: "/chats/{chat}/interrupt",
		tr: chatstate.Interrupt, status: http.StatusOK,
		// Owned I0 and I1 are refused: their runner finishes the interruption.
		allowed: lands(R0, I0, R1, I1, A0, R0, A1, R1),
		bumps:   true, check: checkInterrupted,
	},
	{
		name: "tool_results", method: "POST", path: "/chats/{chat}/tool-results", body: toolResultsBody,
		tr: chatstate.CompleteRequiresAction, status: http.StatusNoContent,
		allowed: lands(A0, R0, A1, R1),
		bumps:   true, check: checkToolResults,
	},
	{
		name: "compact", method: "POST", path: "/chats/{chat}/compact",
		tr: chatstate.RequestCompaction, status: http.StatusOK,
		allowed: lands(W, R0, E0, R0, E1, R1),
		bumps:   true, check: checkCompacted,
	},
	{
		name: "clear", method: "POST", path: "/chats/{chat}/clear",
		tr: chatstate.ClearContext, status: http.StatusOK,
		allowed: lands(W, W, E0, W),
		bumps:   true, check: checkCleared,
	},
	{
		name: "reconcile_invalid", method: "POST", path: "/chats/{chat}/reconcile-invalid",
		tr: chatstate.ReconcileInvalidState, status: http.StatusOK,
		allowed: lands(Invalid, E0),
		bumps:   true, check: checkReconciled,
	},
}

// TestEndpointsInEveryState calls every endpoint in every execution state.
// Accepted calls land where the spec says and answer the documented shape;
// refused calls answer API.md's error and change nothing. A refused or
// read-only call reuses one chat per state (it must not change); every
// accepted mutation gets a fresh chat.
func TestEndpointsInEveryState(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		for _, st := range allStates {
			t.Run(string(st), func(t *testing.T) {
				t.Parallel()
				shared := h.seed(t, st)
				for _, sc := range scenarios {
					_, allowed := sc.allowed[st]
					s, fresh := shared, allowed && !sc.readOnly
					if fresh {
						s = h.seed(t, st)
					}
					if fresh || st == N {
						t.Run(sc.name, func(t *testing.T) { h.runScenario(t, sc, s) })
						continue
					}
					before := h.view(t, s.id)
					t.Run(sc.name, func(t *testing.T) { h.runScenario(t, sc, s) })
					// A buggy refusal may have changed the shared chat (the
					// subtest failed already); start the next one clean.
					if !viewsEqual(before, h.view(t, s.id)) {
						shared = h.seed(t, st)
					}
				}
			})
		}
	})
}

func viewsEqual(a, b view) bool {
	ra, _ := json.Marshal(a)
	rb, _ := json.Marshal(b)
	return string(ra) == string(rb)
}

func (h *fixture) runScenario(t *testing.T, sc scenario, s seeded) {
	t.Helper()
	before := h.view(t, s.id)
	var body any
	if sc.body != "" {
		body = s.expand(sc.body)
	}
	r := h.raw(t, sc.method, "/api/v2"+s.expand(sc.path), body, "Authorization", "Bearer "+h.aliceToken)
	require.Less(t, r.status, 500, "body: %s", r.body)
	after := h.view(t, s.id)

	landing, ok := sc.allowed[s.state]
	if !ok {
		want := sc.rejection(s.state)
		e := requireJSONError(t, r, want.status, want.code)
		if want.code == sdk.CodeTransitionNotAllowed && sc.tr != "" {
			require.Contains(t, e.Detail, fmt.Sprintf("%s not allowed from %s", sc.tr, s.state))
		}
		require.Equal(t, before, after, "a refused %s changed the chat", sc.name)
		if sc.afterReject != nil {
			sc.afterReject(t, h, s)
		}
		return
	}
	require.Equal(t, sc.status, r.status, "body: %s", r.body)
	require.Equal(t, landing, after.state(), "status=%s archived=%v queue=%v", after.Chat.Status, after.Chat.Archived, after.queueIDs())
	switch {
	case sc.readOnly, sc.noopWhenSame && landing == s.state:
		require.Equal(t, before, after, "%s changed the chat", sc.name)
	case sc.bumps && after.Found:
		require.Greater(t, after.Chat.SnapshotVersion, before.Chat.SnapshotVersion, "a transition must advance snapshot_version")
	}
	if sc.status == http.StatusNoContent || sc.status == http.StatusAccepted {
		require.Empty(t, strings.TrimSpace(string(r.body)))
	} else {
		require.Contains(t, r.header.Get("Content-Type"), "application/json")
	}
	if sc.check != nil {
		sc.check(t, h, s, before, after, r.body)
	}
}

func decode[T any](t *testing.T, body []byte) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(body, &v), "body: %s", body)
	return v
}

// --- checks of accepted calls ---

func checkCreateChild(t *testing.T, h *fixture, s seeded, before, after view, body []byte) {
	child := decode[sdk.Chat](t, body)
	require.NotNil(t, child.ParentChatID)
	require.Equal(t, s.id, *child.ParentChatID)
	require.NotNil(t, child.RootChatID)
	require.Equal(t, s.id, *child.RootChatID)
	require.Equal(t, sdk.ChatStatusRunning, child.Status)
	require.Equal(t, h.aliceID, child.OwnerID)
	require.True(t, slices.ContainsFunc(after.Chat.Children, func(c sdk.Chat) bool { return c.ID == child.ID }),
		"GET /chats/{parent} lists the child")
	require.Equal(t, before.Messages, after.Messages, "creating a child leaves the parent's history alone")
}

func requireNoChild(t *testing.T, h *fixture, s seeded) {
	list, err := h.admin.ListChats(h.ctx, sdk.ListChatsOptions{Archived: "all", Labels: map[string]string{"child": s.label}})
	require.NoError(t, err)
	require.Empty(t, list, "a refused POST /chats created a chat")
}

func checkListed(all bool) checkFunc {
	return func(t *testing.T, h *fixture, s seeded, before, after view, body []byte) {
		list := decode[[]sdk.Chat](t, body)
		listed := s.state != N && (all || !after.Chat.Archived)
		if !listed {
			require.Empty(t, list)
			return
		}
		require.Len(t, list, 1)
		got := list[0]
		require.Equal(t, s.id, got.ID)
		require.Equal(t, after.Chat.Status, got.Status)
		require.Equal(t, after.Chat.Archived, got.Archived)
		require.Equal(t, after.Chat.SnapshotVersion, got.SnapshotVersion)
	}
}

func checkGetChat(t *testing.T, h *fixture, s seeded, before, after view, body []byte) {
	got := decode[sdk.Chat](t, body)
	require.Equal(t, after.Chat, got)
	require.Equal(t, s.id, got.ID)
	require.Equal(t, sdk.OrganizationID, got.OrganizationID)
	require.NotNil(t, got.Labels)
	require.NotNil(t, got.Children)
	if s.state == E0 || s.state == E1 || s.state == XE0 || s.state == XE1 {
		require.NotNil(t, got.LastError)
		require.Equal(t, chatstatetest.ErrorMessage, got.LastError.Message)
	}
	if s.state == A0 || s.state == A1 {
		require.NotNil(t, got.RequiresActionDeadlineAt)
	}
	// The raw JSON carries every name API.md fixes, even when null.
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &raw))
	for _, k := range []string{"id", "organization_id", "owner_id", "parent_chat_id", "root_chat_id", "last_model_config_id",
		"last_reasoning_effort", "title", "status", "last_error", "archived", "pin_order", "labels", "created_at",
		"updated_at", "children", "workspace_id"} {
		require.Contains(t, raw, k)
	}
}

func checkMessages(t *testing.T, h *fixture, s seeded, before, after view, body []byte) {
	got := decode[sdk.ChatMessagesResponse](t, body)
	require.Equal(t, after.Messages, got)
	require.NotNil(t, got.Messages)
	require.NotNil(t, got.QueuedMessages)
	require.Equal(t, s.queued, nonNil(after.queueIDs()))
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &raw))
	require.Contains(t, raw, "has_more")
}

func checkArchived(archived bool) checkFunc {
	return func(t *testing.T, h *fixture, s seeded, before, after view, body []byte) {
		require.Equal(t, archived, after.Chat.Archived)
		require.Equal(t, before.Messages, after.Messages)
	}
}

func checkRenamed(t *testing.T, h *fixture, s seeded, before, after view, body []byte) {
	require.Equal(t, "Renamed by user", after.Chat.Title)
	require.Equal(t, "user", after.Chat.TitleSource)
	require.Equal(t, before.Chat.Status, after.Chat.Status)
	require.Equal(t, before.Messages, after.Messages)
}

func checkSystemPrompt(t *testing.T, h *fixture, s seeded, before, after view, body []byte) {
	require.Equal(t, "Answer like a pirate.", after.Chat.SystemPrompt)
	require.Equal(t, before.Chat.Status, after.Chat.Status)
	require.Equal(t, before.Chat.SnapshotVersion, after.Chat.SnapshotVersion, "a system prompt takes no transition")
	require.Equal(t, before.Messages, after.Messages)
}

func checkPinned(t *testing.T, h *fixture, s seeded, before, after view, body []byte) {
	require.Equal(t, int64(3), after.Chat.PinOrder)
	require.Equal(t, map[string]string{"case": s.label, "team": "blue"}, after.Chat.Labels)
	require.Equal(t, before.Messages, after.Messages)
}

// checkSend checks POST /chats/{chat}/messages: an idle chat takes the
// message into history; E1 queues it at the tail and promotes the old head;
// a busy chat queues it.
func checkSend(interrupt bool) checkFunc {
	return func(t *testing.T, h *fixture, s seeded, before, after view, body []byte) {
		res := decode[sdk.CreateChatMessageResponse](t, body)
		switch s.state {
		case W, E0:
			require.False(t, res.Queued)
			require.Nil(t, res.QueuedMessage)
			require.NotNil(t, res.Message)
			require.Equal(t, store.RoleUser, res.Message.Role)
			require.Equal(t, "next", textOf(res.Message.Content))
			require.Nil(t, res.Message.QueuedMessageID)
			require.Equal(t, []sdk.ChatMessage{*res.Message}, res.Messages)
			requireInHistory(t, after, *res.Message)
		case E1:
			require.True(t, res.Queued)
			require.Nil(t, res.Message)
			require.NotNil(t, res.QueuedMessage)
			require.Equal(t, "next", textOf(res.QueuedMessage.Content))
			require.Len(t, res.Messages, 1, "the promoted old head")
			head := res.Messages[0]
			require.Equal(t, "queued 1", textOf(head.Content))
			require.NotNil(t, head.QueuedMessageID)
			require.Equal(t, s.queued[0], *head.QueuedMessageID)
			require.NotEqual(t, res.QueuedMessage.ID, *head.QueuedMessageID)
			requireInHistory(t, after, head)
			require.Equal(t, []int64{res.QueuedMessage.ID}, after.queueIDs())
		default:
			require.True(t, res.Queued)
			require.Nil(t, res.Message)
			require.Empty(t, res.Messages)
			require.NotNil(t, res.QueuedMessage)
			require.Equal(t, "next", textOf(res.QueuedMessage.Content))
			require.Equal(t, s.id, res.QueuedMessage.ChatID)
			require.Equal(t, append(slices.Clone(s.queued), res.QueuedMessage.ID), after.queueIDs())
			require.Equal(t, before.Messages.Messages, after.Messages.Messages[:len(before.Messages.Messages)])
		}
		if s.state == A0 || s.state == A1 {
			result, answered := after.toolResult(s.call)
			require.Equal(t, interrupt, answered, "interrupting a pending action answers its tool call")
			if interrupt {
				require.True(t, result.IsError)
				require.Nil(t, after.Chat.RequiresActionDeadlineAt)
			}
		}
		if s.state == E0 || s.state == E1 {
			require.Nil(t, after.Chat.LastError, "leaving error clears last_error")
		}
	}
}

// requireInHistory checks m is in the chat's history exactly as returned.
func requireInHistory(t *testing.T, v view, m sdk.ChatMessage) {
	t.Helper()
	i := slices.IndexFunc(v.Messages.Messages, func(x sdk.ChatMessage) bool { return x.ID == m.ID })
	require.GreaterOrEqual(t, i, 0, "message %d is not in history", m.ID)
	require.Equal(t, v.Messages.Messages[i], m)
}

func checkEdit(t *testing.T, h *fixture, s seeded, before, after view, body []byte) {
	res := decode[sdk.EditChatMessageResponse](t, body)
	require.Equal(t, store.RoleUser, res.Message.Role)
	require.Equal(t, "edited", textOf(res.Message.Content))
	require.Equal(t, []sdk.ChatMessage{res.Message}, res.Messages)
	for _, id := range before.messageIDs() {
		if id >= s.userMsg {
			require.Contains(t, res.DeletedMessageIDs, id, "the suffix from the edited message on is deleted")
		}
	}
	// The edited message was the first: history is now the replacement.
	require.Equal(t, []int64{res.Message.ID}, after.messageIDs())
	requireInHistory(t, after, res.Message)
	require.Empty(t, after.queueIDs(), "editing clears the queue")
	require.Nil(t, after.Chat.LastError)
	require.Nil(t, after.Chat.RequiresActionDeadlineAt)
}

func checkDeletedQueued(t *testing.T, h *fixture, s seeded, before, after view, body []byte) {
	require.NotContains(t, after.queueIDs(), s.queued[0])
	require.Equal(t, before.Messages.Messages, after.Messages.Messages, "deleting a queued message leaves history alone")
}

func checkPromoted(t *testing.T, h *fixture, s seeded, before, after view, body []byte) {
	qid := s.queued[0]
	switch s.state {
	case E1, A1:
		// It enters history at once, carrying its queue id.
		last := after.Messages.Messages[len(after.Messages.Messages)-1]
		require.Equal(t, store.RoleUser, last.Role)
		require.NotNil(t, last.QueuedMessageID)
		require.Equal(t, qid, *last.QueuedMessageID)
		require.NotContains(t, after.queueIDs(), qid)
		if s.state == A1 {
			_, answered := after.toolResult(s.call)
			require.True(t, answered, "leaving requires_action answers the pending call")
		}
		if s.state == E1 {
			require.Nil(t, after.Chat.LastError)
		}
	default:
		// R1, I1: it waits at the head until the interruption finishes.
		require.Equal(t, qid, after.queueIDs()[0])
		require.Equal(t, before.Messages.Messages, after.Messages.Messages)
	}
}

func checkInterrupted(t *testing.T, h *fixture, s seeded, before, after view, body []byte) {
	got := decode[sdk.Chat](t, body)
	require.Equal(t, after.Chat, got)
	require.Equal(t, s.queued, nonNil(after.queueIDs()), "interrupting preserves the queue")
	if s.state == A0 || s.state == A1 {
		result, answered := after.toolResult(s.call)
		require.True(t, answered, "interrupting a pending action answers its tool call")
		require.True(t, result.IsError)
		require.Nil(t, after.Chat.RequiresActionDeadlineAt)
	}
}

func checkToolResults(t *testing.T, h *fixture, s seeded, before, after view, body []byte) {
	result, answered := after.toolResult(s.call)
	require.True(t, answered)
	require.False(t, result.IsError)
	require.JSONEq(t, `{"answer":42}`, string(result.Result))
	require.Equal(t, "ask_user", result.ToolName)
	require.Nil(t, after.Chat.RequiresActionDeadlineAt)
	require.Equal(t, s.queued, nonNil(after.queueIDs()), "tool results preserve the queue")
}

func checkCompacted(t *testing.T, h *fixture, s seeded, before, after view, body []byte) {
	got := decode[sdk.Chat](t, body)
	require.Equal(t, after.Chat, got)
	require.Equal(t, sdk.ChatStatusRunning, got.Status)
	require.Nil(t, got.LastError, "compacting from error clears last_error")
	require.Equal(t, before.Messages.Messages, after.Messages.Messages, "requesting compaction inserts no message")
}

func checkCleared(t *testing.T, h *fixture, s seeded, before, after view, body []byte) {
	got := decode[sdk.Chat](t, body)
	require.Equal(t, after.Chat, got)
	require.Equal(t, sdk.ChatStatusWaiting, got.Status)
	require.Nil(t, got.LastError, "clearing from error clears last_error")
	// The transcript stays; a visible chat_cleared call and result follow.
	n := len(before.Messages.Messages)
	require.Equal(t, before.Messages.Messages, after.Messages.Messages[:n])
	require.Len(t, after.Messages.Messages, n+2)
	for _, m := range after.Messages.Messages[n:] {
		require.True(t, m.Compressed)
		require.Equal(t, chatstate.ToolChatCleared, m.Content[0].ToolName)
	}
}

func checkReconciled(t *testing.T, h *fixture, s seeded, before, after view, body []byte) {
	got := decode[sdk.Chat](t, body)
	require.Equal(t, after.Chat, got)
	require.False(t, got.Archived)
	require.Equal(t, sdk.ChatStatusError, got.Status)
	require.NotNil(t, got.LastError)
	require.Equal(t, sdk.ChatErrorInvalidState, got.LastError.Kind)
}

// --- unowned chats ---

// With no worker owning the chat nothing is generating, so an interruption
// is finished in the same transaction (spec: POST .../interrupt and
// POST .../messages with busy_behavior=interrupt).
func TestUnownedChatsFinishInterruptionAtOnce(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		unowned := seedOpts{unowned: true}

		t.Run("interrupt", func(t *testing.T) {
			t.Parallel()
			for _, tc := range []struct {
				from, to chatstate.State
			}{{R0, W}, {R1, R0}, {I0, W}, {I1, R0}, {A0, R0}, {A1, R1}} {
				s := h.seed(t, tc.from, unowned)
				got, err := h.alice.Interrupt(h.ctx, s.id)
				require.NoError(t, err, "from %s", tc.from)
				after := h.requireState(t, s.id, tc.to)
				require.Equal(t, after.Chat, got)
				require.False(t, after.Chat.Archived)
				if tc.from == R1 || tc.from == I1 {
					// The queue head was promoted, carrying its queue id.
					last := after.Messages.Messages[len(after.Messages.Messages)-1]
					require.NotNil(t, last.QueuedMessageID, "from %s", tc.from)
					require.Equal(t, s.queued[0], *last.QueuedMessageID)
				}
			}
		})

		t.Run("send_interrupt", func(t *testing.T) {
			t.Parallel()
			for _, from := range []chatstate.State{R0, I0} {
				// The promoted head is m itself: it comes back as message.
				s := h.seed(t, from, unowned)
				res, err := h.alice.SendMessage(h.ctx, s.id, sdk.CreateChatMessageRequest{
					Content: sdk.Text("stop and do this"), BusyBehavior: sdk.BusyBehaviorInterrupt,
				})
				require.NoError(t, err)
				require.False(t, res.Queued, "from %s", from)
				require.Nil(t, res.QueuedMessage)
				require.NotNil(t, res.Message)
				require.Equal(t, "stop and do this", textOf(res.Message.Content))
				require.NotNil(t, res.Message.QueuedMessageID, "it went through the queue")
				after := h.requireState(t, s.id, R0)
				requireInHistory(t, after, *res.Message)
				require.Empty(t, after.queueIDs())
			}

			// From R1 the old head is promoted; m stays queued at the tail.
			s := h.seed(t, R1, unowned)
			res, err := h.alice.SendMessage(h.ctx, s.id, sdk.CreateChatMessageRequest{
				Content: sdk.Text("after that"), BusyBehavior: sdk.BusyBehaviorInterrupt,
			})
			require.NoError(t, err)
			require.True(t, res.Queued)
			require.Nil(t, res.Message)
			require.NotNil(t, res.QueuedMessage)
			require.Len(t, res.Messages, 1)
			require.Equal(t, s.queued[0], *res.Messages[0].QueuedMessageID)
			require.NotEqual(t, res.QueuedMessage.ID, *res.Messages[0].QueuedMessageID)
			after := h.requireState(t, s.id, R1)
			require.Equal(t, []int64{res.QueuedMessage.ID}, after.queueIDs())
			requireInHistory(t, after, res.Messages[0])
		})

		t.Run("promote", func(t *testing.T) {
			t.Parallel()
			s := h.seed(t, R1, unowned)
			require.NoError(t, h.alice.PromoteQueuedMessage(h.ctx, s.id, s.queued[0]))
			after := h.requireState(t, s.id, R0)
			last := after.Messages.Messages[len(after.Messages.Messages)-1]
			require.NotNil(t, last.QueuedMessageID)
			require.Equal(t, s.queued[0], *last.QueuedMessageID)
		})
	})
}

// --- queue variants the matrix does not reach ---

// With two queued messages, deleting or promoting one keeps the queue
// non-empty (spec: "if the queue remains non-empty").
func TestQueueRemainsNonEmpty(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		queueAnother := func(t *testing.T, s *seeded) {
			res, err := h.alice.SendMessage(h.ctx, s.id, sdk.CreateChatMessageRequest{Content: sdk.Text("queued two")})
			require.NoError(t, err)
			require.True(t, res.Queued)
			s.queued = append(s.queued, res.QueuedMessage.ID)
		}
		for _, st := range []chatstate.State{E1, R1, I1, A1} {
			t.Run(string(st), func(t *testing.T) {
				t.Parallel()
				// E1 cannot take a message without leaving error: queue
				// while running, then fail.
				seedTwo := func() seeded {
					if st != E1 {
						s := h.seed(t, st)
						queueAnother(t, &s)
						return s
					}
					s := h.seed(t, R1)
					queueAnother(t, &s)
					h.finishError(t, s.id)
					s.state = E1
					return s
				}

				s := seedTwo()
				require.NoError(t, h.alice.DeleteQueuedMessage(h.ctx, s.id, s.queued[1]))
				after := h.requireState(t, s.id, st)
				require.Equal(t, s.queued[:1], after.queueIDs())

				// Promote the tail: it is reordered to the head first.
				s = seedTwo()
				require.NoError(t, h.alice.PromoteQueuedMessage(h.ctx, s.id, s.queued[1]))
				want := map[chatstate.State]chatstate.State{E1: R1, R1: I1, I1: I1, A1: R1}[st]
				after = h.requireState(t, s.id, want)
				switch st {
				case E1, A1:
					last := after.Messages.Messages[len(after.Messages.Messages)-1]
					require.Equal(t, s.queued[1], *last.QueuedMessageID)
					require.Equal(t, s.queued[:1], after.queueIDs())
				default:
					require.Equal(t, []int64{s.queued[1], s.queued[0]}, after.queueIDs())
				}
			})
		}
	})
}

// A queued message id the chat does not have is 404 NOT_FOUND, and the
// call changes nothing, even in a state that accepts the endpoint.
func TestQueueEndpointsUnknownQueuedMessage(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		s := h.seed(t, R1)
		other := h.seed(t, R1) // its queued message is not s's
		before := h.view(t, s.id)
		for _, qid := range []int64{noSuchQueued, other.queued[0]} {
			err := h.alice.DeleteQueuedMessage(h.ctx, s.id, qid)
			requireAPIError(t, err, http.StatusNotFound, sdk.CodeNotFound)
			err = h.alice.PromoteQueuedMessage(h.ctx, s.id, qid)
			requireAPIError(t, err, http.StatusNotFound, sdk.CodeNotFound)
		}
		require.Equal(t, before, h.view(t, s.id))
		h.requireState(t, other.id, R1)
	})
}

// Editing needs a user message of this chat that is still in history.
func TestEditMessageTarget(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		s := h.seed(t, W)
		other := h.seed(t, W)
		v := h.view(t, s.id)
		assistant := v.Messages.Messages[len(v.Messages.Messages)-1]
		require.Equal(t, store.RoleAssistant, assistant.Role)
		edit := sdk.EditChatMessageRequest{Content: sdk.Text("edited")}

		_, err := h.alice.EditMessage(h.ctx, s.id, 987654321, edit)
		requireAPIError(t, err, http.StatusNotFound, sdk.CodeNotFound)
		_, err = h.alice.EditMessage(h.ctx, s.id, other.userMsg, edit)
		requireAPIError(t, err, http.StatusNotFound, sdk.CodeNotFound)
		_, err = h.alice.EditMessage(h.ctx, s.id, assistant.ID, edit)
		requireAPIError(t, err, http.StatusBadRequest, sdk.CodeValidation)
		require.Equal(t, v, h.view(t, s.id))

		// An edited (deleted) message cannot be edited again.
		res, err := h.alice.EditMessage(h.ctx, s.id, s.userMsg, edit)
		require.NoError(t, err)
		require.Contains(t, res.DeletedMessageIDs, s.userMsg)
		v = h.view(t, s.id)
		_, err = h.alice.EditMessage(h.ctx, s.id, s.userMsg, edit)
		requireAPIError(t, err, http.StatusNotFound, sdk.CodeNotFound)
		require.Equal(t, v, h.view(t, s.id))
	})
}

// Tool results must answer exactly the pending calls.
func TestToolResultsMustMatchPendingCalls(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		s := h.seed(t, A0)
		before := h.view(t, s.id)
		for name, results := range map[string][]sdk.ToolResult{
			"empty":     {},
			"unknown":   {{ToolCallID: "call-unknown", Output: json.RawMessage(`1`)}},
			"duplicate": {{ToolCallID: s.call, Output: json.RawMessage(`1`)}, {ToolCallID: s.call, Output: json.RawMessage(`2`)}},
		} {
			err := h.alice.SubmitToolResults(h.ctx, s.id, sdk.SubmitToolResultsRequest{Results: results})
			requireAPIError(t, err, http.StatusBadRequest, sdk.CodeValidation)
			require.Equal(t, before, h.view(t, s.id), name)
		}
		// An error result is a result.
		require.NoError(t, h.alice.SubmitToolResults(h.ctx, s.id, sdk.SubmitToolResultsRequest{Results: []sdk.ToolResult{
			{ToolCallID: s.call, Output: json.RawMessage(`{"error":"user declined"}`), IsError: true},
		}}))
		after := h.requireState(t, s.id, R0)
		result, ok := after.toolResult(s.call)
		require.True(t, ok)
		require.True(t, result.IsError)
	})
}

// --- compaction and clear ---

func TestCompact(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)

		// Created empty: nothing at all to compact.
		empty, err := h.alice.CreateChat(h.ctx, sdk.CreateChatRequest{})
		require.NoError(t, err)
		before := h.view(t, empty.ID)
		_, err = h.alice.Compact(h.ctx, empty.ID)
		requireAPIError(t, err, http.StatusConflict, sdk.CodeNothingToCompact)
		require.Equal(t, before, h.view(t, empty.ID))

		// A user message without a reply: still nothing (W and E0).
		for _, st := range []chatstate.State{W, E0} {
			s := h.seed(t, st, seedOpts{noReply: true})
			before := h.view(t, s.id)
			_, err = h.alice.Compact(h.ctx, s.id)
			requireAPIError(t, err, http.StatusConflict, sdk.CodeNothingToCompact)
			require.Equal(t, before, h.view(t, s.id), "from %s", st)
		}

		// One assistant message (committed, then FinishTurn to W): compacts.
		s := h.seed(t, W)
		got, err := h.alice.Compact(h.ctx, s.id)
		require.NoError(t, err)
		require.Equal(t, sdk.ChatStatusRunning, got.Status)
		h.requireState(t, s.id, R0)
	})
}

func TestClear(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)

		empty, err := h.alice.CreateChat(h.ctx, sdk.CreateChatRequest{})
		require.NoError(t, err)
		_, err = h.alice.Clear(h.ctx, empty.ID)
		requireAPIError(t, err, http.StatusConflict, sdk.CodeNothingToClear)

		for _, st := range []chatstate.State{W, E0} {
			s := h.seed(t, st)
			got, err := h.alice.Clear(h.ctx, s.id)
			require.NoError(t, err, "from %s", st)
			require.Equal(t, sdk.ChatStatusWaiting, got.Status)
			require.Nil(t, got.LastError)
			h.requireState(t, s.id, W)

			// Already cleared: a second clear finds nothing and changes nothing.
			before := h.view(t, s.id)
			_, err = h.alice.Clear(h.ctx, s.id)
			requireAPIError(t, err, http.StatusConflict, sdk.CodeNothingToClear)
			require.Equal(t, before, h.view(t, s.id))

			// Nor is there anything to compact after a clear.
			_, err = h.alice.Compact(h.ctx, s.id)
			requireAPIError(t, err, http.StatusConflict, sdk.CodeNothingToCompact)
			require.Equal(t, before, h.view(t, s.id))
		}

		// E1 has queued messages: refused.
		s := h.seed(t, E1)
		before := h.view(t, s.id)
		_, err = h.alice.Clear(h.ctx, s.id)
		e := requireAPIError(t, err, http.StatusConflict, sdk.CodeTransitionNotAllowed)
		require.Contains(t, e.Detail, "ClearContext not allowed from E1")
		require.Equal(t, before, h.view(t, s.id))
	})
}

// --- queue limit ---

func TestQueueFull(t *testing.T) {
	t.Parallel()
	const limit = 3
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore, func(c *config.Config) { c.QueueLimit = limit })
		for _, st := range []chatstate.State{R0, I0, A0} {
			s := h.seed(t, st)
			for i := range limit {
				res, err := h.alice.SendMessage(h.ctx, s.id, sdk.CreateChatMessageRequest{Content: sdk.Text(fmt.Sprint("q", i))})
				require.NoError(t, err)
				require.True(t, res.Queued)
			}
			before := h.view(t, s.id)
			require.Len(t, before.queueIDs(), limit)
			for _, busy := range []string{sdk.BusyBehaviorQueue, sdk.BusyBehaviorInterrupt} {
				_, err := h.alice.SendMessage(h.ctx, s.id, sdk.CreateChatMessageRequest{Content: sdk.Text("one too many"), BusyBehavior: busy})
				requireAPIError(t, err, http.StatusTooManyRequests, sdk.CodeQueueFull)
				require.Equal(t, before, h.view(t, s.id), "from %s with %s", st, busy)
			}
			// Making room lets the next one in.
			require.NoError(t, h.alice.DeleteQueuedMessage(h.ctx, s.id, before.queueIDs()[0]))
			_, err := h.alice.SendMessage(h.ctx, s.id, sdk.CreateChatMessageRequest{Content: sdk.Text("fits again")})
			require.NoError(t, err)
		}
	})
}

// --- families ---

// Archiving a root archives its family atomically; one member that cannot
// be archived fails the whole operation. A child cannot be unarchived
// while its parent is archived, and no child joins an archived family
// (spec: PATCH /api/v2/chats/{chat}, and Create for child chats).
func TestArchiveFamily(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		child := func(t *testing.T, parent uuid.UUID) uuid.UUID {
			c, err := h.alice.CreateChat(h.ctx, sdk.CreateChatRequest{Content: sdk.Text("sub task"), ParentChatID: &parent})
			require.NoError(t, err)
			return c.ID
		}
		idle := func(t *testing.T, id uuid.UUID) {
			h.acquire(t, id)
			h.finishTurn(t, id)
			h.abandon(t, id)
		}
		// archivedFamily is an archived root with an archived child.
		archivedFamily := func(t *testing.T) (root, kid uuid.UUID) {
			root = h.seed(t, W).id
			kid = child(t, root)
			idle(t, kid)
			require.NoError(t, h.alice.UpdateChat(h.ctx, root, sdk.UpdateChatRequest{Archived: ptr(true)}))
			h.requireState(t, root, XW)
			h.requireState(t, kid, XW)
			return root, kid
		}

		t.Run("a busy member blocks archiving", func(t *testing.T) {
			t.Parallel()
			root := h.seed(t, W).id
			busy := child(t, root)
			rootBefore, childBefore := h.view(t, root), h.view(t, busy)
			err := h.alice.UpdateChat(h.ctx, root, sdk.UpdateChatRequest{Archived: ptr(true)})
			e := requireAPIError(t, err, http.StatusConflict, sdk.CodeTransitionNotAllowed)
			require.Contains(t, e.Detail, "SetArchived(true) not allowed from R0")
			require.Equal(t, rootBefore, h.view(t, root))
			require.Equal(t, childBefore, h.view(t, busy))
		})

		t.Run("the family is archived and unarchived together", func(t *testing.T) {
			t.Parallel()
			root, kid := archivedFamily(t)
			require.NoError(t, h.alice.UpdateChat(h.ctx, root, sdk.UpdateChatRequest{Archived: ptr(false)}))
			h.requireState(t, root, W)
			h.requireState(t, kid, W)
		})

		t.Run("a child alone is archived alone", func(t *testing.T) {
			t.Parallel()
			root := h.seed(t, W).id
			kid := child(t, root)
			idle(t, kid)
			require.NoError(t, h.alice.UpdateChat(h.ctx, kid, sdk.UpdateChatRequest{Archived: ptr(true)}))
			h.requireState(t, kid, XW)
			h.requireState(t, root, W)
			require.NoError(t, h.alice.UpdateChat(h.ctx, kid, sdk.UpdateChatRequest{Archived: ptr(false)}))
			h.requireState(t, kid, W)
		})

		t.Run("a child cannot be unarchived while its parent is archived", func(t *testing.T) {
			t.Parallel()
			_, kid := archivedFamily(t)
			before := h.view(t, kid)
			err := h.alice.UpdateChat(h.ctx, kid, sdk.UpdateChatRequest{Archived: ptr(false)})
			// The call is an unarchive, which API.md exempts from
			// CHAT_ARCHIVED; the state machine refuses it.
			e := requireAPIError(t, err, http.StatusConflict, sdk.CodeTransitionNotAllowed)
			require.Contains(t, e.Detail, "SetArchived(false) not allowed from XW")
			require.Equal(t, before, h.view(t, kid))
		})

		t.Run("no child joins an archived family", func(t *testing.T) {
			t.Parallel()
			root, kid := archivedFamily(t)
			for _, parent := range []uuid.UUID{root, kid} {
				err := func() error {
					_, err := h.alice.CreateChat(h.ctx, sdk.CreateChatRequest{Content: sdk.Text("late"), ParentChatID: &parent})
					return err
				}()
				// The parent exists and is the caller's: not 404.
				requireAPIError(t, err, http.StatusBadRequest, sdk.CodeChatArchived)
			}
			requireNoChildOf(t, h, root)
		})

		t.Run("deleting the root deletes the family", func(t *testing.T) {
			t.Parallel()
			root := h.seed(t, W).id
			kid := child(t, root)
			grandchild := child(t, kid)
			require.NoError(t, h.alice.DeleteChat(h.ctx, root))
			h.requireState(t, root, N)
			h.requireState(t, kid, N)
			h.requireState(t, grandchild, N)
		})
	})
}

func requireNoChildOf(t *testing.T, h *fixture, root uuid.UUID) {
	t.Helper()
	v := h.view(t, root)
	require.Len(t, v.Chat.Children, 1, "only the child made before archiving")
}
