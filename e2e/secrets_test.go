package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/worker"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// quotingMCPServer is a real MCP server over Streamable HTTP whose tool
// "whoami" fails with an error quoting the X-Api-Key header it got.
func quotingMCPServer(t *testing.T) string {
	srv := mcp.NewServer(&mcp.Implementation{Name: "quoter", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "whoami", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{
				&mcp.TextContent{Text: "refused: X-Api-Key " + req.Extra.Header.Get("X-Api-Key")}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

// A provider key that the upstream quotes in its errors (a gateway's 401
// echoing the request headers, and a 500 that is retried) and an MCP
// header value that a server quotes in a tool error reach no one: not a
// non-admin user's chat (last_error through the API, the stream's error
// event), not the log, not the chat's row in the store, not the messages,
// not the admin's connection test. Each check also sees the mask, so it
// proves the secret was quoted and masked, not absent.
func TestSecretsNeverLeaveInErrors(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		const key = "sk-gateway-echo-7c1d2e3f4a5b"
		const header = "mcp-header-secret-2718281828"
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		fake := llmtest.NewOpenAI(t)
		fake.SetDefault(llmtest.EchoHeaders(http.StatusUnauthorized, "invalid credentials"))
		fake.FailModels(llmtest.EchoHeaders(http.StatusUnauthorized, "invalid credentials"))
		mcpConfig := writeMCPConfig(t, fmt.Sprintf(`{"mcpServers": {"h": {"url": %q, "headers": {"X-Api-Key": %q}}}}`,
			quotingMCPServer(t), header))
		h := apptest.Start(t, apptest.Options{Store: newStore, Config: config.Config{
			OpenAIAPIKey: key, OpenAIBaseURL: fake.URL, DefaultModel: "openai/test-model",
			LogFormat: "json", MCPConfig: mcpConfig,
			Worker: worker.Config{BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond, SyncInterval: 50 * time.Millisecond},
		}})
		bobToken := h.NewUserToken(t, "bob")
		s, srv, logs, admin, bob := h.Store, h.Server, h.Log, h.Admin, h.Client(bobToken)
		noSecret := func(what, text string) {
			t.Helper()
			require.NotContains(t, text, key, "%s holds the provider key", what)
			require.NotContains(t, text, header, "%s holds the MCP header value", what)
		}

		// The admin's chat calls the MCP tool, which quotes the header.
		fake.Enqueue(llmtest.ToolCall("call_1", "h__whoami", `{}`), llmtest.TextChunks("done"))
		mcpChat, err := admin.CreateChat(ctx, sdk.CreateChatRequest{Content: sdk.Text("who am I"), Title: "mcp"})
		require.NoError(t, err)
		waitStatus(t, ctx, admin, mcpChat.ID, sdk.ChatStatusWaiting)
		result := resultOf(t, ctx, admin, mcpChat.ID, "call_1")
		require.True(t, result.IsError)
		require.Contains(t, string(result.Result), "refused: X-Api-Key [secret]")
		page, err := admin.ChatMessages(ctx, mcpChat.ID, sdk.MessagesOptions{})
		require.NoError(t, err)
		raw, _ := json.Marshal(page)
		noSecret("the MCP chat's messages", string(raw))

		// Bob's chat: a 500 quoting the key (retried), then the 401.
		fake.Enqueue(llmtest.EchoHeaders(http.StatusInternalServerError, "upstream failed"))
		chat, err := bob.CreateChat(ctx, sdk.CreateChatRequest{Content: sdk.Text("hello"), Title: "no title call"})
		require.NoError(t, err)
		got := waitStatus(t, ctx, bob, chat.ID, sdk.ChatStatusError)
		require.NotNil(t, got.LastError)
		require.Equal(t, sdk.ChatErrorAuth, got.LastError.Kind)
		require.Contains(t, got.LastError.Message, "Authorization: Bearer [api key]", "the upstream quoted the key")
		raw, _ = json.Marshal(got)
		noSecret("bob's chat", string(raw))
		reqs := fake.Requests()
		require.Equal(t, "Bearer "+key, reqs[len(reqs)-1].Header.Get("Authorization"), "the key did reach the provider")

		// The stream's error event, to bob.
		conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/api/v2/chats/"+chat.ID.String()+"/stream",
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + bobToken}}})
		require.NoError(t, err)
		defer conn.CloseNow()
		conn.SetReadLimit(8 << 20)
		var errEvent *sdk.ChatError
		for errEvent == nil {
			_, frame, err := conn.Read(ctx)
			require.NoError(t, err)
			noSecret("a stream frame", string(frame))
			var events []sdk.ChatStreamEvent
			require.NoError(t, json.Unmarshal(frame, &events))
			for _, e := range events {
				if e.Type == sdk.StreamError {
					errEvent = e.Error
				}
			}
		}
		require.Contains(t, errEvent.Message, "[api key]")

		// The chat rows and messages in the store.
		for _, id := range []uuid.UUID{chat.ID, mcpChat.ID} {
			require.NoError(t, s.ReadTx(ctx, func(tx store.Reader) error {
				row, err := tx.ChatGet(ctx, id)
				if err != nil {
					return err
				}
				msgs, err := tx.MessageList(ctx, id, store.MessageListParams{})
				if err != nil {
					return err
				}
				noSecret("the chat row", fmt.Sprintf("%+v %s", row, row.LastError))
				for _, m := range msgs {
					noSecret("a stored message", fmt.Sprintf("%+v %s", m, m.Content))
				}
				return nil
			}))
		}

		// The admin's connection test of the provider.
		var providers []sdk.ChatProviderConfig
		require.NoError(t, admin.Do(ctx, http.MethodGet, "/chats/providers", nil, &providers))
		var openaiID uuid.UUID // the preset of OPENAI_API_KEY
		for _, p := range providers {
			if p.HasAPIKey {
				openaiID = p.ID
			}
		}
		require.NotEqual(t, uuid.Nil, openaiID, "%+v", providers)
		var test sdk.ChatProviderTest
		require.NoError(t, admin.Do(ctx, http.MethodPost, "/chats/providers/"+openaiID.String()+"/test", nil, &test))
		require.False(t, test.OK)
		require.Contains(t, test.Error, "Authorization: Bearer [api key]")
		noSecret("the connection test", test.Error)

		// The log: the failures were logged, masked.
		out := logs.String()
		require.Contains(t, out, "[api key]", "a failure quoting the key was logged")
		noSecret("the log", out)
	})
}
