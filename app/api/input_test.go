package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// jsonString quotes s as a JSON string.
func jsonString(s string) string {
	raw, _ := json.Marshal(s)
	return string(raw)
}

func textBody(text string) string {
	return `{"content":[{"type":"text","text":` + jsonString(text) + `}]}`
}

// TestMalformedInput: bad input gets a 4xx with a clear JSON error, never a
// 5xx, and changes nothing.
func TestMalformedInput(t *testing.T) {
	t.Parallel()
	const (
		maxText = 64 << 10
		maxBody = 1 << 20
	)
	unknownModel := uuid.NewString()
	long := strings.Repeat("a", maxText+1)
	manyLabels := map[string]string{}
	for i := range 33 {
		manyLabels[fmt.Sprint("k", i)] = "v"
	}
	manyLabelsJSON, _ := json.Marshal(map[string]any{"labels": manyLabels})
	type tc struct {
		name, method, path, body string
		status                   int
		code                     string
	}
	bad := func(name, method, path, body string) tc {
		return tc{name, method, path, body, http.StatusBadRequest, sdk.CodeValidation}
	}
	// A path whose id segment cannot name anything names no resource: 404,
	// whatever the body.
	notFound := func(name, method, path, body string) tc {
		return tc{name, method, path, body, http.StatusNotFound, sdk.CodeNotFound}
	}
	tooLarge := func(name, method, path, body string) tc {
		return tc{name, method, path, body, http.StatusRequestEntityTooLarge, sdk.CodeTooLarge}
	}
	cases := []tc{
		// POST /chats
		bad("create/bad json", "POST", "/chats", `{"content":[`),
		bad("create/not json", "POST", "/chats", `hello`),
		bad("create/empty body", "POST", "/chats", ``),
		bad("create/array body", "POST", "/chats", `[]`),
		bad("create/two values", "POST", "/chats", `{} {}`),
		bad("create/trailing garbage", "POST", "/chats", `{"content":[]} x`),
		bad("create/content as string", "POST", "/chats", `{"content":"hi"}`),
		bad("create/part as string", "POST", "/chats", `{"content":["hi"]}`),
		bad("create/text as number", "POST", "/chats", `{"content":[{"type":"text","text":5}]}`),
		bad("create/blank text", "POST", "/chats", textBody("  \n ")),
		bad("create/part type image", "POST", "/chats", `{"content":[{"type":"image","url":"https://example.com/x.png"}]}`),
		bad("create/part type missing", "POST", "/chats", `{"content":[{"text":"hi"}]}`),
		bad("create/output part type", "POST", "/chats", `{"content":[{"type":"tool-result","tool_call_id":"x","result":{}}]}`),
		bad("create/parent_chat_id nope", "POST", "/chats", `{"content":[],"parent_chat_id":"nope"}`),
		bad("create/parent_chat_id number", "POST", "/chats", `{"content":[],"parent_chat_id":7}`),
		bad("create/unknown parent", "POST", "/chats", `{"content":[],"parent_chat_id":"`+uuid.NewString()+`"}`),
		bad("create/model_config_id nope", "POST", "/chats", `{"content":[],"model_config_id":"nope"}`),
		bad("create/unknown model_config_id", "POST", "/chats", `{"content":[],"model_config_id":"`+unknownModel+`"}`),
		bad("create/reasoning_effort extreme", "POST", "/chats", `{"content":[],"reasoning_effort":"extreme"}`),
		bad("create/reasoning_effort number", "POST", "/chats", `{"content":[],"reasoning_effort":3}`),
		bad("create/labels as array", "POST", "/chats", `{"labels":["a"]}`),
		bad("create/label value number", "POST", "/chats", `{"labels":{"a":1}}`),
		bad("create/label key with colon", "POST", "/chats", `{"labels":{"a:b":"c"}}`),
		bad("create/too many labels", "POST", "/chats", string(manyLabelsJSON)),
		bad("create/title too long", "POST", "/chats", `{"title":"`+strings.Repeat("t", 201)+`"}`),
		bad("create/title as number", "POST", "/chats", `{"title":1}`),
		bad("create/tool name with space", "POST", "/chats", `{"unsafe_dynamic_tools":[{"name":"ask user"}]}`),
		bad("create/tool schema not object", "POST", "/chats", `{"unsafe_dynamic_tools":[{"name":"ask","input_schema":[1]}]}`),
		bad("create/duplicate tool", "POST", "/chats", `{"unsafe_dynamic_tools":[{"name":"ask"},{"name":"ask"}]}`),
		tooLarge("create/text over 64 KiB", "POST", "/chats", textBody(long)),
		tooLarge("create/parts over 64 KiB together", "POST", "/chats",
			`{"content":[{"type":"text","text":"`+strings.Repeat("a", maxText/2)+`"},{"type":"text","text":"`+strings.Repeat("b", maxText/2+1)+`"}]}`),
		tooLarge("create/body over 1 MiB", "POST", "/chats", `{"system_prompt":"`+strings.Repeat("s", maxBody)+`"}`),

		// POST /chats/{chat}/messages
		bad("send/empty content", "POST", "/chats/{chat}/messages", `{"content":[]}`),
		bad("send/no content", "POST", "/chats/{chat}/messages", `{}`),
		bad("send/null body", "POST", "/chats/{chat}/messages", `null`),
		bad("send/bad json", "POST", "/chats/{chat}/messages", `{"content":`),
		bad("send/content as string", "POST", "/chats/{chat}/messages", `{"content":"hi"}`),
		bad("send/busy_behavior number", "POST", "/chats/{chat}/messages", `{"content":[{"type":"text","text":"hi"}],"busy_behavior":1}`),
		bad("send/busy_behavior later", "POST", "/chats/{chat}/messages", `{"content":[{"type":"text","text":"hi"}],"busy_behavior":"later"}`),
		bad("send/reasoning_effort extreme", "POST", "/chats/{chat}/messages", `{"content":[{"type":"text","text":"hi"}],"reasoning_effort":"extreme"}`),
		bad("send/part type image", "POST", "/chats/{chat}/messages", `{"content":[{"type":"image"}]}`),
		bad("send/unknown model_config_id", "POST", "/chats/{chat}/messages", `{"content":[{"type":"text","text":"hi"}],"model_config_id":"`+unknownModel+`"}`),
		bad("send/file_id nope", "POST", "/chats/{chat}/messages", `{"content":[{"type":"text","text":"hi","file_id":"nope"}]}`),
		notFound("send/chat id nope", "POST", "/chats/nope/messages", textBody("hi")),
		tooLarge("send/text over 64 KiB", "POST", "/chats/{chat}/messages", textBody(long)),
		tooLarge("send/body over 1 MiB", "POST", "/chats/{chat}/messages", textBody(strings.Repeat("x", maxBody))),

		// PATCH /chats/{chat}
		bad("patch/bad json", "PATCH", "/chats/{chat}", `{"title":`),
		bad("patch/empty title", "PATCH", "/chats/{chat}", `{"title":""}`),
		bad("patch/blank title", "PATCH", "/chats/{chat}", `{"title":"   "}`),
		bad("patch/title too long", "PATCH", "/chats/{chat}", `{"title":"`+strings.Repeat("t", 201)+`"}`),
		bad("patch/archived as string", "PATCH", "/chats/{chat}", `{"archived":"yes"}`),
		bad("patch/pin_order negative", "PATCH", "/chats/{chat}", `{"pin_order":-1}`),
		bad("patch/pin_order as string", "PATCH", "/chats/{chat}", `{"pin_order":"1"}`),
		bad("patch/pin_order fraction", "PATCH", "/chats/{chat}", `{"pin_order":1.5}`),
		bad("patch/too many labels", "PATCH", "/chats/{chat}", string(manyLabelsJSON)),
		notFound("patch/chat id nope", "PATCH", "/chats/nope", `{"title":"x"}`),
		tooLarge("patch/body over 1 MiB", "PATCH", "/chats/{chat}", `{"title":"x","labels":{"a":"`+strings.Repeat("v", maxBody)+`"}}`),

		// PATCH /chats/{chat}/messages/{message}
		notFound("edit/message id abc", "PATCH", "/chats/{chat}/messages/abc", textBody("x")),
		notFound("edit/message id zero", "PATCH", "/chats/{chat}/messages/0", textBody("x")),
		notFound("edit/message id negative", "PATCH", "/chats/{chat}/messages/-1", textBody("x")),
		notFound("edit/message id overflow", "PATCH", "/chats/{chat}/messages/99999999999999999999", textBody("x")),
		bad("edit/empty content", "PATCH", "/chats/{chat}/messages/{message}", `{"content":[]}`),
		bad("edit/part type image", "PATCH", "/chats/{chat}/messages/{message}", `{"content":[{"type":"image"}]}`),
		bad("edit/reasoning_effort extreme", "PATCH", "/chats/{chat}/messages/{message}", `{"content":[{"type":"text","text":"x"}],"reasoning_effort":"extreme"}`),
		tooLarge("edit/text over 64 KiB", "PATCH", "/chats/{chat}/messages/{message}", textBody(long)),

		// queue, tool results, chat ids
		notFound("delete queued/id abc", "DELETE", "/chats/{chat}/queue/abc", ""),
		notFound("promote/id abc", "POST", "/chats/{chat}/queue/abc/promote", ""),
		notFound("promote/id zero", "POST", "/chats/{chat}/queue/0/promote", ""),
		bad("tool results/results as string", "POST", "/chats/{chat}/tool-results", `{"results":"x"}`),
		bad("tool results/none", "POST", "/chats/{chat}/tool-results", `{}`),
		bad("tool results/id as number", "POST", "/chats/{chat}/tool-results", `{"results":[{"tool_call_id":5}]}`),
		notFound("get/chat id nope", "GET", "/chats/nope", ""),
		notFound("get/chat id too long", "GET", "/chats/"+uuid.NewString()+"0", ""),
		notFound("interrupt/chat id nope", "POST", "/chats/nope/interrupt", ""),
		notFound("delete/chat id nope", "DELETE", "/chats/nope", ""),

		// queries
		bad("list/limit zero", "GET", "/chats?limit=0", ""),
		bad("list/limit abc", "GET", "/chats?limit=abc", ""),
		bad("list/limit huge", "GET", "/chats?limit=100000", ""),
		bad("list/after_id nope", "GET", "/chats?after_id=nope", ""),
		bad("list/archived maybe", "GET", "/chats?archived=maybe", ""),
		bad("list/label without colon", "GET", "/chats?label=team", ""),
		bad("list/label without key", "GET", "/chats?label=:blue", ""),
		bad("messages/limit negative", "GET", "/chats/{chat}/messages?limit=-1", ""),
		bad("messages/before_id abc", "GET", "/chats/{chat}/messages?before_id=abc", ""),
		bad("messages/after_id abc", "GET", "/chats/{chat}/messages?after_id=abc", ""),

		// routes
		{"route/unknown", "GET", "/nope", "", http.StatusNotFound, sdk.CodeNotFound},
		{"route/unknown under chats", "GET", "/chats/{chat}/nope", "", http.StatusNotFound, sdk.CodeNotFound},
		notFound("route/unknown word under chats", "GET", "/chats/foo", ""),
		notFound("route/unknown word under chats, POST", "POST", "/chats/foo", `{}`),
		notFound("route/unknown word under chats, PUT", "PUT", "/chats/foo", `{}`),
		notFound("route/unknown word with a known tail", "PUT", "/chats/foo/messages", `{}`),
		notFound("route/unknown word under chats, nested", "GET", "/chats/foo/bar", ""),
		{"route/known chat, wrong method", "PUT", "/chats/{chat}", `{}`, http.StatusMethodNotAllowed, sdk.CodeMethodNotAllowed},
		{"route/known word, wrong method", "PUT", "/chats/models", `{}`, http.StatusMethodNotAllowed, sdk.CodeMethodNotAllowed},
	}

	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		s := h.seed(t, W)
		count := func() int {
			list, err := h.admin.ListChats(h.ctx, sdk.ListChatsOptions{Archived: "all", Limit: 500})
			require.NoError(t, err)
			return len(list)
		}
		chats := count()
		before := h.view(t, s.id)
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				var body any
				if tc.body != "" || tc.method != "GET" && tc.method != "DELETE" {
					body = s.expand(tc.body)
				}
				for _, prefix := range []string{"/api/v2", "/api/experimental"} {
					r := h.raw(t, tc.method, prefix+s.expand(tc.path), body, "Authorization", "Bearer "+h.aliceToken)
					e := requireJSONError(t, r, tc.status, tc.code)
					if tc.code == sdk.CodeValidation && tc.status == http.StatusBadRequest && !strings.HasPrefix(tc.name, "route/") {
						require.NotEmpty(t, e.Validations, "a validation error names its field")
						require.NotEmpty(t, e.Validations[0].Field)
					}
				}
				require.Equal(t, before, h.view(t, s.id), "bad input changed the chat")
			})
		}
		require.Equal(t, chats, count(), "bad input created a chat")

		// Another method on a known path is a JSON error too.
		r := h.raw(t, "PUT", "/api/v2/chats", `{}`, "Authorization", "Bearer "+h.aliceToken)
		require.GreaterOrEqual(t, r.status, 400)
		require.Less(t, r.status, 500)
		var e sdk.Response
		require.NoError(t, json.Unmarshal(r.body, &e), "body: %s", r.body)
		require.NotEmpty(t, e.Code)
	})
}

