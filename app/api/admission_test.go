package api_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/hooks"
	"github.com/chatd/chatd/app/hooks/hookstest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// withHooks points the app's lifecycle hooks at c.
func withHooks(c *hookstest.Consumer) func(*config.Config) {
	return func(cfg *config.Config) {
		cfg.HookURL = c.Server.URL
		cfg.HookSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("admission test secret"))
	}
}

// allMessages is the whole history, model-only rows included.
func (h *fixture) allMessages(t testing.TB, id uuid.UUID) []store.Message {
	t.Helper()
	var ms []store.Message
	require.NoError(t, h.app.Internals().Store.ReadTx(h.ctx, func(tx store.Reader) error {
		var err error
		ms, err = tx.MessageList(h.ctx, id, store.MessageListParams{})
		return err
	}))
	return ms
}

func msgText(t testing.TB, m store.Message) string {
	t.Helper()
	var parts []sdk.ChatMessagePart
	require.NoError(t, json.Unmarshal(m.Content, &parts))
	return textOf(parts)
}

// rewriter replaces every prompt with "rewritten: <text>" and adds both
// kinds of context.
func rewriter(r hooks.Request) (int, string) {
	switch r.Event {
	case hooks.SessionStart:
		return http.StatusOK, `{"model_context":"session rules"}`
	case hooks.UserPromptSubmit:
		b, _ := json.Marshal(map[string]string{
			"updated_prompt": "rewritten: " + textOf(r.Prompt), "model_context": "model note", "user_context": "user note",
		})
		return http.StatusOK, string(b)
	}
	return http.StatusOK, ""
}

