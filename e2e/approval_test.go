package e2e_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/worker"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// approvalShop is an in-process MCP server over Streamable HTTP with an
// effectful tool ("charge", no annotations) and a pure one ("price",
// readOnlyHint), counting their calls.
type approvalShop struct {
	url            string
	charges, price atomic.Int32
}

func startApprovalShop(t *testing.T) *approvalShop {
	t.Helper()
	s := &approvalShop{}
	type args struct {
		Order int `json:"order"`
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "charge", Description: "Charges the customer for an order."},
		func(context.Context, *mcp.CallToolRequest, args) (*mcp.CallToolResult, any, error) {
			s.charges.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "charged"}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "price", Description: "Looks up an order's price.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, args) (*mcp.CallToolResult, any, error) {
			s.price.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "42 EUR"}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(func() {
		for ss := range server.Sessions() {
			_ = ss.Close()
		}
		hs.Close()
	})
	s.url = hs.URL
	return s
}

// approvalRig starts apps over one database, with the shop server
// configured under "approval": "effectful".
type approvalRig struct {
	t        *testing.T
	ctx      context.Context
	newStore func(t testing.TB) store.Store
	llm      *llmtest.Server
	config   string
	// rootLimit caps concurrently owned root chats (0: the default).
	rootLimit int
	h         *apptest.Harness // the app last started
}

// start runs an app (the next one on the same database after the first)
// and returns clients for the chats' owner, another user and an admin;
// stop ends it (the database stays).
func (r *approvalRig) start() (alice, bob, admin *sdk.Client, stop func()) {
	t := r.t
	if r.h == nil {
		r.h = apptest.Start(t, apptest.Options{Store: r.newStore, Config: config.Config{
			OpenAIBaseURL: r.llm.URL, DefaultModel: "openai/test-model", MCPConfig: r.config,
			Worker: worker.Config{SyncInterval: 50 * time.Millisecond, RootLimit: r.rootLimit},
		}})
	} else {
		r.h = r.h.Reopen(t)
	}
	clients := map[string]*sdk.Client{}
	for _, name := range []string{"alice", "bob", "root"} {
		tok, _ := r.h.CreateToken(t, name, name == "root")
		clients[name] = r.h.Client(tok)
	}
	h := r.h
	return clients["alice"], clients["bob"], clients["root"], func() { h.Stop(t) }
}

func waitStatus(t *testing.T, ctx context.Context, c *sdk.Client, chat uuid.UUID, status sdk.ChatStatus) sdk.Chat {
	t.Helper()
	var got sdk.Chat
	require.Eventually(t, func() bool {
		var err error
		got, err = c.Chat(ctx, chat)
		return err == nil && got.Status == status
	}, time.Minute, 10*time.Millisecond, "the chat never became %s (last: %s)", status, got.Status)
	return got
}

func resultOf(t *testing.T, ctx context.Context, c *sdk.Client, chat uuid.UUID, call string) sdk.ChatMessagePart {
	t.Helper()
	page, err := c.ChatMessages(ctx, chat, sdk.MessagesOptions{})
	require.NoError(t, err)
	var out *sdk.ChatMessagePart
	for _, m := range page.Messages {
		for i, p := range m.Content {
			if p.Type == sdk.PartToolResult && p.ToolCallID == call {
				require.Nil(t, out, "one result for %s", call)
				out = &m.Content[i]
			}
		}
	}
	require.NotNil(t, out, "no result for %s", call)
	return *out
}