// Go clients send zero UUIDs for unset fields: they mean absent.
func TestZeroUUIDsAreAbsent(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		zero := uuid.Nil
		text := []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "hello", FileID: &zero}}

		// The sdk types send "organization_id":"00000000-..." as Go clients do.
		chat, err := h.alice.CreateChat(h.ctx, sdk.CreateChatRequest{
			Content: text, ModelConfigID: &zero, ParentChatID: &zero,
		})
		require.NoError(t, err)
		require.Nil(t, chat.ParentChatID)
		require.Nil(t, chat.RootChatID)
		require.Nil(t, chat.LastModelConfigID)
		require.Equal(t, sdk.ChatStatusRunning, chat.Status)

		// The same in raw JSON, spelled out.
		z := `"00000000-0000-0000-0000-000000000000"`
		r := h.raw(t, "POST", "/api/v2/chats",
			`{"organization_id":`+z+`,"model_config_id":`+z+`,"parent_chat_id":`+z+
				`,"content":[{"type":"text","text":"hi","file_id":`+z+`}]}`,
			"Authorization", "Bearer "+h.aliceToken)
		require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)

		res, err := h.alice.SendMessage(h.ctx, chat.ID, sdk.CreateChatMessageRequest{Content: text, ModelConfigID: &zero})
		require.NoError(t, err)
		require.True(t, res.Queued)
		v := h.view(t, chat.ID)
		require.Nil(t, v.Messages.Messages[0].Content[0].FileID, "a text part keeps no file id")
		_, err = h.alice.EditMessage(h.ctx, chat.ID, v.Messages.Messages[0].ID, sdk.EditChatMessageRequest{Content: text, ModelConfigID: &zero})
		require.NoError(t, err)

		list, err := h.alice.ListChats(h.ctx, sdk.ListChatsOptions{})
		require.NoError(t, err)
		r = h.raw(t, "GET", "/api/v2/chats?after_id=00000000-0000-0000-0000-000000000000", nil, "Authorization", "Bearer "+h.aliceToken)
		require.Equal(t, http.StatusOK, r.status)
		require.Len(t, decode[[]sdk.Chat](t, r.body), len(list), "a zero after_id is no cursor")
	})
}

