package worker_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/hooks"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// TestHooksEndToEnd: chatd configured with CHATD_HOOK_URL's settings
// sends signed events the consumer verifies with the Standard Webhooks
// library, and a denial keeps a real provider's tool call from running.
func TestHooksEndToEnd(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		for _, prov := range providers {
			t.Run(prov.name, func(t *testing.T) {
				t.Parallel()
				secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("e2e hook secret"))
				verifier, err := standardwebhooks.NewWebhook(secret)
				require.NoError(t, err)
				var (
					mu     sync.Mutex
					events []string
					bad    []string
				)
				consumer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					body, _ := io.ReadAll(r.Body)
					var req hooks.Request
					_ = json.Unmarshal(body, &req)
					mu.Lock()
					events = append(events, string(req.Event))
					if err := verifier.Verify(body, r.Header); err != nil {
						bad = append(bad, err.Error())
					}
					mu.Unlock()
					if req.Event == hooks.PreToolUse {
						_, _ = io.WriteString(w, `{"decision":"deny","reason":"writes are frozen"}`)
					}
				}))
				t.Cleanup(consumer.Close)
				var runs atomic.Int32
				write := &tools.Func{ToolName: "write", Desc: "writes", EffectClass: store.EffectEffectful,
					Fn: func(context.Context, json.RawMessage) (json.RawMessage, error) {
						runs.Add(1)
						return json.RawMessage(`{"ok":true}`), nil
					}}
				e := setup(t, newStore(t), prov, []llmtest.Reply{
					llmtest.ToolCall("call_1", "write", `{"path":"/etc/motd"}`),
					llmtest.TextChunks("I could not write it."),
				}, func(cfg *config.Config) {
					cfg.HookURL, cfg.HookSecret = consumer.URL, secret
					cfg.Tools = []tools.Tool{write}
				})
				chat := e.create(sdk.CreateChatRequest{Content: sdk.Text("write the motd")})
				e.waitStatus(chat.ID, sdk.ChatStatusWaiting)

				require.Zero(t, runs.Load(), "the denied call never ran")
				var result string
				for _, m := range e.messages(chat.ID) {
					for _, p := range m.Content {
						if p.Type == sdk.PartToolResult {
							result = string(p.Result)
							require.True(t, p.IsError)
						}
					}
				}
				require.JSONEq(t, `{"error":"denied: writes are frozen"}`, result)
				mu.Lock()
				defer mu.Unlock()
				require.Equal(t, []string{"session_start", "user_prompt_submit", "pre_tool_use", "stop"}, events, "the admission events come from the API")
				require.Empty(t, bad, "every event verifies")
			})
		}
	})
}

// TestHookSettingsRefusedAtStartup: a hook URL without a usable secret
// stops startup with a message naming the settings.
func TestHookSettingsRefusedAtStartup(t *testing.T) {
	for name, cfg := range map[string]config.Config{
		"no secret":         {HookURL: "http://127.0.0.1:1/hook"},
		"secret not base64": {HookURL: "http://127.0.0.1:1/hook", HookSecret: "not base64!"},
		"cap too small":     {HookURL: "http://127.0.0.1:1/hook", HookSecret: "c2VjcmV0", HookMaxConcurrent: 1},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := app.NewWithStore(context.Background(), cfg, dbtest.NewSQLite(t), io.Discard)
			require.Error(t, err)
			require.True(t, strings.Contains(err.Error(), "CHATD_HOOK_URL"), "%v", err)
		})
	}
}
