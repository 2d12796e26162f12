package e2e_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/mcp"
	"github.com/chatd/chatd/app/mcp/mcptest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools/agents"
	"github.com/chatd/chatd/app/worker"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// TestMCPServerAccess: with the reference server-everything configured
// twice from the config file, "vault" with an env secret (so admins-only
// by default) and "open" without, a non-admin sees and is offered only
// "open": vault's get-env is neither listed, nor offered to the model
// (nor to the chat's subagent), nor run when a call to it arrives anyway,
// and the secret never reaches the chat. Once an admin names a user in
// vault's access, that user's chats (and their subagents) are offered
// get-env and its call runs. Both stores.
func TestMCPServerAccess(t *testing.T) {
	t.Parallel()
	everything := mcptest.NPMServer(t, "server-everything")
	const secret = "admin-sekrit-4242"
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		mcpConfig, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
			"vault": map[string]any{"command": "node", "args": []string{everything, "stdio"}, "env": map[string]string{"VAULT_KEY": secret},
				"tools": map[string]any{"include": []string{"get-env"}}},
			"open": map[string]any{"command": "node", "args": []string{everything, "stdio"}, "tools": map[string]any{"include": []string{"echo"}}},
		}})
		require.NoError(t, err)
		llm := llmtest.NewOpenAI(t)
		h := apptest.Start(t, apptest.Options{Store: newStore, Config: config.Config{
			OpenAIBaseURL: llm.URL, DefaultModel: "openai/test-model",
			MCPConfig: writeMCPConfig(t, string(mcpConfig)),
			Worker:    worker.Config{SyncInterval: 50 * time.Millisecond, Subagents: true},
		}})
		alice, carol, admin := h.NewUser(t, "alice"), h.NewUser(t, "carol"), h.Admin
		vault := mcp.ServerID("vault")

		listed := func(c *sdk.Client) []string {
			servers, err := c.MCPServers(t.Context())
			require.NoError(t, err)
			var names []string
			for _, s := range servers {
				names = append(names, s.Name)
			}
			return names
		}
		require.Equal(t, []string{"open"}, listed(alice), "alice may not use vault")
		require.Equal(t, []string{"open", "vault"}, listed(admin))
		_, err = alice.CreateChat(t.Context(), sdk.CreateChatRequest{Content: sdk.Text("hi"), MCPServerIDs: []uuid.UUID{vault}})
		requireCode(t, err, http.StatusBadRequest, sdk.CodeValidation)

		// run sends one chat of c that calls vault's get-env and spawns a
		// subagent, and returns the model's requests of the parent's first
		// step and of the child, and the get-env result.
		run := func(c *sdk.Client, who string) (parent, child string, result sdk.ChatMessagePart) {
			before := len(llm.Requests())
			llm.Enqueue(llmtest.ToolCall("call_env", "vault__get-env", `{}`))
			llm.Enqueue(llmtest.ToolCall("call_spawn", agents.ToolSpawnAgent, `{"prompt":"child of `+who+`","title":"child"}`))
			llm.Enqueue(llmtest.TextChunks("done"), llmtest.TextChunks("done")) // the parent's last step and the child's, in either order
			chat, err := c.CreateChat(t.Context(), sdk.CreateChatRequest{Content: sdk.Text("read the env"), Title: who})
			require.NoError(t, err)
			childID := agents.SubagentID(chat.ID, "call_spawn")
			assert.Eventually(t, func() bool {
				p, err := c.Chat(t.Context(), chat.ID)
				if err != nil || p.Status != sdk.ChatStatusWaiting {
					return false
				}
				ch, err := c.Chat(t.Context(), childID)
				return err == nil && ch.Status == sdk.ChatStatusWaiting
			}, 20*time.Second, 10*time.Millisecond, "the turns never finished")
			if t.Failed() {
				p, err := c.Chat(t.Context(), chat.ID)
				t.Logf("parent %+v %v", p, err)
				ch, err := c.Chat(t.Context(), childID)
				t.Logf("child %+v %v", ch, err)
				t.Logf("requests %d pending %d", len(llm.Requests())-before, llm.Pending())
			}
			reqs := llm.Requests()[before:]
			require.Len(t, reqs, 4)
			parent = string(reqs[0].Body)
			for _, r := range reqs {
				if body := string(r.Body); strings.Contains(body, "child of "+who) && !strings.Contains(body, "call_spawn") {
					child = body
				}
			}
			require.NotEmpty(t, child, "the child asked the model")
			page, err := c.ChatMessages(t.Context(), chat.ID, sdk.MessagesOptions{})
			require.NoError(t, err)
			for _, m := range page.Messages {
				for _, p := range m.Content {
					if p.Type == sdk.PartToolResult && p.ToolCallID == "call_env" {
						result = p
					}
				}
			}
			require.Equal(t, "call_env", result.ToolCallID, "get-env has a result")
			return parent, child, result
		}

		parent, child, result := run(alice, "alice")
		require.Contains(t, parent, `"open__echo"`, "alice is offered the open server")
		require.NotContains(t, parent, "vault__get-env", "nor offered to alice's chat")
		require.NotContains(t, child, "vault__get-env", "nor to her subagent")
		require.True(t, result.IsError, "the call that arrived anyway was refused: %s", result.Result)
		require.Contains(t, string(result.Result), `unknown tool`, "answered like a tool that does not exist")
		require.NotContains(t, string(result.Result), secret)
		for _, r := range llm.Requests() {
			require.NotContains(t, string(r.Body), secret, "the secret never reached alice's chats")
		}

		// An admin lets carol in by name; alice stays out.
		got := call(t, h.Server, h.Token, "PATCH", "/api/v2/chats/mcp-servers/"+vault.String(), `{"access":["carol"]}`)
		require.Equal(t, http.StatusOK, got.status, "%s", got.body)
		require.Equal(t, []string{"open", "vault"}, listed(carol))
		require.Equal(t, []string{"open"}, listed(alice))

		parent, child, result = run(carol, "carol")
		require.Contains(t, parent, `"vault__get-env"`, "carol is offered get-env")
		require.Contains(t, child, `"vault__get-env"`, "and so is her subagent")
		require.False(t, result.IsError, "%s", result.Result)
		require.Contains(t, string(result.Result), secret, "carol's call ran")
	})
}