// A known model id and effort are accepted and remembered.
func TestModelAndEffort(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		models, err := h.alice.Models(h.ctx)
		require.NoError(t, err)
		demo := models.Models[0].ID
		chat, err := h.alice.CreateChat(h.ctx, sdk.CreateChatRequest{Content: sdk.Text("hi"), ModelConfigID: &demo, ReasoningEffort: "high"})
		require.NoError(t, err)
		require.NotNil(t, chat.LastModelConfigID)
		require.Equal(t, demo, *chat.LastModelConfigID)
		require.NotNil(t, chat.LastReasoningEffort)
		require.Equal(t, "high", *chat.LastReasoningEffort)
	})
}

// Empty content creates a waiting chat; it is refused where a message is
// required.
func TestEmptyContent(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		for _, body := range []string{`{}`, `{"content":[]}`, `{"content":null}`} {
			r := h.raw(t, "POST", "/api/v2/chats", body, "Authorization", "Bearer "+h.aliceToken)
			require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
			chat := decode[sdk.Chat](t, r.body)
			require.Equal(t, sdk.ChatStatusWaiting, chat.Status)
			v := h.requireState(t, chat.ID, W)
			require.Empty(t, v.Messages.Messages)
		}
		// A system prompt alone is still no first message.
		chat, err := h.alice.CreateChat(h.ctx, sdk.CreateChatRequest{SystemPrompt: "be brief"})
		require.NoError(t, err)
		require.Equal(t, sdk.ChatStatusWaiting, chat.Status)
		v := h.requireState(t, chat.ID, W)
		require.Empty(t, v.Messages.Messages, "the system prompt is model-only")
	})
}

