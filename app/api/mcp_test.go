package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/api"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// fakeMCP is the configured MCP servers as api.MCPServers sees them.
type fakeMCP struct {
	servers []sdk.MCPServer
}

var _ api.MCPServers = (*fakeMCP)(nil)

func (f *fakeMCP) Status(context.Context, tools.User) []sdk.MCPServer { return f.servers }

func (f *fakeMCP) Allows(id uuid.UUID, _ tools.User) bool {
	for _, s := range f.servers {
		if s.ID == id {
			return true
		}
	}
	return false
}

type noModels struct{}

func (noModels) List() []sdk.ChatModel { return nil }

// mcpFixture is the API alone (api.New, no worker) with a fake MCP, so the
// tests choose what is configured; app.New wires the real manager.
type mcpFixture struct {
	ctx   context.Context
	alice *sdk.Client
	srv   *httptest.Server
}

func setupMCP(t *testing.T, s store.Store, mcp api.MCPServers) *mcpFixture {
	t.Helper()
	ctx := context.Background()
	m := chatstate.New(s, pubsub.NewMemory(), chatstate.Config{})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := httptest.NewServer(api.New(api.Config{}, api.Deps{Machine: m, Store: s, Tokens: auth.New(s, clock.Real{}, log, auth.Config{}), Models: noModels{}, Log: log, MCP: mcp}))
	t.Cleanup(srv.Close)
	tok, _, err := auth.CreateToken(ctx, s, "alice", false, "test", time.Now())
	require.NoError(t, err)
	return &mcpFixture{ctx: ctx, srv: srv, alice: &sdk.Client{BaseURL: srv.URL, Token: tok, HTTP: srv.Client()}}
}

// selection is a chat's mcp_server_ids as the JSON carries it.
func (f *mcpFixture) selection(t *testing.T, chat json.RawMessage) json.RawMessage {
	t.Helper()
	var fields map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(chat, &fields))
	raw, ok := fields["mcp_server_ids"]
	require.True(t, ok, "the chat shows mcp_server_ids: %s", chat)
	return raw
}

// create posts body and returns the created chat's id and JSON.
func (f *mcpFixture) create(t *testing.T, body map[string]any) (uuid.UUID, json.RawMessage) {
	t.Helper()
	var raw json.RawMessage
	require.NoError(t, f.alice.Do(f.ctx, http.MethodPost, "/chats", body, &raw))
	var c sdk.Chat
	require.NoError(t, json.Unmarshal(raw, &c))
	return c.ID, raw
}

// get returns the chat's JSON as GET /chats/{chat} answers it.
func (f *mcpFixture) get(t *testing.T, id uuid.UUID) json.RawMessage {
	t.Helper()
	var raw json.RawMessage
	require.NoError(t, f.alice.Do(f.ctx, http.MethodGet, "/chats/"+id.String(), nil, &raw))
	return raw
}

