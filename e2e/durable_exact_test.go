package e2e_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

func texts(ss ...string) []sdk.ChatMessagePart {
	var parts []sdk.ChatMessagePart
	for _, s := range ss {
		parts = append(parts, sdk.ChatMessagePart{Type: sdk.PartText, Text: s})
	}
	return parts
}

// sendHash is request_sha256 of req sent to chat, as the SDK computes it.
func sendHash(t *testing.T, chat uuid.UUID, req sdk.CreateChatMessageRequest) string {
	t.Helper()
	b, err := sdk.SendMessageBinding(chat, req)
	require.NoError(t, err)
	h, err := b.SHA256()
	require.NoError(t, err)
	return h
}

// A request id is bound to the exact request: its endpoint, its chat, its
// content parts as sent and every field that changes what runs. Spellings
// of the same request (key order, whitespace, an explicit default) replay.
func TestDurableExactBinding(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		d := setup(t, newStore)
		chat, err := d.alice.CreateChat(d.ctx, sdk.CreateChatRequest{Title: "exact"})
		require.NoError(t, err)
		models, err := d.alice.Models(d.ctx)
		require.NoError(t, err)
		require.NotEmpty(t, models.Models)
		model := models.Models[0].ID

		post := func(path string, body any) (map[string]any, error) {
			var out map[string]any
			err := d.alice.Do(d.ctx, http.MethodPost, path, body, &out)
			return out, err
		}
		messages := "/chats/" + chat.ID.String() + "/messages"
		conflict := func(err error, id, audit uuid.UUID) {
			t.Helper()
			e := requireCode(t, err, http.StatusConflict, sdk.CodeInvocationConflict)
			require.NotNil(t, e.RequestID)
			require.Equal(t, id, *e.RequestID)
			require.NotNil(t, e.AuditID, "the caller's own claim: its audit reference")
			require.Equal(t, audit, *e.AuditID)
		}

		// send_message: ["a","b"] is not ["ab"].
		d.llm.Enqueue(llmtest.TextChunks("ok"))
		id := uuid.New()
		first, err := post(messages, map[string]any{"content": texts("a", "b"), "request_id": id})
		require.NoError(t, err)
		audit := uuid.MustParse(first["audit_id"].(string))
		d.waitStatus(t, chat.ID, sdk.ChatStatusWaiting)

		_, err = post(messages, map[string]any{"content": texts("ab"), "request_id": id})
		conflict(err, id, audit)
		for name, extra := range map[string]map[string]any{
			"busy_behavior":    {"busy_behavior": "interrupt"},
			"reasoning_effort": {"reasoning_effort": "high"},
			"model_config_id":  {"model_config_id": model},
		} {
			body := map[string]any{"content": texts("a", "b"), "request_id": id}
			for k, v := range extra {
				body[k] = v
			}
			_, err = post(messages, body)
			require.Error(t, err, name)
			conflict(err, id, audit)
		}
		// The same request spelled otherwise replays.
		again, err := post(messages, json.RawMessage(`{ "request_id":"`+id.String()+`", "busy_behavior":"queue",
			"content":[{"text":"a","type":"text"}, {"type":"text","text":"b"}]}`))
		require.NoError(t, err)
		require.Equal(t, true, again["replayed"])

		// Lookups: request_sha256 binds the whole request, content_sha256
		// (the text) still works for clients that hash only text.
		want := sendHash(t, chat.ID, sdk.CreateChatMessageRequest{Content: texts("a", "b")})
		other := sendHash(t, chat.ID, sdk.CreateChatMessageRequest{Content: texts("ab")})
		require.NotEqual(t, want, other)
		lookup := "/requests/" + id.String()
		var looked map[string]any
		require.NoError(t, d.alice.Do(d.ctx, http.MethodGet, lookup+"?request_sha256="+want, nil, &looked))
		require.Equal(t, true, looked["replayed"])
		require.NoError(t, d.alice.Do(d.ctx, http.MethodGet, lookup+"?content_sha256="+hashText("ab"), nil, &looked))
		require.Equal(t, true, looked["replayed"])
		err = d.alice.Do(d.ctx, http.MethodGet, lookup+"?request_sha256="+other, nil, nil)
		conflict(err, id, audit)
		err = d.alice.Do(d.ctx, http.MethodGet, lookup+"?request_sha256=xyz", nil, nil)
		e := requireCode(t, err, http.StatusBadRequest, sdk.CodeValidation)
		require.Equal(t, id, *e.RequestID)

		// create_chat: every field that changes what runs is bound.
		d.llm.Enqueue(llmtest.TextChunks("made"))
		cid := uuid.New()
		create := map[string]any{
			"content": sdk.Text("make"), "request_id": cid, "title": "t", "labels": map[string]string{"k": "v"},
			"system_prompt": "be brief",
		}
		made, err := post("/chats", create)
		require.NoError(t, err)
		created := uuid.MustParse(made["id"].(string))
		caudit := uuid.MustParse(made["audit_id"].(string))
		d.waitStatus(t, created, sdk.ChatStatusWaiting)
		for name, change := range map[string]map[string]any{
			"content":              {"content": texts("ma", "ke")},
			"title":                {"title": "u"},
			"labels":               {"labels": map[string]string{"k": "w"}},
			"system_prompt":        {"system_prompt": "be long"},
			"model_config_id":      {"model_config_id": model},
			"reasoning_effort":     {"reasoning_effort": "low"},
			"unsafe_dynamic_tools": {"unsafe_dynamic_tools": []map[string]any{{"name": "ask", "input_schema": map[string]any{"type": "object"}}}},
			"parent_chat_id":       {"parent_chat_id": chat.ID},
		} {
			body := map[string]any{}
			for k, v := range create {
				body[k] = v
			}
			for k, v := range change {
				body[k] = v
			}
			_, err := post("/chats", body)
			require.Error(t, err, name)
			conflict(err, cid, caudit)
		}
		replayed, err := post("/chats", create)
		require.NoError(t, err)
		require.Equal(t, true, replayed["replayed"])
		require.Equal(t, created.String(), replayed["id"])

		// A create id replayed on the other endpoint, for the chat it
		// created, is another request.
		calls := len(d.llm.Requests())
		_, err = post("/chats/"+created.String()+"/messages", map[string]any{"content": sdk.Text("make"), "request_id": cid})
		conflict(err, cid, caudit)
		// And a send id on POST /chats.
		_, err = post("/chats", map[string]any{"content": texts("a", "b"), "request_id": id})
		conflict(err, id, audit)
		require.Len(t, d.llm.Requests(), calls, "a conflict runs nothing")
		chats, err := d.alice.ListChats(d.ctx, sdk.ListChatsOptions{})
		require.NoError(t, err)
		require.Len(t, chats, 2, "no chat was created by a conflict")
	})
}

