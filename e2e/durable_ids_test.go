package e2e_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// Every error answer to a request with a valid request_id carries it:
// validation, not-found, archived, too large, QUEUE_FULL and lookups.
func TestDurableErrorsCarryRequestID(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		d := setup(t, newStore)
		chat, err := d.alice.CreateChat(d.ctx, sdk.CreateChatRequest{Title: "ids"})
		require.NoError(t, err)
		bobChat, err := d.bob.CreateChat(d.ctx, sdk.CreateChatRequest{Title: "bob's"})
		require.NoError(t, err)
		archived, err := d.alice.CreateChat(d.ctx, sdk.CreateChatRequest{Title: "archived"})
		require.NoError(t, err)
		yes := true
		require.NoError(t, d.alice.UpdateChat(d.ctx, archived.ID, sdk.UpdateChatRequest{Archived: &yes}))

		carries := func(name string, err error, status int, code string, id uuid.UUID) {
			t.Helper()
			e := requireCode(t, err, status, code)
			require.NotNil(t, e.RequestID, "%s: no request_id in %s", name, e.Error())
			require.Equal(t, id, *e.RequestID, name)
		}
		messages := func(chat string) string { return "/chats/" + chat + "/messages" }
		send := func(path string, body map[string]any) (uuid.UUID, error) {
			id := uuid.New()
			body["request_id"] = id
			return id, d.alice.Do(d.ctx, http.MethodPost, path, body, nil)
		}
		text := sdk.Text("hi")
		for _, c := range []struct {
			name   string
			path   string
			body   map[string]any
			status int
			code   string
		}{
			{"content of the wrong type", messages(chat.ID.String()), map[string]any{"content": "hi"}, http.StatusBadRequest, sdk.CodeValidation},
			{"empty content", messages(chat.ID.String()), map[string]any{"content": []any{}}, http.StatusBadRequest, sdk.CodeValidation},
			{"busy_behavior", messages(chat.ID.String()), map[string]any{"content": text, "busy_behavior": "later"}, http.StatusBadRequest, sdk.CodeValidation},
			{"reasoning_effort", messages(chat.ID.String()), map[string]any{"content": text, "reasoning_effort": "max"}, http.StatusBadRequest, sdk.CodeValidation},
			{"unknown model", messages(chat.ID.String()), map[string]any{"content": text, "model_config_id": uuid.New()}, http.StatusBadRequest, sdk.CodeValidation},
			{"bad chat id", messages("not-a-uuid"), map[string]any{"content": text}, http.StatusNotFound, sdk.CodeNotFound},
			{"no such chat", messages(uuid.NewString()), map[string]any{"content": text}, http.StatusNotFound, sdk.CodeNotFound},
			{"another user's chat", messages(bobChat.ID.String()), map[string]any{"content": text}, http.StatusNotFound, sdk.CodeNotFound},
			{"archived chat", messages(archived.ID.String()), map[string]any{"content": text}, http.StatusBadRequest, sdk.CodeChatArchived},
			{"text too large", messages(chat.ID.String()), map[string]any{"content": sdk.Text(strings.Repeat("x", 70<<10))}, http.StatusRequestEntityTooLarge, sdk.CodeTooLarge},
			{"create: labels", "/chats", map[string]any{"content": text, "labels": map[string]string{"a:b": "c"}}, http.StatusBadRequest, sdk.CodeValidation},
			{"create: title", "/chats", map[string]any{"content": text, "title": strings.Repeat("t", 300)}, http.StatusBadRequest, sdk.CodeValidation},
			{"create: tool name", "/chats", map[string]any{"content": text, "unsafe_dynamic_tools": []map[string]any{{"name": "no spaces"}}}, http.StatusBadRequest, sdk.CodeValidation},
			{"create: no such parent", "/chats", map[string]any{"content": text, "parent_chat_id": uuid.New()}, http.StatusBadRequest, sdk.CodeValidation},
			{"create: number without canonical form", "/chats", map[string]any{"content": text,
				"unsafe_dynamic_tools": []map[string]any{{"name": "t", "input_schema": map[string]any{"max": json.Number("1e400")}}}}, http.StatusBadRequest, sdk.CodeValidation},
		} {
			id, err := send(c.path, c.body)
			carries(c.name, err, c.status, c.code, id)
		}

		// An invalid request_id is not echoed.
		err = d.alice.Do(d.ctx, http.MethodPost, messages(chat.ID.String()), map[string]any{"content": text, "request_id": "nope"}, nil)
		e := requireCode(t, err, http.StatusBadRequest, sdk.CodeInvalidInvocationID)
		require.Nil(t, e.RequestID)

		// Lookups.
		missing := uuid.New()
		err = d.alice.Do(d.ctx, http.MethodGet, "/requests/"+missing.String(), nil, nil)
		carries("lookup: not found", err, http.StatusNotFound, sdk.CodeInvocationNotFound, missing)
		err = d.alice.Do(d.ctx, http.MethodGet, "/requests/"+missing.String()+"?content_sha256=00", nil, nil)
		carries("lookup: bad hash", err, http.StatusBadRequest, sdk.CodeValidation, missing)

		// QUEUE_FULL: fill the queue behind a turn that does not finish.
		hang := llmtest.Hang()
		d.llm.Enqueue(hang)
		_, err = send(messages(chat.ID.String()), map[string]any{"content": sdk.Text("run")})
		require.NoError(t, err)
		<-hang.Started()
		for i := 0; ; i++ {
			require.Less(t, i, 100, "the queue never filled")
			id, err := send(messages(chat.ID.String()), map[string]any{"content": sdk.Text("queued")})
			if err != nil {
				carries("queue full", err, http.StatusTooManyRequests, sdk.CodeQueueFull, id)
				break
			}
		}
		_, err = d.alice.Interrupt(d.ctx, chat.ID)
		require.NoError(t, err)
	})
}