func TestChatMCPServerSelection(t *testing.T) {
	t.Parallel()
	one, two, unknown := uuid.New(), uuid.New(), uuid.New()
	mcp := &fakeMCP{servers: []sdk.MCPServer{
		{ID: one, Name: "one", Transport: sdk.MCPTransportStdio, State: sdk.MCPStateConnected},
		{ID: two, Name: "two", Transport: sdk.MCPTransportStreamableHTTP, State: sdk.MCPStateConnecting},
	}}
	list := func(ids ...uuid.UUID) string {
		b, _ := json.Marshal(ids)
		return string(b)
	}
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setupMCP(t, newStore(t), mcp)

		t.Run("create", func(t *testing.T) {
			for _, tc := range []struct {
				name string
				ids  any // absent when nil
				want string
			}{
				{"absent is every server", nil, `null`},
				{"null is every server", json.RawMessage(`null`), `null`},
				{"empty is none", []uuid.UUID{}, `[]`},
				{"a list, in order", []uuid.UUID{two, one}, list(two, one)},
				{"duplicates count once", []uuid.UUID{two, one, two}, list(two, one)},
			} {
				body := map[string]any{"title": tc.name}
				if tc.ids != nil {
					body["mcp_server_ids"] = tc.ids
				}
				id, created := f.create(t, body)
				require.JSONEq(t, tc.want, string(f.selection(t, created)), tc.name)
				require.JSONEq(t, tc.want, string(f.selection(t, f.get(t, id))), tc.name)
			}
		})

		// The selection changes what runs, so a durable create binds it:
		// the same request id with another selection is a conflict, and
		// null (every server) is not [] (none).
		t.Run("durable create binds it", func(t *testing.T) {
			for _, tc := range []struct {
				name        string
				first, then any // absent when nil
			}{
				{"another list", []uuid.UUID{one}, []uuid.UUID{two}},
				{"every server then none", nil, []uuid.UUID{}},
				{"none then every server", []uuid.UUID{}, json.RawMessage(`null`)},
			} {
				body := func(ids any) map[string]any {
					b := map[string]any{"title": "bound", "content": sdk.Text("go")}
					if ids != nil {
						b["mcp_server_ids"] = ids
					}
					return b
				}
				requestID := uuid.New()
				first, then := body(tc.first), body(tc.then)
				first["request_id"], then["request_id"] = requestID, requestID
				require.NoError(t, f.alice.Do(f.ctx, http.MethodPost, "/chats", first, nil), tc.name)
				// No worker runs here: the same request is in progress.
				var e *sdk.Error
				require.ErrorAs(t, f.alice.Do(f.ctx, http.MethodPost, "/chats", first, nil), &e, tc.name)
				require.Equal(t, sdk.CodeInvocationInProgress, e.Code, "%s: the same request", tc.name)
				require.ErrorAs(t, f.alice.Do(f.ctx, http.MethodPost, "/chats", then, nil), &e, tc.name)
				require.Equal(t, sdk.CodeInvocationConflict, e.Code, tc.name)
			}
			// Repeats are dropped before hashing: the SDK's binding of a list
			// with a repeat is the server's.
			withRepeat, err := sdk.CreateChatBinding(sdk.CreateChatRequest{MCPServerIDs: []uuid.UUID{two, one, two}})
			require.NoError(t, err)
			without, err := sdk.CreateChatBinding(sdk.CreateChatRequest{MCPServerIDs: []uuid.UUID{two, one}})
			require.NoError(t, err)
			require.Equal(t, without, withRepeat)
		})

		t.Run("patch", func(t *testing.T) {
			id, _ := f.create(t, map[string]any{"title": "patched", "mcp_server_ids": []uuid.UUID{one}})
			for _, tc := range []struct {
				name string
				body string
				want string
			}{
				{"absent leaves it", `{"title":"renamed"}`, list(one)},
				{"a list replaces it", `{"mcp_server_ids":` + list(two, one) + `}`, list(two, one)},
				{"empty is none", `{"mcp_server_ids":[]}`, `[]`},
				{"null is every server again", `{"mcp_server_ids":null}`, `null`},
				{"a list again", `{"mcp_server_ids":` + list(two, two) + `}`, list(two)},
			} {
				require.NoError(t, f.alice.Do(f.ctx, http.MethodPatch, "/chats/"+id.String(), json.RawMessage(tc.body), nil), tc.name)
				require.JSONEq(t, tc.want, string(f.selection(t, f.get(t, id))), tc.name)
			}

			// The sdk's request types send the same.
			require.NoError(t, f.alice.UpdateChat(f.ctx, id, sdk.UpdateChatRequest{MCPServerIDs: sdk.SelectMCPServers(one)}))
			c, err := f.alice.Chat(f.ctx, id)
			require.NoError(t, err)
			require.Equal(t, []uuid.UUID{one}, c.MCPServerIDs)
			title := "only the title"
			require.NoError(t, f.alice.UpdateChat(f.ctx, id, sdk.UpdateChatRequest{Title: &title}))
			c, err = f.alice.Chat(f.ctx, id)
			require.NoError(t, err)
			require.Equal(t, []uuid.UUID{one}, c.MCPServerIDs, "an unset selection is not sent")
			require.NoError(t, f.alice.UpdateChat(f.ctx, id, sdk.UpdateChatRequest{MCPServerIDs: sdk.SelectMCPServers()}))
			c, err = f.alice.Chat(f.ctx, id)
			require.NoError(t, err)
			require.Nil(t, c.MCPServerIDs, "no ids sends null")
			require.NoError(t, f.alice.UpdateChat(f.ctx, id, sdk.UpdateChatRequest{MCPServerIDs: sdk.SelectMCPServers([]uuid.UUID{}...)}))
			c, err = f.alice.Chat(f.ctx, id)
			require.NoError(t, err)
			require.Equal(t, []uuid.UUID{}, c.MCPServerIDs)

			created, err := f.alice.CreateChat(f.ctx, sdk.CreateChatRequest{Title: "sdk", MCPServerIDs: []uuid.UUID{two}})
			require.NoError(t, err)
			require.Equal(t, []uuid.UUID{two}, created.MCPServerIDs)
			created, err = f.alice.CreateChat(f.ctx, sdk.CreateChatRequest{Title: "sdk"})
			require.NoError(t, err)
			require.Nil(t, created.MCPServerIDs)
		})

		t.Run("bad selections are refused", func(t *testing.T) {
			id, _ := f.create(t, map[string]any{"title": "kept", "mcp_server_ids": []uuid.UUID{one}})
			for _, tc := range []struct {
				name, ids, field, detail string
			}{
				{"unknown id", list(one, unknown), "mcp_server_ids[1]", unknown.String()},
				{"not a uuid", `["abc"]`, "mcp_server_ids[0]", `"abc" is not a valid UUID`},
				{"not a string", `[1]`, "mcp_server_ids[0]", "must be a UUID string"},
				{"null entry", `[null]`, "mcp_server_ids[0]", "must be a UUID string"},
				{"not a list", `{"a":1}`, "mcp_server_ids", "null or an array"},
				{"a string", `"` + one.String() + `"`, "mcp_server_ids", "null or an array"},
			} {
				for _, send := range []func() error{
					func() error {
						return f.alice.Do(f.ctx, http.MethodPost, "/chats", json.RawMessage(`{"title":"x","mcp_server_ids":`+tc.ids+`}`), nil)
					},
					func() error {
						return f.alice.Do(f.ctx, http.MethodPatch, "/chats/"+id.String(), json.RawMessage(`{"title":"changed","mcp_server_ids":`+tc.ids+`}`), nil)
					},
				} {
					e := requireAPIError(t, send(), http.StatusBadRequest, sdk.CodeValidation)
					require.Contains(t, e.Message, tc.detail, tc.name)
					require.Len(t, e.Validations, 1, tc.name)
					require.Equal(t, tc.field, e.Validations[0].Field, tc.name)
				}
			}
			c, err := f.alice.Chat(f.ctx, id)
			require.NoError(t, err)
			require.Equal(t, "kept", c.Title, "a refused PATCH changes nothing")
			require.Equal(t, []uuid.UUID{one}, c.MCPServerIDs)
			chats, err := f.alice.ListChats(f.ctx, sdk.ListChatsOptions{})
			require.NoError(t, err)
			for _, c := range chats {
				require.NotEqual(t, "x", c.Title, "a refused create creates nothing")
			}
		})

		t.Run("the list shows the selection", func(t *testing.T) {
			var raw []json.RawMessage
			require.NoError(t, f.alice.Do(f.ctx, http.MethodGet, "/chats?limit=500", nil, &raw))
			require.NotEmpty(t, raw)
			for _, c := range raw {
				f.selection(t, c)
			}
		})
	})
}

