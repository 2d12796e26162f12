package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

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

// A tool call in flight on an MCP server an admin deletes ends with an
// error result through the journal; the turn goes on, and the next step
// no longer offers the server's tools.
func TestMCPServerDeletedDuringACall(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		started, release := make(chan struct{}, 1), make(chan struct{})
		srvMCP := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1"}, nil)
		srvMCP.AddTool(&mcp.Tool{Name: "wait", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				started <- struct{}{}
				select { // the Streamable HTTP server may not cancel a call whose client left
				case <-ctx.Done():
				case <-release:
				}
				return nil, ctx.Err()
			})
		remote := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srvMCP }, nil))
		t.Cleanup(remote.Close)
		t.Cleanup(func() { close(release) }) // before remote.Close

		llm := llmtest.NewOpenAI(t)
		llm.Enqueue(llmtest.ToolCall("call_wait", "slow__wait", `{}`))
		llm.Enqueue(llmtest.TextChunks("It went away."))
		h := apptest.Start(t, apptest.Options{Store: newStore, Config: config.Config{
			OpenAIBaseURL: llm.URL, DefaultModel: "openai/test-model",
			Worker: worker.Config{SyncInterval: 50 * time.Millisecond},
		}})
		srv, admin := h.Server, h.Token

		got := call(t, srv, admin, "POST", "/api/v2/chats/mcp-servers", `{"name":"slow","url":"`+remote.URL+`","effects":{"wait":"effectful"}}`)
		require.Equal(t, http.StatusCreated, got.status, "%s", got.body)
		var created sdk.MCPServer
		require.NoError(t, json.Unmarshal(got.body, &created))

		client := sdk.New(srv.URL, admin)
		chat, err := client.CreateChat(t.Context(), sdk.CreateChatRequest{Content: sdk.Text("wait"), Title: "slow"})
		require.NoError(t, err)
		await(t, started, "the call never reached the server")
		got = call(t, srv, admin, "DELETE", "/api/v2/chats/mcp-servers/"+created.ID.String(), "")
		require.Equal(t, http.StatusNoContent, got.status, "%s", got.body)

		require.Eventually(t, func() bool {
			c, err := client.Chat(t.Context(), chat.ID)
			return err == nil && c.Status == sdk.ChatStatusWaiting
		}, time.Minute, 10*time.Millisecond, "the turn never finished")
		page, err := client.ChatMessages(t.Context(), chat.ID, sdk.MessagesOptions{})
		require.NoError(t, err)
		var result *sdk.ChatMessagePart
		for _, m := range page.Messages {
			for _, p := range m.Content {
				if p.Type == sdk.PartToolResult && p.ToolCallID == "call_wait" {
					result = &p
				}
			}
		}
		require.NotNil(t, result, "the call got its one result")
		require.True(t, result.IsError)
		require.Contains(t, string(result.Result), "MCP server slow was removed or changed during the call")
		reqs := llm.Requests()
		require.Len(t, reqs, 2)
		require.NotContains(t, string(reqs[1].Body), `"slow__wait"`+`,"description"`, "the next step offers no tool of the deleted server")
	})
}

// await receives from ch, failing the test if nothing comes within a
// minute (a guard against a hang, not a timing assertion).
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatal(what)
	}
}
