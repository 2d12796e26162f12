package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store/dbtest"
)

// fuzzRoute is a handler that decodes a body or a query.
type fuzzRoute struct {
	method, path string
	// chat makes the chat the route acts on, returning the values for
	// {message} and {call} in path and body.
	chat func(t *testing.T, h *fixture) seeded
}

func fuzzRoutes() []fuzzRoute {
	none := func(*testing.T, *fixture) seeded { return seeded{} }
	empty := func(t *testing.T, h *fixture) seeded {
		c, err := h.alice.CreateChat(h.ctx, sdk.CreateChatRequest{})
		require.NoError(t, err)
		return seeded{id: c.ID}
	}
	withMessage := func(t *testing.T, h *fixture) seeded {
		c, err := h.alice.CreateChat(h.ctx, sdk.CreateChatRequest{Content: sdk.Text("first")})
		require.NoError(t, err)
		msgs, err := h.alice.ChatMessages(h.ctx, c.ID, sdk.MessagesOptions{})
		require.NoError(t, err)
		return seeded{id: c.ID, userMsg: msgs.Messages[0].ID}
	}
	action := func(t *testing.T, h *fixture) seeded { return h.seed(t, A0) }
	return []fuzzRoute{
		{"POST", "/chats", none},
		{"POST", "/chats/{chat}/messages", empty},
		{"PATCH", "/chats/{chat}", empty},
		{"PATCH", "/chats/{chat}/messages/{message}", withMessage},
		{"POST", "/chats/{chat}/tool-results", action},
		{"POST", "/chats/{chat}/tool-approvals", action},
		{"POST", "/auth/login", none},
		{"GET", "/chats", none},
		{"GET", "/chats/{chat}/messages", withMessage},
	}
}