// TestToolApproval: with the shop under "approval": "effectful", a turn's
// pure call runs at once and its effectful call waits for the owner's
// approval, across a restart; approved, it runs once through the journal;
// denied, it never runs and the model reads "denied: <reason>". Both
// stores.
func TestToolApproval(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shop := startApprovalShop(t)
		mcpConfig, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
			"shop": map[string]any{"url": shop.url, "approval": "effectful"},
		}})
		require.NoError(t, err)
		r := &approvalRig{t: t, ctx: ctx, newStore: newStore, llm: llmtest.NewOpenAI(t), config: writeMCPConfig(t, string(mcpConfig))}
		r.llm.Enqueue(llmtest.ToolCall("call_price", "shop__price", `{"order":42}`))
		r.llm.Enqueue(llmtest.ToolCall("call_charge", "shop__charge", `{"order":42}`))
		r.llm.Enqueue(llmtest.TextChunks("Charged."))

		alice, bob, _, stop := r.start()
		chat, err := alice.CreateChat(ctx, sdk.CreateChatRequest{Content: sdk.Text("charge order 42"), Title: "shop"})
		require.NoError(t, err)
		c := waitStatus(t, ctx, alice, chat.ID, sdk.ChatStatusRequiresAction)
		require.Equal(t, int32(1), shop.price.Load(), "the pure call needed no approval")
		require.Zero(t, shop.charges.Load(), "the effectful call waits")
		require.Nil(t, c.RequiresActionDeadlineAt, "an approval has no deadline")
		require.Len(t, c.ToolApprovals, 1)
		pending := c.ToolApprovals[0]
		require.Equal(t, "call_charge", pending.ToolCallID)
		require.Equal(t, "shop__charge", pending.ToolName)
		require.Equal(t, "shop", pending.Server)
		require.Equal(t, store.EffectEffectful, pending.Effect)
		require.Equal(t, sdk.ApprovalPending, pending.State)
		require.JSONEq(t, `{"order":42}`, string(pending.Args))

		// Nobody supplies the result instead, and bad answers are refused.
		toolResults := func(c *sdk.Client) error {
			return c.Do(ctx, http.MethodPost, "/chats/"+chat.ID.String()+"/tool-results",
				map[string]any{"results": []map[string]any{{"tool_call_id": "call_charge", "output": "fake"}}}, nil)
		}
		approve := func(c *sdk.Client, body any) error {
			return c.Do(ctx, http.MethodPost, "/chats/"+chat.ID.String()+"/tool-approvals", body, nil)
		}
		requireCode(t, toolResults(alice), http.StatusConflict, sdk.CodeToolCallAwaitingApproval)
		requireCode(t, approve(alice, map[string]any{"approvals": []any{}}), http.StatusBadRequest, sdk.CodeValidation)
		requireCode(t, approve(alice, map[string]any{"approvals": "yes"}), http.StatusBadRequest, sdk.CodeValidation)
		requireCode(t, approve(alice, map[string]any{"approvals": []map[string]any{{"tool_call_id": "call_other", "approved": true}}}),
			http.StatusConflict, sdk.CodeToolCallNotAwaitingApproval)
		requireCode(t, approve(alice, map[string]any{"approvals": []map[string]any{
			{"tool_call_id": "call_charge", "approved": true}, {"tool_call_id": "call_charge", "approved": false},
		}}), http.StatusBadRequest, sdk.CodeValidation)
		requireCode(t, approve(bob, map[string]any{"approvals": []map[string]any{{"tool_call_id": "call_charge", "approved": true}}}),
			http.StatusNotFound, sdk.CodeNotFound)

		// The approval waits across a restart.
		stop()
		alice, _, admin, _ := r.start()
		c = waitStatus(t, ctx, alice, chat.ID, sdk.ChatStatusRequiresAction)
		require.Len(t, c.ToolApprovals, 1)
		require.Equal(t, sdk.ApprovalPending, c.ToolApprovals[0].State)
		require.Zero(t, shop.charges.Load())

		require.NoError(t, alice.SubmitToolApprovals(ctx, chat.ID, sdk.SubmitToolApprovalsRequest{
			Approvals: []sdk.ToolApprovalAnswer{{ToolCallID: "call_charge", Approved: true}},
		}))
		c = waitStatus(t, ctx, alice, chat.ID, sdk.ChatStatusWaiting)
		require.Empty(t, c.ToolApprovals)
		require.Equal(t, int32(1), shop.charges.Load(), "the approved call ran once")
		res := resultOf(t, ctx, alice, chat.ID, "call_charge")
		require.False(t, res.IsError, string(res.Result))
		require.Contains(t, string(res.Result), "charged")
		requireCode(t, approve(alice, map[string]any{"approvals": []map[string]any{{"tool_call_id": "call_charge", "approved": true}}}),
			http.StatusConflict, sdk.CodeTransitionNotAllowed)

		// Denied (by an admin, who may answer too): the call never runs,
		// the turn goes on.
		r.llm.Enqueue(llmtest.ToolCall("call_charge_2", "shop__charge", `{"order":43}`))
		r.llm.Enqueue(llmtest.TextChunks("Not charged."))
		denied, err := alice.CreateChat(ctx, sdk.CreateChatRequest{Content: sdk.Text("charge order 43"), Title: "shop 2"})
		require.NoError(t, err)
		waitStatus(t, ctx, alice, denied.ID, sdk.ChatStatusRequiresAction)
		require.NoError(t, admin.Do(ctx, http.MethodPost, "/chats/"+denied.ID.String()+"/tool-approvals",
			map[string]any{"approvals": []map[string]any{{"tool_call_id": "call_charge_2", "approved": false, "reason": "too expensive"}}}, nil))
		waitStatus(t, ctx, alice, denied.ID, sdk.ChatStatusWaiting)
		require.Equal(t, int32(1), shop.charges.Load(), "the denied call never ran")
		res = resultOf(t, ctx, alice, denied.ID, "call_charge_2")
		require.True(t, res.IsError)
		require.JSONEq(t, `{"error":"denied: too expensive"}`, string(res.Result))
		page, err := alice.ChatMessages(ctx, denied.ID, sdk.MessagesOptions{})
		require.NoError(t, err)
		last := page.Messages[len(page.Messages)-1]
		require.Equal(t, "Not charged.", last.Content[0].Text, "the turn continued after the denial")
	})
}