// Claims admitted before request_sha256 existed (the column is empty after
// the upgrade) are matched as before — caller and text — plus endpoint and
// chat: a retry of such a request replays instead of conflicting.
func TestDurableClaimFromBeforeRequestHash(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		d := setup(t, newStore)
		chat, err := d.alice.CreateChat(d.ctx, sdk.CreateChatRequest{Title: "legacy"})
		require.NoError(t, err)
		me, err := d.alice.Me(d.ctx)
		require.NoError(t, err)

		// Admit as the previous version did: no request hash.
		d.llm.Enqueue(llmtest.TextChunks("old answer"))
		id, made := uuid.New(), uuid.New()
		err = d.app.Internals().Machine.Do(d.ctx, func(t *chatstate.Tx) error {
			res, err := t.SendMessage(chat.ID, chatstate.UserInput{
				Content: sdk.Text("hello"), CreatedBy: uuid.NullUUID{UUID: me.ID, Valid: true},
				RequestID: uuid.NullUUID{UUID: id, Valid: true},
			}, chatstate.BusyQueue)
			if err != nil {
				return err
			}
			if _, err := t.AdmitRequest(chatstate.Claim{
				RequestID: id, CallerID: me.ID, ContentSHA256: hashText("hello"), Kind: sdk.EndpointSendMessage,
				ChatID: chat.ID, MessageID: &res.Message.ID, Response: json.RawMessage(`{"queued":false}`),
			}); err != nil {
				return err
			}
			_, err = t.AdmitRequest(chatstate.Claim{
				RequestID: made, CallerID: me.ID, ContentSHA256: hashText(""), Kind: sdk.EndpointCreateChat,
				ChatID: chat.ID, Response: json.RawMessage(`{}`),
			})
			return err
		})
		require.NoError(t, err)
		d.waitStatus(t, chat.ID, sdk.ChatStatusWaiting)

		out, err := d.send(d.alice, chat.ID, id, "hello")
		require.NoError(t, err, "a retry of a request admitted before the upgrade is no conflict")
		require.Equal(t, true, out["replayed"])
		_, err = d.send(d.alice, chat.ID, id, "hello!")
		requireCode(t, err, http.StatusConflict, sdk.CodeInvocationConflict)
		// Its endpoint is bound too.
		_, err = d.send(d.alice, chat.ID, made, "")
		require.Error(t, err)
		_, err = d.send(d.alice, chat.ID, made, "x")
		requireCode(t, err, http.StatusConflict, sdk.CodeInvocationConflict)
		// A request_sha256 lookup cannot be checked against it; content_sha256 is.
		want := sendHash(t, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("hello")})
		require.NoError(t, d.alice.Do(d.ctx, http.MethodGet, "/requests/"+id.String()+"?request_sha256="+want+"&content_sha256="+hashText("hello"), nil, nil))
	})
}