// TestAdmissionHooks: session_start and user_prompt_submit are evaluated
// when a prompt is accepted (create, send, queue, edit): the prompt can be
// replaced (the fallback title follows the replacement), context enters
// history before the prompt for its audience, a queued prompt is not
// evaluated again when promoted.
func TestAdmissionHooks(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		c := hookstest.New(t)
		c.SetAnswer(rewriter)
		h := setup(t, newStore, withHooks(c))

		chat, err := h.alice.CreateChat(h.ctx, sdk.CreateChatRequest{Content: sdk.Text("delete everything")})
		require.NoError(t, err)
		require.Equal(t, []hooks.Event{hooks.SessionStart, hooks.UserPromptSubmit}, c.Names())
		ev := c.Events()
		require.Equal(t, chat.ID, ev[0].ChatID, "the event names the chat being created")
		require.Equal(t, "create", ev[0].Source)
		require.Equal(t, h.aliceID, ev[1].OwnerID)
		require.Equal(t, "delete everything", textOf(ev[1].Prompt))
		require.Equal(t, ev[0].SubmissionID, ev[1].SubmissionID)
		require.Equal(t, hooks.EventID(chat.ID, 0, hooks.UserPromptSubmit, ev[1].SubmissionID), ev[1].ID)
		require.Equal(t, "rewritten: delete everything", chat.Title, "the fallback title is the prompt after the override")

		all := h.allMessages(t, chat.ID)
		require.Len(t, all, 4)
		for i, want := range []struct{ text, visibility string }{
			{"session rules", store.VisibilityModel}, {"model note", store.VisibilityModel},
			{"user note", store.VisibilityBoth}, {"rewritten: delete everything", store.VisibilityBoth},
		} {
			require.Equal(t, want.text, msgText(t, all[i]), "message %d", i)
			require.Equal(t, want.visibility, all[i].Visibility, "message %d", i)
			require.Equal(t, store.RoleUser, all[i].Role)
		}
		// People see the user context and the prompt, never the model-only context.
		v := h.view(t, chat.ID)
		require.Len(t, v.Messages.Messages, 2)
		require.Equal(t, "user note", textOf(v.Messages.Messages[0].Content))
		require.Equal(t, "rewritten: delete everything", textOf(v.Messages.Messages[1].Content))

		// The chat is running: the next prompt is queued, evaluated now.
		h.acquire(t, chat.ID)
		sent, err := h.alice.SendMessage(h.ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("second")})
		require.NoError(t, err)
		require.True(t, sent.Queued)
		require.Equal(t, "rewritten: second", textOf(sent.QueuedMessage.Content))
		require.Equal(t, hooks.UserPromptSubmit, c.Names()[2])
		require.Len(t, c.Events(), 3)
		require.Len(t, h.allMessages(t, chat.ID), 4, "the queued prompt's context waits with it")

		// Promotion brings the context along without asking the hook again.
		h.commitAssistant(t, chat.ID, "done")
		h.finishTurn(t, chat.ID)
		require.Len(t, c.Events(), 3, "a queued prompt is evaluated once")
		all = h.allMessages(t, chat.ID)
		require.Len(t, all, 8)
		require.Equal(t, "model note", msgText(t, all[5]))
		require.Equal(t, store.VisibilityModel, all[5].Visibility)
		require.Equal(t, "user note", msgText(t, all[6]))
		require.Equal(t, "rewritten: second", msgText(t, all[7]))
		require.NotNil(t, all[7].QueuedMessageID)

		// An edit starts a new session: session_start (edit), then the prompt.
		h.commitAssistant(t, chat.ID, "again")
		h.finishTurn(t, chat.ID)
		h.abandon(t, chat.ID)
		edited, err := h.alice.EditMessage(h.ctx, chat.ID, all[7].ID, sdk.EditChatMessageRequest{Content: sdk.Text("third")})
		require.NoError(t, err)
		require.Equal(t, "rewritten: third", textOf(edited.Message.Content))
		ev = c.Events()
		require.Len(t, ev, 5)
		require.Equal(t, hooks.SessionStart, ev[3].Event)
		require.Equal(t, "edit", ev[3].Source)
		require.Equal(t, hooks.UserPromptSubmit, ev[4].Event)
		v = h.view(t, chat.ID)
		last := v.Messages.Messages[len(v.Messages.Messages)-1]
		require.Equal(t, "rewritten: third", textOf(last.Content))
		require.Equal(t, "user note", textOf(v.Messages.Messages[len(v.Messages.Messages)-2].Content))

		// A chat created empty gets session_start only; its context waits in history.
		empty, err := h.alice.CreateChat(h.ctx, sdk.CreateChatRequest{})
		require.NoError(t, err)
		require.Equal(t, hooks.SessionStart, c.Names()[5])
		require.Len(t, c.Events(), 6)
		require.Equal(t, string(store.ChatStatusWaiting), string(empty.Status))
		require.Equal(t, chatstate.DefaultTitle, empty.Title)
		sent, err = h.alice.SendMessage(h.ctx, empty.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("hello")})
		require.NoError(t, err)
		require.Equal(t, "rewritten: hello", textOf(sent.Message.Content))
		updated, err := h.alice.Chat(h.ctx, empty.ID)
		require.NoError(t, err)
		require.Equal(t, "rewritten: hello", updated.Title, "the first prompt's fallback title follows the override too")

		// A chat the caller cannot see is 404 before any hook is asked.
		bob, _, _ := h.newUser(t, "bob")
		n := len(c.Events())
		_, err = bob.SendMessage(h.ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("mine now")})
		requireAPIError(t, err, http.StatusNotFound, sdk.CodeNotFound)
		require.Len(t, c.Events(), n)
	})
}