// Without MCP configured only "every server" (null) and "none" ([]) are
// possible selections.
func TestChatMCPServerSelectionWithoutMCP(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setupMCP(t, newStore(t), nil)
		_, created := f.create(t, map[string]any{"title": "none", "mcp_server_ids": []uuid.UUID{}})
		require.JSONEq(t, `[]`, string(f.selection(t, created)))
		_, created = f.create(t, map[string]any{"title": "all"})
		require.JSONEq(t, `null`, string(f.selection(t, created)))
		id := uuid.New()
		err := f.alice.Do(f.ctx, http.MethodPost, "/chats", map[string]any{"title": "x", "mcp_server_ids": []uuid.UUID{id}}, nil)
		e := requireAPIError(t, err, http.StatusBadRequest, sdk.CodeValidation)
		require.Contains(t, e.Message, "no MCP servers are configured")
		require.Contains(t, e.Message, id.String())
	})
}

func TestMCPServersEndpoint(t *testing.T) {
	t.Parallel()
	failure := "spawn npx: executable file not found in $PATH"
	mcp := &fakeMCP{servers: []sdk.MCPServer{
		{ID: uuid.New(), Name: "everything", Transport: sdk.MCPTransportStdio, State: sdk.MCPStateConnected,
			Tools: []sdk.MCPTool{{Name: "everything__echo", MCPName: "echo", Description: "Echoes",
				Effect: store.EffectPure, EffectSource: sdk.MCPEffectSourceAnnotation}}},
		{ID: uuid.New(), Name: "broken", Transport: sdk.MCPTransportSSE, State: sdk.MCPStateFailed, LastError: &failure},
	}}
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		s := newStore(t)
		f := setupMCP(t, s, mcp)
		for _, prefix := range []string{"/api/v2", "/api/experimental"} {
			c := *f.alice
			c.Prefix = prefix
			var raw json.RawMessage
			require.NoError(t, c.Do(f.ctx, http.MethodGet, "/chats/mcp-servers", nil, &raw), prefix)
			var got []map[string]any
			require.NoError(t, json.Unmarshal(raw, &got))
			require.Len(t, got, 2)
			require.Equal(t, "everything", got[0]["name"])
			require.Equal(t, []any{map[string]any{"name": "everything__echo", "mcp_name": "echo", "description": "Echoes",
				"effect": "pure", "effect_source": "annotation"}}, got[0]["tools"])
			require.Nil(t, got[0]["last_error"])
			require.Equal(t, []any{}, got[1]["tools"], "a server without tools lists none, not null")
			require.Equal(t, failure, got[1]["last_error"])
			require.Equal(t, "failed", got[1]["state"])
		}
		servers, err := f.alice.MCPServers(f.ctx)
		require.NoError(t, err)
		require.Equal(t, mcp.servers[0], servers[0])

		anonymous := &sdk.Client{BaseURL: f.srv.URL, HTTP: f.srv.Client()}
		_, err = anonymous.MCPServers(f.ctx)
		requireAPIError(t, err, http.StatusUnauthorized, sdk.CodeUnauthorized)

		none := setupMCP(t, newStore(t), nil)
		var raw json.RawMessage
		require.NoError(t, none.alice.Do(none.ctx, http.MethodGet, "/chats/mcp-servers", nil, &raw))
		require.JSONEq(t, `[]`, string(raw), "no MCP configured lists no servers")
	})
}