// Every answer with an audit reference carries audit_id: admissions,
// replays, INVOCATION_IN_PROGRESS and a conflict with the caller's own
// claim; another caller never learns it.
func TestDurableAnswersCarryAuditID(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		d := setup(t, newStore)
		hang := llmtest.Hang()
		d.llm.Enqueue(hang)
		id := uuid.New()
		var made sdk.CreateChatResponse
		require.NoError(t, d.alice.Do(d.ctx, http.MethodPost, "/chats", map[string]any{"content": sdk.Text("go"), "request_id": id, "title": "t"}, &made))
		require.NotNil(t, made.AuditID)
		require.Equal(t, id, *made.RequestID)
		audit := *made.AuditID
		<-hang.Started()

		err := d.alice.Do(d.ctx, http.MethodPost, "/chats", map[string]any{"content": sdk.Text("go"), "request_id": id, "title": "t"}, nil)
		e := requireCode(t, err, http.StatusConflict, sdk.CodeInvocationInProgress)
		require.Equal(t, audit, *e.AuditID)
		require.Equal(t, made.ID, *e.ChatID)
		err = d.alice.Do(d.ctx, http.MethodPost, "/chats", map[string]any{"content": sdk.Text("other"), "request_id": id, "title": "t"}, nil)
		e = requireCode(t, err, http.StatusConflict, sdk.CodeInvocationConflict)
		require.Equal(t, audit, *e.AuditID, "the caller's own claim")
		err = d.bob.Do(d.ctx, http.MethodPost, "/chats", map[string]any{"content": sdk.Text("go"), "request_id": id, "title": "t"}, nil)
		e = requireCode(t, err, http.StatusConflict, sdk.CodeInvocationConflict)
		require.Equal(t, id, *e.RequestID)
		require.Nil(t, e.AuditID, "another caller's audit reference is not shown")
		err = d.bob.Do(d.ctx, http.MethodGet, "/requests/"+id.String(), nil, nil)
		e = requireCode(t, err, http.StatusConflict, sdk.CodeInvocationConflict)
		require.Nil(t, e.AuditID)

		_, err = d.alice.Interrupt(d.ctx, made.ID)
		require.NoError(t, err)
		d.waitStatus(t, made.ID, sdk.ChatStatusWaiting)
		var replay sdk.CreateChatResponse
		require.NoError(t, d.alice.Do(d.ctx, http.MethodGet, "/requests/"+id.String(), nil, &replay))
		require.Equal(t, audit, *replay.AuditID)
		require.True(t, *replay.Replayed)
	})
}