// TestAdmissionHooksFailClosed: a denied prompt is 403 PROMPT_DENIED, a
// consumer that is down 503 HOOK_UNAVAILABLE, one that answers garbage 502
// HOOK_INVALID_RESPONSE, each naming the hook; nothing is written, and the
// chat takes prompts again once the consumer recovers.
func TestAdmissionHooksFailClosed(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		c := hookstest.New(t)
		h := setup(t, newStore, withHooks(c))
		chat, err := h.alice.CreateChat(h.ctx, sdk.CreateChatRequest{Content: sdk.Text("hi")})
		require.NoError(t, err)
		h.acquire(t, chat.ID)
		h.commitAssistant(t, chat.ID, "hello")
		h.finishTurn(t, chat.ID)
		h.abandon(t, chat.ID)
		before := h.allMessages(t, chat.ID)
		chats := func() int {
			list, err := h.alice.ListChats(h.ctx, sdk.ListChatsOptions{})
			require.NoError(t, err)
			return len(list)
		}
		require.Equal(t, 1, chats())

		for _, tc := range []struct {
			name   string
			answer func(hooks.Request) (int, string)
			status int
			code   string
			detail string
		}{
			{"denies", func(r hooks.Request) (int, string) {
				if r.Event == hooks.UserPromptSubmit {
					return http.StatusOK, `{"decision":"deny","reason":"no secrets in prompts"}`
				}
				return http.StatusOK, ""
			}, http.StatusForbidden, sdk.CodePromptDenied, "lifecycle hook user_prompt_submit denied the prompt: no secrets in prompts"},
			{"down", func(hooks.Request) (int, string) { return http.StatusServiceUnavailable, "" },
				http.StatusServiceUnavailable, sdk.CodeHookUnavailable, "lifecycle hook user_prompt_submit: consumer unreachable: status 503"},
			{"garbage", func(r hooks.Request) (int, string) {
				if r.Event == hooks.UserPromptSubmit {
					return http.StatusOK, `<html>`
				}
				return http.StatusOK, ""
			}, http.StatusBadGateway, sdk.CodeHookInvalidResponse, "lifecycle hook user_prompt_submit: invalid response"},
			{"a replacement that is no prompt", func(hooks.Request) (int, string) { return http.StatusOK, `{"updated_prompt":"   "}` },
				http.StatusBadGateway, sdk.CodeHookInvalidResponse, "updated_prompt is not a valid prompt"},
		} {
			c.SetAnswer(tc.answer)
			_, err := h.alice.SendMessage(h.ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("the key is hunter2")})
			e := requireAPIError(t, err, tc.status, tc.code)
			require.Contains(t, e.Message, "user_prompt_submit", tc.name)
			require.Contains(t, e.Detail, tc.detail, tc.name)
			if tc.code == sdk.CodePromptDenied {
				require.Contains(t, e.Message, "no secrets in prompts", "people see the consumer's reason")
			}
			_, err = h.alice.CreateChat(h.ctx, sdk.CreateChatRequest{Content: sdk.Text("the key is hunter2")})
			requireAPIError(t, err, tc.status, tc.code)
			_, err = h.alice.EditMessage(h.ctx, chat.ID, before[0].ID, sdk.EditChatMessageRequest{Content: sdk.Text("the key is hunter2")})
			requireAPIError(t, err, tc.status, tc.code)
			require.Equal(t, before, h.allMessages(t, chat.ID), "%s: nothing written", tc.name)
			require.Equal(t, 1, chats(), "%s: no chat created", tc.name)
		}
		// A session_start that fails stops a create before its prompt is sent.
		c.SetAnswer(func(r hooks.Request) (int, string) {
			if r.Event == hooks.SessionStart {
				return http.StatusOK, `{"decision":"deny"}`
			}
			return http.StatusOK, ""
		})
		n := len(c.Events())
		_, err = h.alice.CreateChat(h.ctx, sdk.CreateChatRequest{Content: sdk.Text("x")})
		e := requireAPIError(t, err, http.StatusBadGateway, sdk.CodeHookInvalidResponse)
		require.Contains(t, e.Message, "session_start")
		require.Equal(t, []hooks.Event{hooks.SessionStart}, c.Names()[n:])

		// The consumer is back: the chat takes the prompt.
		c.SetAnswer(nil)
		sent, err := h.alice.SendMessage(h.ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("fine now")})
		require.NoError(t, err)
		require.Equal(t, "fine now", textOf(sent.Message.Content))
		require.Equal(t, 1, chats())
	})
}