// The text limit is 64 KiB of text per message, inclusive.
func TestTextLimitBoundary(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		chat, err := h.alice.CreateChat(h.ctx, sdk.CreateChatRequest{Content: sdk.Text(strings.Repeat("a", 64<<10))})
		require.NoError(t, err)
		_, err = h.alice.SendMessage(h.ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text(strings.Repeat("é", 32<<10))})
		require.NoError(t, err, "64 KiB of two-byte runes")
		before := h.view(t, chat.ID)
		_, err = h.alice.SendMessage(h.ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text(strings.Repeat("é", 32<<10) + "a")})
		requireAPIError(t, err, http.StatusRequestEntityTooLarge, sdk.CodeTooLarge)
		require.Equal(t, before, h.view(t, chat.ID))
	})
}

// A smaller configured body limit applies to every endpoint.
func TestConfiguredBodyLimit(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore, func(c *config.Config) { c.MaxBodyBytes = 4 << 10 })
		s := h.seed(t, W)
		body := textBody(strings.Repeat("x", 5<<10))
		for _, path := range []string{"/chats", "/chats/{chat}/messages"} {
			r := h.raw(t, "POST", "/api/v2"+s.expand(path), body, "Authorization", "Bearer "+h.aliceToken)
			requireJSONError(t, r, http.StatusRequestEntityTooLarge, sdk.CodeTooLarge)
		}
		r := h.raw(t, "POST", "/api/v2/chats", textBody(strings.Repeat("x", 3<<10)), "Authorization", "Bearer "+h.aliceToken)
		require.Equal(t, http.StatusCreated, r.status)
	})
}

