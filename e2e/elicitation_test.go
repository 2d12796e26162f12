package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// startAsker is an in-process MCP server over Streamable HTTP whose "ask"
// tool asks the client for a form with defaults and returns what it got.
func startAsker(t *testing.T) string {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1.0.0"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{
		"name":{"type":"string","default":"Ann"},"age":{"type":"integer","default":30}}}`)
	server.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Who are you?", RequestedSchema: schema})
			if err != nil {
				return nil, err
			}
			out, _ := json.Marshal(map[string]any{"action": res.Action, "content": res.Content})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(func() {
		for ss := range server.Sessions() {
			_ = ss.Close()
		}
		hs.Close()
	})
	return hs.URL
}

// TestElicitation: an MCP server's question during a tool call becomes a
// pending question of the chat that its owner (not another user) answers
// through the API; the server gets the answer with the schema's defaults
// filled, the call's result reaches the model, and the question is
// answered once. Both stores.
func TestElicitation(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		config, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"asker": map[string]any{"url": startAsker(t)}}})
		require.NoError(t, err)
		r := &approvalRig{t: t, ctx: ctx, newStore: newStore, llm: llmtest.NewOpenAI(t), config: writeMCPConfig(t, string(config))}
		r.llm.Enqueue(llmtest.ToolCall("call_ask", "asker__ask", `{}`))
		r.llm.Enqueue(llmtest.TextChunks("Thanks."))
		alice, bob, _, _ := r.start()

		chat, err := alice.CreateChat(ctx, sdk.CreateChatRequest{Content: sdk.Text("ask me"), Title: "asker"})
		require.NoError(t, err)
		path := "/chats/" + chat.ID.String()
		var pending []sdk.Elicitation
		require.Eventually(t, func() bool {
			return alice.Do(ctx, http.MethodGet, path+"/elicitations", nil, &pending) == nil && len(pending) == 1
		}, 30*time.Second, 10*time.Millisecond)
		q := pending[0]
		require.Equal(t, "call_ask", q.ToolCallID)
		require.Equal(t, "asker", q.Server)
		require.Equal(t, sdk.ElicitationModeForm, q.Mode)
		require.Equal(t, "Who are you?", q.Message)
		require.Contains(t, string(q.RequestedSchema), `"default":"Ann"`)
		require.Equal(t, sdk.ElicitationPending, q.State)

		respond := func(c *sdk.Client, body any) error {
			return c.Do(ctx, http.MethodPost, path+"/elicitation-responses", body, nil)
		}
		requireCode(t, respond(bob, map[string]any{"elicitation_id": q.ID, "action": "accept"}), http.StatusNotFound, sdk.CodeNotFound)
		requireCode(t, respond(alice, map[string]any{"elicitation_id": q.ID, "action": "later"}), http.StatusBadRequest, sdk.CodeValidation)
		requireCode(t, respond(alice, map[string]any{"elicitation_id": q.ID, "action": "accept", "content": "Bo"}), http.StatusBadRequest, sdk.CodeValidation)
		require.NoError(t, respond(alice, map[string]any{"elicitation_id": q.ID, "action": "accept", "content": map[string]any{"name": "Bo"}}))
		requireCode(t, respond(alice, map[string]any{"elicitation_id": q.ID, "action": "decline"}), http.StatusConflict, sdk.CodeElicitationAnswered)

		waitStatus(t, ctx, alice, chat.ID, sdk.ChatStatusWaiting)
		res := resultOf(t, ctx, alice, chat.ID, "call_ask")
		var text string
		require.NoError(t, json.Unmarshal(res.Result, &text), "%s", res.Result)
		require.JSONEq(t, `{"action":"accept","content":{"name":"Bo","age":30}}`, text)
		require.NoError(t, alice.Do(ctx, http.MethodGet, path+"/elicitations", nil, &pending))
		require.Empty(t, pending)
	})
}

// TestElicitationHoldsNoSlot: with one root slot, a chat whose tool call
// waits on a question holds no slot, so another chat runs meanwhile; once
// answered the first chat waits for the slot the other holds, then takes
// it and finishes. Both stores.
func TestElicitationHoldsNoSlot(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		config, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"asker": map[string]any{"url": startAsker(t)}}})
		require.NoError(t, err)
		r := &approvalRig{t: t, ctx: ctx, newStore: newStore, llm: llmtest.NewOpenAI(t), config: writeMCPConfig(t, string(config)), rootLimit: 1}
		release := make(chan struct{})
		slow := llmtest.Join(llmtest.TextChunks("B "), llmtest.Pause(release), llmtest.TextChunks("done."))
		r.llm.Enqueue(llmtest.ToolCall("call_ask", "asker__ask", `{}`), slow, llmtest.TextChunks("Thanks."))
		alice, _, _, _ := r.start()

		a, err := alice.CreateChat(ctx, sdk.CreateChatRequest{Content: sdk.Text("ask me"), Title: "A"})
		require.NoError(t, err)
		path := "/chats/" + a.ID.String()
		var pending []sdk.Elicitation
		require.Eventually(t, func() bool {
			return alice.Do(ctx, http.MethodGet, path+"/elicitations", nil, &pending) == nil && len(pending) == 1
		}, 30*time.Second, 10*time.Millisecond)

		b, err := alice.CreateChat(ctx, sdk.CreateChatRequest{Content: sdk.Text("hello"), Title: "B"})
		require.NoError(t, err)
		select {
		case <-slow.Started(): // B runs while A waits on its question
		case <-time.After(30 * time.Second): // before A's tool call times out and frees the slot anyway
			t.Fatal("chat B never ran while chat A waited on a question (A held the only slot)")
		}

		require.NoError(t, alice.Do(ctx, http.MethodPost, path+"/elicitation-responses",
			map[string]any{"elicitation_id": pending[0].ID, "action": "accept", "content": map[string]any{"name": "Bo"}}, nil))
		require.Never(t, func() bool { return len(r.llm.Requests()) > 2 }, 500*time.Millisecond, 20*time.Millisecond,
			"answered, chat A went on while chat B held the only slot")
		got, err := alice.Chat(ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, sdk.ChatStatusRunning, got.Status)

		close(release)
		waitStatus(t, ctx, alice, b.ID, sdk.ChatStatusWaiting)
		waitStatus(t, ctx, alice, a.ID, sdk.ChatStatusWaiting)
		var text string
		require.NoError(t, json.Unmarshal(resultOf(t, ctx, alice, a.ID, "call_ask").Result, &text))
		require.JSONEq(t, `{"action":"accept","content":{"name":"Bo","age":30}}`, text)
		require.Len(t, r.llm.Requests(), 3)
	})
}

// questionEvents reads a chat's stream, keeping its status and
// elicitation_update events.
type questionEvents struct {
	t    *testing.T
	ctx  context.Context
	conn *websocket.Conn
}

type questionEvent struct {
	Type         string                `json:"type"`
	Status       *sdk.ChatStreamStatus `json:"status"`
	Elicitations *[]sdk.Elicitation    `json:"elicitations"`
}

func openQuestionEvents(t *testing.T, ctx context.Context, c *sdk.Client, chat uuid.UUID) *questionEvents {
	t.Helper()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(c.BaseURL, "http")+"/api/v2/chats/"+chat.String()+"/stream",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + c.Token}}})
	require.NoError(t, err)
	conn.SetReadLimit(8 << 20)
	t.Cleanup(func() { conn.CloseNow() })
	return &questionEvents{t: t, ctx: ctx, conn: conn}
}

// until reads frames until an event satisfies ok.
func (q *questionEvents) until(what string, ok func(questionEvent) bool) questionEvent {
	q.t.Helper()
	for {
		_, raw, err := q.conn.Read(q.ctx)
		require.NoError(q.t, err, "waiting for %s", what)
		var events []questionEvent
		require.NoError(q.t, json.Unmarshal(raw, &events))
		for _, e := range events {
			if ok(e) {
				return e
			}
		}
	}
}

func isQuestions(n int) func(questionEvent) bool {
	return func(e questionEvent) bool {
		return e.Type == sdk.StreamElicitationUpdate && e.Elicitations != nil && len(*e.Elicitations) == n
	}
}

// TestElicitationOnStream: the chat's stream carries its questions: an
// elicitation_update with the question when it is asked (live, and at the
// bootstrap of a stream opened while it waits), and one with none left
// once it is answered. Both stores.
func TestElicitationOnStream(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		config, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"asker": map[string]any{"url": startAsker(t)}}})
		require.NoError(t, err)
		r := &approvalRig{t: t, ctx: ctx, newStore: newStore, llm: llmtest.NewOpenAI(t), config: writeMCPConfig(t, string(config))}
		release := make(chan struct{})
		first := llmtest.Join(llmtest.Pause(release), llmtest.ToolCall("call_ask", "asker__ask", `{}`))
		r.llm.Enqueue(first, llmtest.TextChunks("Thanks."))
		alice, _, _, _ := r.start()

		chat, err := alice.CreateChat(ctx, sdk.CreateChatRequest{Content: sdk.Text("ask me"), Title: "asker"})
		require.NoError(t, err)
		<-first.Started()
		live := openQuestionEvents(t, ctx, alice, chat.ID)
		boot := live.until("the bootstrap's status", func(e questionEvent) bool { return e.Type == sdk.StreamStatus })
		require.Equal(t, sdk.ChatStatusRunning, boot.Status.Status)

		close(release)
		asked := *live.until("the question, live", isQuestions(1)).Elicitations
		q := asked[0]
		require.Equal(t, "call_ask", q.ToolCallID)
		require.Equal(t, sdk.ElicitationPending, q.State)
		require.Equal(t, "Who are you?", q.Message)
		require.Contains(t, string(q.RequestedSchema), `"default":"Ann"`)

		late := openQuestionEvents(t, ctx, alice, chat.ID)
		got := *late.until("the question, at bootstrap", isQuestions(1)).Elicitations
		require.Equal(t, q.ID, got[0].ID)

		require.NoError(t, alice.Do(ctx, http.MethodPost, "/chats/"+chat.ID.String()+"/elicitation-responses",
			map[string]any{"elicitation_id": q.ID, "action": "decline"}, nil))
		live.until("no question left", isQuestions(0))
		late.until("no question left", isQuestions(0))
		live.until("the turn's end", func(e questionEvent) bool {
			return e.Type == sdk.StreamStatus && e.Status.Status == sdk.ChatStatusWaiting
		})
	})
}