// TestChatToolApprovalTightens: a chat's own tool_approval makes calls the
// configuration lets run wait for approval; it never loosens it.
func TestChatToolApprovalTightens(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shop := startApprovalShop(t)
		mcpConfig, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
			"shop": map[string]any{"url": shop.url, "approvals": map[string]string{"charge": "always"}},
		}})
		require.NoError(t, err)
		r := &approvalRig{t: t, ctx: ctx, newStore: newStore, llm: llmtest.NewOpenAI(t), config: writeMCPConfig(t, string(mcpConfig))}
		r.llm.Enqueue(llmtest.ToolCall("call_price", "shop__price", `{"order":1}`))
		r.llm.Enqueue(llmtest.ToolCall("call_charge", "shop__charge", `{"order":1}`))
		alice, _, _, _ := r.start()

		// "always" on the chat: even the pure call waits.
		var created sdk.CreateChatResponse
		require.NoError(t, alice.Do(ctx, http.MethodPost, "/chats",
			map[string]any{"content": sdk.Text("price"), "title": "strict", "tool_approval": "always"}, &created))
		require.Equal(t, "always", created.Chat.ToolApproval)
		c := waitStatus(t, ctx, alice, created.Chat.ID, sdk.ChatStatusRequiresAction)
		require.Len(t, c.ToolApprovals, 1)
		require.Equal(t, "call_price", c.ToolApprovals[0].ToolCallID)
		require.Equal(t, store.EffectPure, c.ToolApprovals[0].Effect)
		require.Zero(t, shop.price.Load())

		// "never" on the chat does not loosen the tool's "always": PATCH it
		// and answer the price call; the charge call still waits.
		require.NoError(t, alice.Do(ctx, http.MethodPatch, "/chats/"+created.Chat.ID.String(), map[string]any{"tool_approval": "never"}, nil))
		require.NoError(t, alice.Do(ctx, http.MethodPost, "/chats/"+created.Chat.ID.String()+"/tool-approvals",
			map[string]any{"approvals": []map[string]any{{"tool_call_id": "call_price", "approved": true}}}, nil))
		require.Eventually(t, func() bool {
			c, err = alice.Chat(ctx, created.Chat.ID)
			return err == nil && c.Status == sdk.ChatStatusRequiresAction && len(c.ToolApprovals) == 1 && c.ToolApprovals[0].ToolCallID == "call_charge"
		}, time.Minute, 10*time.Millisecond, "the charge call never awaited approval")
		require.Equal(t, int32(1), shop.price.Load())
		require.Zero(t, shop.charges.Load())
		require.Equal(t, "never", c.ToolApproval)

		requireCode(t, alice.Do(ctx, http.MethodPatch, "/chats/"+created.Chat.ID.String(), map[string]any{"tool_approval": "maybe"}, nil),
			http.StatusBadRequest, sdk.CodeValidation)
		requireCode(t, alice.Do(ctx, http.MethodPost, "/chats",
			map[string]any{"content": sdk.Text("x"), "tool_approval": "sometimes"}, nil), http.StatusBadRequest, sdk.CodeValidation)
	})
}

// TestToolApprovalSetting: CHATD_TOOL_APPROVAL is read, and app.New
// refuses a bad value (a construction test: no running app).
func TestToolApprovalSetting(t *testing.T) {
	t.Setenv("CHATD_TOOL_APPROVAL", "effectful")
	require.Equal(t, "effectful", fromEnv(t).Worker.ToolApproval)
	_, err := app.New(context.Background(), config.Config{
		DB: filepath.Join(t.TempDir(), "chatd.db"), Worker: worker.Config{ToolApproval: "sometimes"},
	}, io.Discard)
	require.ErrorContains(t, err, `CHATD_TOOL_APPROVAL: "sometimes" is not never, effectful or always`)
}