// Text the databases cannot store as-is (a NUL character) is accepted or
// refused with a 400, the same on both stores, never a 5xx.
func TestNULCharacters(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		s := h.seed(t, A0)
		w := h.seed(t, W)
		nul := "a\u0000b"
		for _, tc := range []struct{ name, method, path, body string }{
			{"create text", "POST", "/chats", textBody(nul)},
			{"create title", "POST", "/chats", `{"title":` + jsonString(nul) + `}`},
			{"create system prompt", "POST", "/chats", `{"system_prompt":` + jsonString(nul) + `}`},
			{"create label", "POST", "/chats", `{"labels":{"k":` + jsonString(nul) + `}}`},
			{"create tool description", "POST", "/chats", `{"unsafe_dynamic_tools":[{"name":"ask","description":` + jsonString(nul) + `}]}`},
			{"create tool schema", "POST", "/chats", `{"unsafe_dynamic_tools":[{"name":"ask","input_schema":{"type":"object","description":` + jsonString(nul) + `}}]}`},
			{"send text", "POST", "/chats/{chat}/messages", textBody(nul)},
			{"rename", "PATCH", "/chats/" + w.id.String(), `{"title":` + jsonString(nul) + `}`},
			{"edit text", "PATCH", "/chats/" + w.id.String() + "/messages/" + fmt.Sprint(w.userMsg), textBody(nul)},
			{"tool result", "POST", "/chats/{chat}/tool-results", `{"results":[{"tool_call_id":"{call}","output":{"x":` + jsonString(nul) + `}}]}`},
			{"search", "GET", "/chats?q=" + url.QueryEscape(nul), ""},
			{"label filter", "GET", "/chats?label=" + url.QueryEscape("k:"+nul), ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var body any
				if tc.body != "" {
					body = s.expand(tc.body)
				}
				r := h.raw(t, tc.method, "/api/v2"+s.expand(tc.path), body, "Authorization", "Bearer "+h.aliceToken)
				require.Less(t, r.status, 500, "body: %s", r.body)
				if r.status >= 400 {
					requireJSONError(t, r, http.StatusBadRequest, sdk.CodeValidation)
				}
			})
		}
	})
}
