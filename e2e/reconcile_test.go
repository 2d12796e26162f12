package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// review is a server without a worker (nothing runs the chats it seeds)
// with an admin and alice, who owns the seeded chats.
type review struct {
	ctx          context.Context
	h            *apptest.Harness
	admin, alice *sdk.Client
	aliceID      uuid.UUID
}

func newReview(t *testing.T, newStore func(t testing.TB) store.Store) *review {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	h := apptest.Start(t, apptest.Options{Store: newStore, Config: config.Config{NoWorker: true}})
	alice := h.NewUser(t, "alice")
	me, err := alice.Me(ctx)
	require.NoError(t, err)
	return &review{ctx: ctx, h: h, admin: h.Admin, alice: alice, aliceID: me.ID}
}

// seed leaves a chat of alice stopped for review the way a crash during
// an effectful call does: with a durable request (unresolved too) or, for
// a turn sent without one, the journal entry alone.
func (r *review) seed(t *testing.T, withRequest bool) (chatID uuid.UUID, request uuid.NullUUID, call string) {
	t.Helper()
	m := r.h.Machine
	chatID, call = uuid.New(), "call_"+uuid.NewString()[:8]
	if withRequest {
		request = uuid.NullUUID{UUID: uuid.New(), Valid: true}
	}
	require.NoError(t, m.Do(r.ctx, func(tx *chatstate.Tx) error {
		in := chatstate.UserInput{Content: sdk.Text("notify the shop"), RequestID: request}
		if _, err := tx.Create(chatstate.CreateParams{ID: chatID, OwnerID: r.aliceID, Title: "shop", Input: in}); err != nil {
			return err
		}
		if !withRequest {
			return nil
		}
		ms, err := tx.Reader().MessageList(r.ctx, chatID, store.MessageListParams{})
		if err != nil {
			return err
		}
		_, err = tx.AdmitRequest(chatstate.Claim{
			RequestID: request.UUID, CallerID: r.aliceID, ContentSHA256: "00", Kind: "create_chat", ChatID: chatID,
			MessageID: &ms[len(ms)-1].ID, Response: json.RawMessage(`{}`),
		})
		return err
	}))
	require.NoError(t, m.Do(r.ctx, func(tx *chatstate.Tx) error {
		if _, err := tx.Acquire(chatID, uuid.New(), uuid.New()); err != nil {
			return err
		}
		parts, err := chatstate.EncodeParts([]sdk.ChatMessagePart{
			{Type: sdk.PartToolCall, ToolCallID: call, ToolName: "send_webhook", Args: json.RawMessage(`{}`)},
		})
		if err != nil {
			return err
		}
		if _, err := tx.CommitStep(chatID, chatstate.Step{Messages: []store.MessageInsertParams{{Role: store.RoleAssistant, Content: parts}}}); err != nil {
			return err
		}
		_, _, err = tx.JournalStart(chatID, chatstate.JournalCall{
			ToolCallID: call, ToolName: "send_webhook", Effect: store.EffectEffectful, RequestID: request,
		})
		return err
	}))
	require.NoError(t, m.Do(r.ctx, func(tx *chatstate.Tx) error {
		_, err := tx.MarkUnresolved(chatID, request, []string{call})
		return err
	}))
	return chatID, request, call
}

// toolResult is the result history holds for call (nil when none).
func (r *review) toolResult(t *testing.T, chatID uuid.UUID, call string) *sdk.ChatMessagePart {
	t.Helper()
	ms, err := r.alice.ChatMessages(r.ctx, chatID, sdk.MessagesOptions{})
	require.NoError(t, err)
	var found *sdk.ChatMessagePart
	for _, m := range ms.Messages {
		for _, p := range m.Content {
			if p.Type == sdk.PartToolResult && p.ToolCallID == call {
				require.Nil(t, found, "one result per call")
				found = &p
			}
		}
	}
	return found
}

func (r *review) journal(t *testing.T, chatID uuid.UUID, call string) store.JournalEntry {
	t.Helper()
	var e store.JournalEntry
	require.NoError(t, r.h.Store.ReadTx(r.ctx, func(tx store.Reader) error {
		var err error
		e, err = tx.JournalGet(r.ctx, chatID, call)
		return err
	}))
	return e
}