// TestAdmissionHooksDurable: a durable request is evaluated once: its
// replay answers from the claim without asking the hook again, and a
// request refused by the hook (nothing claimed) is evaluated again when
// retried, under the same event id.
func TestAdmissionHooksDurable(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		c := hookstest.New(t)
		c.SetAnswer(rewriter)
		h := setup(t, newStore, withHooks(c))

		createID := uuid.New()
		req := sdk.CreateChatRequest{Content: sdk.Text("start"), RequestID: &createID}
		var first, again sdk.CreateChatResponse
		require.NoError(t, h.alice.Do(h.ctx, http.MethodPost, "/chats", req, &first))
		require.Len(t, c.Events(), 2)
		require.Equal(t, createID.String(), c.Events()[1].SubmissionID)
		require.Equal(t, hooks.EventID(first.ID, 0, hooks.UserPromptSubmit, createID.String()), c.Events()[1].ID)
		// While its turn runs, a retry is answered from the claim, unasked.
		err := h.alice.Do(h.ctx, http.MethodPost, "/chats", req, &again)
		requireAPIError(t, err, http.StatusConflict, sdk.CodeInvocationInProgress)
		require.Len(t, c.Events(), 2)

		h.acquire(t, first.ID)
		h.commitAssistant(t, first.ID, "ok")
		h.finishTurn(t, first.ID)
		h.abandon(t, first.ID)
		require.NoError(t, h.alice.Do(h.ctx, http.MethodPost, "/chats", req, &again))
		require.True(t, *again.Replayed)
		require.Equal(t, first.ID, again.ID)
		require.Equal(t, chatstate.OutcomeCompleted, again.Outcome.Status, "the turn's outcome is recorded though hook context precedes the prompt")
		require.Len(t, c.Events(), 2, "a replayed create does not ask the hooks again")

		// Refused while the consumer is down: nothing is claimed, so the
		// retry is evaluated again, with the same event id.
		sendID := uuid.New()
		send := sdk.CreateChatMessageRequest{Content: sdk.Text("next"), RequestID: &sendID}
		c.SetAnswer(func(hooks.Request) (int, string) { return http.StatusBadGateway, "" })
		var out sdk.CreateChatMessageResponse
		err = h.alice.Do(h.ctx, http.MethodPost, "/chats/"+first.ID.String()+"/messages", send, &out)
		e := requireAPIError(t, err, http.StatusServiceUnavailable, sdk.CodeHookUnavailable)
		require.NotNil(t, e.RequestID, "the answer carries the request id")
		require.Equal(t, sendID, *e.RequestID)
		refused := c.Events()[len(c.Events())-1]

		c.SetAnswer(rewriter)
		out = sdk.CreateChatMessageResponse{}
		require.NoError(t, h.alice.Do(h.ctx, http.MethodPost, "/chats/"+first.ID.String()+"/messages", send, &out))
		require.False(t, *out.Replayed)
		require.Equal(t, "rewritten: next", textOf(out.Message.Content))
		accepted := c.Events()[len(c.Events())-1]
		require.Equal(t, refused.ID, accepted.ID, "a retry of the same request is the same event")
		n := len(c.Events())
		var replayed sdk.CreateChatMessageResponse
		err = h.alice.Do(h.ctx, http.MethodPost, "/chats/"+first.ID.String()+"/messages", send, &replayed)
		requireAPIError(t, err, http.StatusConflict, sdk.CodeInvocationInProgress)
		require.Len(t, c.Events(), n)

		h.acquire(t, first.ID)
		h.commitAssistant(t, first.ID, "ok")
		h.finishTurn(t, first.ID)
		require.NoError(t, h.alice.Do(h.ctx, http.MethodPost, "/chats/"+first.ID.String()+"/messages", send, &replayed))
		require.True(t, *replayed.Replayed)
		require.Equal(t, out.Message.ID, replayed.Message.ID)
		require.Len(t, c.Events(), n, "a replayed send does not ask the hook again")

		// A conflicting reuse of the id is answered from the claim, unasked.
		other := sdk.CreateChatMessageRequest{Content: sdk.Text("different"), RequestID: &sendID}
		err = h.alice.Do(h.ctx, http.MethodPost, "/chats/"+first.ID.String()+"/messages", other, &replayed)
		requireAPIError(t, err, http.StatusConflict, sdk.CodeInvocationConflict)
		require.Len(t, c.Events(), n)
	})
}