// FuzzDecoders sends arbitrary bodies and query strings to every handler
// that decodes one. Whatever comes in, the answer is never a 5xx, every
// error is the API's JSON error, and every success body is JSON.
//
// As a plain test it runs the seed corpus; to fuzz for a while:
//
//	go test -run='^$' -fuzz='^FuzzDecoders$' -fuzztime=20s ./app/api/
func FuzzDecoders(f *testing.F) {
	h := setupOn(f, dbtest.NewSQLite(f))
	routes := fuzzRoutes()
	route := func(method, path string) uint8 {
		for i, r := range routes {
			if r.method == method && r.path == path {
				return uint8(i)
			}
		}
		f.Fatalf("no fuzz route %s %s", method, path)
		return 0
	}
	seeds := []struct {
		method, path, query, body string
	}{
		{"POST", "/chats", "", `{"content":[{"type":"text","text":"hello"}]}`},
		{"POST", "/chats", "", `{}`},
		{"POST", "/chats", "", `{"content":[],"title":"t","system_prompt":"s","labels":{"a":"b"},"reasoning_effort":"low"}`},
		{"POST", "/chats", "", `{"organization_id":"00000000-0000-0000-0000-000000000000","model_config_id":"00000000-0000-0000-0000-000000000000","content":[{"type":"text","text":"x","file_id":"00000000-0000-0000-0000-000000000000"}]}`},
		{"POST", "/chats", "", `{"unsafe_dynamic_tools":[{"name":"ask","description":"d","input_schema":{"type":"object"}}]}`},
		{"POST", "/chats", "", `{"content":"hi"}`},
		{"POST", "/chats", "", `{"content":[{"type":"image"}]}`},
		{"POST", "/chats", "", `{"parent_chat_id":"nope"}`},
		{"POST", "/chats", "", `{"labels":{"a:b":"c"}}`},
		{"POST", "/chats", "", `{"content":[{"type":"text","text":"a\u0000b"}]}`},
		{"POST", "/chats", "", `{`},
		{"POST", "/chats", "", `null`},
		{"POST", "/chats", "", `[1,2]`},
		{"POST", "/chats", "", "\xff\xfe"},
		{"POST", "/chats/{chat}/messages", "", `{"content":[{"type":"text","text":"hi"}],"busy_behavior":"interrupt"}`},
		{"POST", "/chats/{chat}/messages", "", `{"content":[{"type":"text","text":"hi"}],"busy_behavior":"later"}`},
		{"POST", "/chats/{chat}/messages", "", `{"content":[{"type":"text","text":"hi"}],"busy_behavior":1}`},
		{"POST", "/chats/{chat}/messages", "", `{"content":[]}`},
		{"POST", "/chats/{chat}/messages", "", `{"content":[{"type":"text","text":"hi"}],"request_id":"nope"}`},
		{"PATCH", "/chats/{chat}", "", `{"title":"renamed","pin_order":2,"labels":{"k":"v"}}`},
		{"PATCH", "/chats/{chat}", "", `{"archived":true}`},
		{"PATCH", "/chats/{chat}", "", `{"archived":"yes","pin_order":-1}`},
		{"PATCH", "/chats/{chat}/messages/{message}", "", `{"content":[{"type":"text","text":"edited"}],"reasoning_effort":"high"}`},
		{"PATCH", "/chats/{chat}/messages/{message}", "", `{"content":[{"type":"reasoning","text":"x"}]}`},
		{"POST", "/chats/{chat}/tool-results", "", `{"results":[{"tool_call_id":"{call}","output":{"ok":true}}]}`},
		{"POST", "/chats/{chat}/tool-results", "", `{"results":[{"tool_call_id":"{call}","output":1},{"tool_call_id":"{call}"}]}`},
		{"POST", "/chats/{chat}/tool-results", "", `{"results":[{"tool_call_id":"other","output":{}}]}`},
		{"POST", "/chats/{chat}/tool-results", "", `{"results":{}}`},
		{"POST", "/chats/{chat}/tool-approvals", "", `{"approvals":[{"tool_call_id":"{call}","approved":true}]}`},
		{"POST", "/chats/{chat}/tool-approvals", "", `{"approvals":[{"tool_call_id":"{call}","approved":"no","reason":7}]}`},
		{"POST", "/chats/{chat}/tool-approvals", "", `{"approvals":[]}`},
		{"POST", "/chats/{chat}/tool-approvals", "", `{"approvals":null}`},
		{"PATCH", "/chats/{chat}", "", `{"tool_approval":"always"}`},
		{"PATCH", "/chats/{chat}", "", `{"tool_approval":3}`},
		{"POST", "/chats", "", `{"content":[{"type":"text","text":"hi"}],"tool_approval":"sometimes"}`},
		{"POST", "/auth/login", "", `{"token":"chatd_nope"}`},
		{"POST", "/auth/login", "", `{"token":5}`},
		{"GET", "/chats", "q=report&archived=all&label=team:blue&limit=10", ""},
		{"GET", "/chats", "after_id=nope&limit=-3", ""},
		{"GET", "/chats", "q=%25_%5C&label=%00:%00", ""},
		{"GET", "/chats/{chat}/messages", "limit=1&before_id=99", ""},
		{"GET", "/chats/{chat}/messages", "after_id=x", ""},
	}
	for _, s := range seeds {
		f.Add(route(s.method, s.path), s.query, []byte(s.body))
	}

	f.Fuzz(func(t *testing.T, n uint8, query string, body []byte) {
		r := routes[int(n)%len(routes)]
		s := r.chat(t, h)
		call := s.call
		if call == "" {
			call = "call-none"
		}
		path := strings.NewReplacer("{chat}", s.id.String(), "{message}", strconv.FormatInt(s.userMsg, 10)).Replace(r.path)
		body = bytes.ReplaceAll(body, []byte("{call}"), []byte(call))

		var rd io.Reader
		if r.method != "GET" {
			rd = bytes.NewReader(body)
		}
		req := httptest.NewRequest(r.method, "/api/v2"+path, rd)
		req.URL.RawQuery = query
		req.Header.Set("Authorization", "Bearer "+h.aliceToken)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.app.Handler().ServeHTTP(rec, req)

		status, out := rec.Code, rec.Body.Bytes()
		if status >= 500 {
			t.Fatalf("%s %s?%s with %q: %d %s", r.method, path, query, body, status, out)
		}
		if status >= 400 {
			if ct := rec.Header().Get("Content-Type"); !strings.Contains(ct, "application/json") {
				t.Fatalf("error with Content-Type %q: %d %s", ct, status, out)
			}
			var e sdk.Response
			if err := json.Unmarshal(out, &e); err != nil || e.Message == "" || e.Code == "" {
				t.Fatalf("error body is not the API's JSON error: %d %s (%v)", status, out, err)
			}
			return
		}
		if status != http.StatusNoContent && !json.Valid(out) {
			t.Fatalf("success body is not JSON: %d %s", status, out)
		}
	})
}
