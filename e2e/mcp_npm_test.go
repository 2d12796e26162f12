package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/mcp/mcptest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/worker"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// TestTurnCallsNPMServers: with the reference servers from npm configured
// (server-everything over stdio and over Streamable HTTP,
// server-filesystem over stdio), a turn's tool calls reach them through a
// fake provider and their results land in history, on both stores.
func TestTurnCallsNPMServers(t *testing.T) {
	t.Parallel()
	everything := mcptest.NPMServer(t, "server-everything")
	filesystem := mcptest.NPMServer(t, "server-filesystem")
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		data := t.TempDir()
		note := filepath.Join(data, "note.txt")
		require.NoError(t, os.WriteFile(note, []byte("a note for chatd"), 0o600))
		addr := mcptest.StartNode(t, everything, "streamableHttp")
		mcpConfig, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
			"everything": map[string]any{"command": "node", "args": []string{everything, "stdio"}},
			"remote":     map[string]any{"url": "http://" + addr + "/mcp"},
			"fs":         map[string]any{"command": "node", "args": []string{filesystem, data}},
		}})
		require.NoError(t, err)

		llm := llmtest.NewOpenAI(t)
		readArgs, err := json.Marshal(map[string]string{"path": note})
		require.NoError(t, err)
		llm.Enqueue(llmtest.ToolCall("call_echo", "everything__echo", `{"message":"over stdio"}`))
		llm.Enqueue(llmtest.ToolCall("call_remote", "remote__echo", `{"message":"over http"}`))
		llm.Enqueue(llmtest.ToolCall("call_read", "fs__read_text_file", string(readArgs)))
		llm.Enqueue(llmtest.TextChunks("All three answered."))

		h := apptest.Start(t, apptest.Options{Store: newStore, Config: config.Config{
			OpenAIBaseURL: llm.URL, DefaultModel: "openai/test-model",
			MCPConfig: writeMCPConfig(t, string(mcpConfig)),
			Worker:    worker.Config{SyncInterval: 50 * time.Millisecond},
		}})
		client := h.NewUser(t, "alice")

		chat, err := client.CreateChat(t.Context(), sdk.CreateChatRequest{Content: sdk.Text("use every server"), Title: "npm servers"})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			c, err := client.Chat(t.Context(), chat.ID)
			return err == nil && c.Status == sdk.ChatStatusWaiting
		}, time.Minute, 10*time.Millisecond, "the turn never finished")

		page, err := client.ChatMessages(t.Context(), chat.ID, sdk.MessagesOptions{})
		require.NoError(t, err)
		results := map[string]sdk.ChatMessagePart{}
		for _, m := range page.Messages {
			for _, p := range m.Content {
				if p.Type == sdk.PartToolResult {
					results[p.ToolCallID] = p
				}
			}
		}
		for id, want := range map[string]string{"call_echo": "over stdio", "call_remote": "over http", "call_read": "a note for chatd"} {
			r, ok := results[id]
			require.True(t, ok, "no result for %s", id)
			require.False(t, r.IsError, "%s: %s", id, r.Result)
			require.Contains(t, string(r.Result), want, id)
		}
		last := page.Messages[len(page.Messages)-1]
		require.Equal(t, "All three answered.", last.Content[0].Text)
		// The model was offered the servers' tools by their SERVER__TOOL names
		// (an explicit title: no title request comes first).
		first := string(llm.Requests()[0].Body)
		for _, name := range []string{"everything__echo", "remote__echo", "fs__read_text_file"} {
			require.True(t, strings.Contains(first, `"`+name+`"`), "the model was not offered %s", name)
		}
	})
}
