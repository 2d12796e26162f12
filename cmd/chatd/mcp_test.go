package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
)

// shopServer is an MCP server over Streamable HTTP with two tools whose
// first call blocks until the test is done, so chatd can be killed while
// it runs: "charge" (no annotations: effectful) and "price"
// (readOnlyHint: pure). It counts the calls of each.
type shopServer struct {
	url            string
	charges, price atomic.Int32
	started        chan string // the tool name, when a call starts
}

func startShopServer(t *testing.T) *shopServer {
	t.Helper()
	s := &shopServer{started: make(chan string, 4)}
	release := make(chan struct{})
	block := func(ctx context.Context, name string, n int32) {
		s.started <- name
		if n == 1 {
			select { // the effect is under way when chatd dies
			case <-release:
			case <-ctx.Done():
			}
		}
	}
	type args struct {
		Order int `json:"order"`
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "charge", Description: "Charges the customer for an order."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
			block(ctx, "charge", s.charges.Add(1))
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "charged"}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "price", Description: "Looks up an order's price.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
			block(ctx, "price", s.price.Add(1))
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "42 EUR"}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(func() {
		// Sessions of killed chatd processes never said goodbye.
		for ss := range server.Sessions() {
			_ = ss.Close()
		}
		hs.Close()
	})
	t.Cleanup(func() { close(release) }) // runs first
	s.url = hs.URL
	return s
}

// mcpRig is a chatd binary configured with the shop server, a fake OpenAI
// provider, and a client.
type mcpRig struct {
	bin, db, addr string
	env           []string
	llm           *llmtest.Server
	client        *sdk.Client
}

func newMCPRig(t *testing.T, shop *shopServer) *mcpRig {
	t.Helper()
	dir := t.TempDir()
	r := &mcpRig{bin: chatdBinary(t), db: filepath.Join(dir, "chatd.db"), addr: freeAddr(t), llm: llmtest.NewOpenAI(t)}
	config := filepath.Join(dir, "mcp.json")
	body, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"shop": map[string]any{"url": shop.url}}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(config, body, 0o600))
	token := "mcp-test-token"
	r.env = []string{"CHATD_DB=" + r.db, "CHATD_ADDR=" + r.addr, "CHATD_BOOTSTRAP_TOKEN=" + token,
		"OPENAI_BASE_URL=" + r.llm.URL, "CHATD_DEFAULT_MODEL=openai/test-model", "CHATD_MCP_CONFIG=" + config}
	r.client = sdk.New("http://"+r.addr, token)
	return r
}

func (r *mcpRig) start(t *testing.T) *server { return startServer(t, r.bin, r.env, r.addr) }

// killDuring starts a chat whose turn calls tool, and SIGKILLs chatd while
// the call runs. It returns the chat's id.
func (r *mcpRig) killDuring(ctx context.Context, t *testing.T, shop *shopServer, tool string, requestID uuid.UUID) sdk.Chat {
	t.Helper()
	srv := r.start(t)
	var created sdk.CreateChatResponse
	require.NoError(t, r.client.Do(ctx, http.MethodPost, "/chats",
		map[string]any{"content": sdk.Text("order 42"), "title": "shop", "request_id": requestID}, &created))
	select {
	case name := <-shop.started:
		require.Equal(t, tool, name)
	case <-ctx.Done():
		t.Fatalf("the MCP tool never ran:\n%s", srv.out)
	}
	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGKILL))
	<-srv.done
	return created.Chat
}

// TestKilledDuringEffectfulMCPCall: a process SIGKILLed while an effectful
// MCP call runs stops the chat for review after the restart, and the call
// is not repeated.
func TestKilledDuringEffectfulMCPCall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the chatd binary")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	shop := startShopServer(t)
	r := newMCPRig(t, shop)
	r.llm.Enqueue(llmtest.ToolCall("call_charge", "shop__charge", `{"order":42}`))
	r.llm.Enqueue(llmtest.TextChunks("Charged."))

	requestID := uuid.New()
	chat := r.killDuring(ctx, t, shop, "charge", requestID)
	srv := r.start(t)
	require.Eventually(t, func() bool {
		c, err := r.client.Chat(ctx, chat.ID)
		return err == nil && c.Status == sdk.ChatStatusRequiresAction
	}, 30*time.Second, 20*time.Millisecond, "the chat never stopped for review:\n%s", srv.out)
	c, err := r.client.Chat(ctx, chat.ID)
	require.NoError(t, err)
	require.Nil(t, c.RequiresActionDeadlineAt, "a review has no deadline")

	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGTERM))
	<-srv.done
	var inspected apptest.LogBuffer
	require.NoError(t, run(ctx, []string{"invocation", "inspect", "--db", r.db, "--request-id", requestID.String()}, &inspected, &inspected))
	var view struct {
		Claim   struct{ State string }
		Journal []struct{ ToolName, State, Effect string } `json:"tool_journal"`
	}
	require.NoError(t, json.Unmarshal([]byte(inspected.String()), &view), inspected.String())
	require.Equal(t, "unresolved", view.Claim.State)
	require.Len(t, view.Journal, 1)
	require.Equal(t, "shop__charge", view.Journal[0].ToolName)
	require.Equal(t, "unresolved", view.Journal[0].State)
	require.Equal(t, "effectful", view.Journal[0].Effect, "no annotations: effectful")
	require.Equal(t, int32(1), shop.charges.Load(), "the effectful MCP call ran once")
}

// TestKilledDuringPureMCPCall: a pure MCP call a crash interrupted runs
// again, once, after the restart, and its result lands in history.
func TestKilledDuringPureMCPCall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the chatd binary")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	shop := startShopServer(t)
	r := newMCPRig(t, shop)
	r.llm.Enqueue(llmtest.ToolCall("call_price", "shop__price", `{"order":42}`))
	r.llm.Enqueue(llmtest.TextChunks("It costs 42 EUR."))

	chat := r.killDuring(ctx, t, shop, "price", uuid.New())
	srv := r.start(t)
	require.Eventually(t, func() bool {
		c, err := r.client.Chat(ctx, chat.ID)
		return err == nil && c.Status == sdk.ChatStatusWaiting
	}, 30*time.Second, 20*time.Millisecond, "the chat never finished:\n%s", srv.out)
	require.Equal(t, int32(2), shop.price.Load(), "the pure call ran again exactly once")

	page, err := r.client.ChatMessages(ctx, chat.ID, sdk.MessagesOptions{})
	require.NoError(t, err)
	var result *sdk.ChatMessagePart
	for _, m := range page.Messages {
		for i, p := range m.Content {
			if p.Type == sdk.PartToolResult && p.ToolCallID == "call_price" {
				require.Nil(t, result, "one result for the call")
				result = &m.Content[i]
			}
		}
	}
	require.NotNil(t, result, "the result landed in history")
	require.False(t, result.IsError, string(result.Result))
	require.Contains(t, string(result.Result), "42 EUR")
	last := page.Messages[len(page.Messages)-1]
	require.Equal(t, "It costs 42 EUR.", last.Content[0].Text)
}