// Reconcile everywhere, one mechanism: admins review a request
// (POST /requests/{id}/reconcile) or a tool call of a turn sent without a
// request id (POST /chats/{chat}/tool-calls/{id}/reconcile); the owner
// waits (last_error unresolved_effects) and cannot answer the call
// herself (TOOL_CALL_UNDER_REVIEW).
func TestReconcileOverHTTP(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := newReview(t, newStore)
		ctx := r.ctx
		chat1, request, call1 := r.seed(t, true)
		chat2, _, call2 := r.seed(t, false)
		good := sdk.ReconcileRequest{Assessment: "the webhook was delivered", Result: json.RawMessage(`{"delivered":true}`)}

		for _, chat := range []uuid.UUID{chat1, chat2} {
			c, err := r.alice.Chat(ctx, chat)
			require.NoError(t, err)
			require.Equal(t, sdk.ChatStatusRequiresAction, c.Status)
			require.NotNil(t, c.LastError, "a chat waiting for review says why")
			require.Equal(t, sdk.ChatErrorUnresolvedEffects, c.LastError.Kind)
		}
		for chat, call := range map[uuid.UUID]string{chat1: call1, chat2: call2} {
			err := r.alice.SubmitToolResults(ctx, chat, sdk.SubmitToolResultsRequest{Results: []sdk.ToolResult{
				{ToolCallID: call, Output: json.RawMessage(`"I did it"`)},
			}})
			requireCode(t, err, http.StatusConflict, sdk.CodeToolCallUnderReview)
			require.Nil(t, r.toolResult(t, chat, call), "the owner's result was not recorded")
		}

		_, err := r.alice.ReconcileRequestID(ctx, request.UUID, good)
		requireCode(t, err, http.StatusForbidden, sdk.CodeForbidden)
		_, err = r.alice.ReconcileToolCall(ctx, chat2, call2, good)
		requireCode(t, err, http.StatusForbidden, sdk.CodeForbidden)
		_, err = r.admin.ReconcileRequestID(ctx, request.UUID, sdk.ReconcileRequest{})
		requireCode(t, err, http.StatusBadRequest, sdk.CodeValidation)
		_, err = r.admin.ReconcileRequestID(ctx, request.UUID, sdk.ReconcileRequest{Assessment: "x", Result: json.RawMessage(`{`)})
		require.Error(t, err, "a result that is not JSON")
		_, err = r.admin.ReconcileRequestID(ctx, uuid.New(), good)
		requireCode(t, err, http.StatusNotFound, sdk.CodeInvocationNotFound)
		_, err = r.admin.ReconcileToolCall(ctx, chat2, "call_nobody_made", good)
		requireCode(t, err, http.StatusNotFound, sdk.CodeNotFound)
		err = r.admin.Do(ctx, http.MethodPost, "/requests/not-a-uuid/reconcile", good, nil)
		requireCode(t, err, http.StatusBadRequest, sdk.CodeInvalidInvocationID)

		out, err := r.admin.ReconcileRequestID(ctx, request.UUID, good)
		require.NoError(t, err)
		require.Equal(t, request.UUID, *out.RequestID)
		require.NotNil(t, out.AuditID)
		require.Equal(t, "reconciled", out.State)
		require.Equal(t, []string{call1}, out.ToolCallIDs)
		require.Equal(t, sdk.ChatStatusRunning, out.Chat.Status, "the chat resumes")
		require.Nil(t, out.Chat.LastError)
		res := r.toolResult(t, chat1, call1)
		require.NotNil(t, res)
		require.JSONEq(t, `{"delivered":true}`, string(res.Result))
		_, err = r.alice.LookupRequest(ctx, request.UUID, sdk.LookupOptions{})
		requireCode(t, err, http.StatusConflict, sdk.CodeInvocationReconciled)
		_, err = r.admin.ReconcileRequestID(ctx, request.UUID, good)
		requireCode(t, err, http.StatusConflict, sdk.CodeTransitionNotAllowed)

		// The tool call of a turn sent without a request id.
		out, err = r.admin.ReconcileToolCall(ctx, chat2, call2, sdk.ReconcileRequest{Assessment: "never reached the shop", IsError: true})
		require.NoError(t, err)
		require.Nil(t, out.RequestID)
		require.Equal(t, []string{call2}, out.ToolCallIDs)
		require.Equal(t, sdk.ChatStatusRunning, out.Chat.Status)
		res = r.toolResult(t, chat2, call2)
		require.NotNil(t, res)
		require.True(t, res.IsError)
		require.JSONEq(t, `{"reviewed":"never reached the shop"}`, string(res.Result))
		e := r.journal(t, chat2, call2)
		require.Equal(t, store.JournalReconciled, e.State)
		_, err = r.admin.ReconcileToolCall(ctx, chat2, call2, good)
		requireCode(t, err, http.StatusConflict, sdk.CodeTransitionNotAllowed)

		// A tool call whose turn has a request is reviewed with its request.
		chat3, request3, call3 := r.seed(t, true)
		out, err = r.admin.ReconcileToolCall(ctx, chat3, call3, good)
		require.NoError(t, err)
		require.Equal(t, request3.UUID, *out.RequestID)
		require.Equal(t, "reconciled", out.State)
	})
}

