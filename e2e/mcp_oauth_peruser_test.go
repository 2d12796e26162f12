package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/llmtest"
	chatdmcp "github.com/chatd/chatd/app/mcp"
	"github.com/chatd/chatd/app/mcp/mcptest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/worker"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// TestMCPOAuthPerUser: a server whose identity is each user's
// (oauth.per_user). Alice connects it herself and her chat's call carries
// her token; Bob's chat, before he connects, gets a clear error (never
// Alice's token) and his status says he must connect; once he connects
// his calls carry his token; Alice disconnects (Bob's connection stays);
// Bob's tokens survive a restart. Both stores.
func TestMCPOAuthPerUser(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		v := mcptest.StartPersonVault(t)
		mcpConfig, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
			"vault":  map[string]any{"url": v.URL, "oauth": map[string]any{"per_user": true}},
			"shared": map[string]any{"url": v.URL}}})
		require.NoError(t, err)
		cfgPath := writeMCPConfig(t, string(mcpConfig))
		llm := llmtest.NewOpenAI(t)
		vaultID := chatdmcp.ServerID("vault")

		// start runs the app (the next one on the same database after the
		// first) behind a server whose URL it advertises (the
		// authorization server sends the browser back there).
		var h *apptest.Harness
		start := func() (srvURL string, stop func()) {
			if h == nil {
				h = apptest.Start(t, apptest.Options{Store: newStore, Config: config.Config{
					MCPConfig: cfgPath, SecretKey: testSecretKey,
					OpenAIBaseURL: llm.URL, DefaultModel: "openai/test-model",
					Worker: worker.Config{SyncInterval: 50 * time.Millisecond},
				}})
			} else {
				h = h.Reopen(t)
			}
			this := h
			return h.URL, func() { this.Stop(t) }
		}
		srvURL, stop := start()
		tokens := map[string]string{"alice": h.NewUserToken(t, "alice"), "bob": h.NewUserToken(t, "bob")}
		clients := func(base string) (alice, bob *sdk.Client) {
			return sdk.New(base, tokens["alice"]), sdk.New(base, tokens["bob"])
		}
		alice, bob := clients(srvURL)

		vault := func(c *sdk.Client) sdk.MCPServer {
			t.Helper()
			list, err := c.MCPServers(ctx)
			require.NoError(t, err)
			require.Len(t, list, 2)
			require.Equal(t, "vault", list[1].Name)
			require.Nil(t, list[0].Auth, "a shared server's authorization is the admins' to see")
			return list[1]
		}
		connected := func(c *sdk.Client) {
			t.Helper()
			var last sdk.MCPServer
			require.Eventually(t, func() bool {
				last = vault(c)
				return last.State == sdk.MCPStateConnected && last.Auth != nil && last.Auth.Status == sdk.MCPAuthAuthorized && last.Auth.PerUser
			}, 30*time.Second, 20*time.Millisecond, "never connected as the user: %+v %+v", last, last.Auth)
			require.Equal(t, "vault__whoami", last.Tools[0].Name)
		}
		needsConnect := func(c *sdk.Client) {
			t.Helper()
			st := vault(c)
			require.NotNil(t, st.Auth)
			require.Equal(t, sdk.MCPAuthNeedsUserAuthorization, st.Auth.Status, "%+v", st.Auth)
			require.True(t, st.Auth.PerUser)
			require.Equal(t, sdk.MCPStateFailed, st.State)
			require.NotNil(t, st.LastError)
			require.Contains(t, *st.LastError, "connect vault in Settings")
		}
		connect := func(c *sdk.Client, who string) {
			t.Helper()
			st, err := c.ConnectMCPServer(ctx, vaultID)
			require.NoError(t, err)
			require.Equal(t, sdk.MCPAuthNeedsAuthorization, st.Status, "%+v", st)
			require.True(t, st.PerUser)
			require.NotEmpty(t, st.AuthorizationURL)
			mcptest.Consent(t, st.AuthorizationURL, who)
			connected(c)
		}
		// whoami runs a chat of c whose model calls vault__whoami and
		// returns the call's result.
		whoami := func(c *sdk.Client) sdk.ChatMessagePart {
			t.Helper()
			llm.Enqueue(llmtest.ToolCall("call_who", "vault__whoami", `{}`))
			llm.Enqueue(llmtest.TextChunks("done"))
			chat, err := c.CreateChat(ctx, sdk.CreateChatRequest{Content: sdk.Text("who am I?"), Title: "whoami", MCPServerIDs: []uuid.UUID{vaultID}})
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				got, err := c.Chat(ctx, chat.ID)
				return err == nil && got.Status == sdk.ChatStatusWaiting
			}, 30*time.Second, 10*time.Millisecond, "the turn never finished")
			page, err := c.ChatMessages(ctx, chat.ID, sdk.MessagesOptions{})
			require.NoError(t, err)
			for _, m := range page.Messages {
				for _, p := range m.Content {
					if p.Type == sdk.PartToolResult && p.ToolCallID == "call_who" {
						return p
					}
				}
			}
			raw, _ := json.Marshal(page.Messages)
			t.Fatalf("whoami has no result: %s", raw)
			return sdk.ChatMessagePart{}
		}
		asUser := func(c *sdk.Client, who string) {
			t.Helper()
			res := whoami(c)
			require.False(t, res.IsError, "%s", res.Result)
			require.Contains(t, string(res.Result), "you are "+who)
		}
		refused := func(c *sdk.Client) {
			t.Helper()
			res := whoami(c)
			require.True(t, res.IsError, "%s", res.Result)
			require.Contains(t, string(res.Result), "connect vault in Settings")
			require.NotContains(t, string(res.Result), "you are")
		}

		needsConnect(alice)
		needsConnect(bob)
		// A shared server is no user's to connect; an unknown one is 404.
		_, err = alice.ConnectMCPServer(ctx, chatdmcp.ServerID("nope"))
		requireCode(t, err, http.StatusNotFound, sdk.CodeNotFound)
		_, err = alice.ConnectMCPServer(ctx, chatdmcp.ServerID("shared"))
		requireCode(t, err, http.StatusConflict, sdk.CodeInvalidState)
		requireCode(t, bob.DisconnectMCPServer(ctx, chatdmcp.ServerID("shared")), http.StatusConflict, sdk.CodeInvalidState)

		connect(alice, "alice")
		asUser(alice, "alice")
		needsConnect(bob)
		refused(bob) // offered the tool alice's session listed, but never with her token

		connect(bob, "bob")
		asUser(bob, "bob")
		asUser(alice, "alice")

		require.NoError(t, alice.DisconnectMCPServer(ctx, vaultID))
		needsConnect(alice)
		refused(alice)
		asUser(bob, "bob")

		stop()
		srvURL, _ = start()
		alice, bob = clients(srvURL)
		asUser(bob, "bob")
		connected(bob)
		needsConnect(alice)
		require.Equal(t, 1, v.Consents("bob"), "bob's tokens survived the restart: no new consent")
		require.Equal(t, 1, v.Consents("alice"))
	})
}