// Every way out of review other than a reconcile (an interrupt, a send
// that interrupts, a promoted queued send, an edit) may move the chat on, but the call's
// synthetic result says its outcome is unknown and under review, never
// "cancelled", and the call and its request stay unresolved until an
// operator reconciles them.
func TestReviewCannotBeBypassed(t *testing.T) {
	t.Parallel()
	// Each way returns whether the call stays in history (an edit of the
	// turn's message removes it with the rest of the turn).
	ways := map[string]func(r *review, chat uuid.UUID) (kept bool, err error){
		"promote": func(r *review, chat uuid.UUID) (bool, error) {
			resp, err := r.alice.SendMessage(r.ctx, chat, sdk.CreateChatMessageRequest{Content: sdk.Text("later")})
			if err != nil {
				return false, err
			}
			if resp.QueuedMessage == nil {
				return false, errors.New("a send to a chat in review is queued")
			}
			return true, r.alice.PromoteQueuedMessage(r.ctx, chat, resp.QueuedMessage.ID)
		},
		"edit": func(r *review, chat uuid.UUID) (bool, error) {
			ms, err := r.alice.ChatMessages(r.ctx, chat, sdk.MessagesOptions{})
			if err != nil {
				return false, err
			}
			for _, m := range ms.Messages {
				if m.Role == string(store.RoleUser) {
					_, err := r.alice.EditMessage(r.ctx, chat, m.ID, sdk.EditChatMessageRequest{Content: sdk.Text("notify the other shop")})
					return false, err
				}
			}
			return false, errors.New("no user message")
		},
		"interrupt": func(r *review, chat uuid.UUID) (bool, error) {
			_, err := r.alice.Interrupt(r.ctx, chat)
			return true, err
		},
		"send-interrupt": func(r *review, chat uuid.UUID) (bool, error) {
			_, err := r.alice.SendMessage(r.ctx, chat, sdk.CreateChatMessageRequest{Content: sdk.Text("move on"), BusyBehavior: "interrupt"})
			return true, err
		},
	}
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := newReview(t, newStore)
		for name, way := range ways {
			t.Run(name, func(t *testing.T) {
				for _, withRequest := range []bool{true, false} {
					chat, request, call := r.seed(t, withRequest)
					kept, err := way(r, chat)
					require.NoError(t, err)
					c, err := r.alice.Chat(r.ctx, chat)
					require.NoError(t, err)
					require.NotEqual(t, sdk.ChatStatusRequiresAction, c.Status, "the user moved on")
					res := r.toolResult(t, chat, call)
					if kept {
						require.NotNil(t, res, "the call has a result")
						var got map[string]any
						require.NoError(t, json.Unmarshal(res.Result, &got))
						require.Equal(t, "unknown", got["outcome"], string(res.Result))
						require.Equal(t, true, got["under_review"], string(res.Result))
						require.NotContains(t, got, "cancelled", string(res.Result))
						require.True(t, res.IsError)
					} else {
						require.Nil(t, res, "the edit removed the call with its turn")
					}
					require.Equal(t, store.JournalUnresolved, r.journal(t, chat, call).State, "the entry stays unresolved")
					if withRequest {
						_, err := r.alice.LookupRequest(r.ctx, request.UUID, sdk.LookupOptions{})
						requireCode(t, err, http.StatusConflict, sdk.CodeInvocationUnresolved)
						out, err := r.admin.ReconcileRequestID(r.ctx, request.UUID, sdk.ReconcileRequest{Assessment: "checked"})
						require.NoError(t, err, "the review is still recorded")
						require.Equal(t, "reconciled", out.State)
					} else {
						_, err := r.admin.ReconcileToolCall(r.ctx, chat, call, sdk.ReconcileRequest{Assessment: "checked"})
						require.NoError(t, err, "the review is still recorded")
					}
					require.Equal(t, store.JournalReconciled, r.journal(t, chat, call).State)
					require.Equal(t, res, r.toolResult(t, chat, call), "history is not rewritten by a late review")
				}
			})
		}
	})
}
