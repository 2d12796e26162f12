package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/api"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// watch opens GET {prefix}/chats/watch as c and returns the events it reads.
func (d *fixture) watch(t *testing.T, c *sdk.Client, prefix string) <-chan sdk.ChatWatchEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(d.ctx)
	url := "ws" + strings.TrimPrefix(d.srv.URL, "http") + prefix + "/chats/watch"
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + c.Token}}})
	require.NoError(t, err)
	out := make(chan sdk.ChatWatchEvent, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(out)
		for {
			_, data, err := conn.Read(ctx)
			if err != nil {
				return
			}
			var e sdk.ChatWatchEvent
			if json.Unmarshal(data, &e) == nil {
				out <- e
			}
		}
	}()
	t.Cleanup(func() { cancel(); conn.CloseNow(); <-done })
	return out
}

// next reads events until one of kind about chat arrives (others about it
// are returned too, in order).
func next(t *testing.T, events <-chan sdk.ChatWatchEvent, kind sdk.ChatWatchEventKind, chat string) sdk.ChatWatchEvent {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case e, ok := <-events:
			require.True(t, ok, "the watch closed before %s", kind)
			if e.Kind == kind && e.Chat.ID.String() == chat {
				return e
			}
		case <-timeout:
			t.Fatalf("no %s event for %s", kind, chat)
		}
	}
}

// The chat-list watch: one JSON object per message, {kind, chat}, for the
// caller's chats only, on both stores and under both prefixes.
func TestWatchChats(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		d := setup(t, newStore)
		alice := d.watch(t, d.alice, "/api/experimental")
		bob := d.watch(t, d.bob, "/api/v2")

		// Created (its status changes follow as it runs).
		d.llm.Enqueue(llmtest.TextChunks("Hi"))
		chat, err := d.alice.CreateChat(d.ctx, sdk.CreateChatRequest{Title: "watched", Content: sdk.Text("hello")})
		require.NoError(t, err)
		id := chat.ID.String()
		created := next(t, alice, sdk.ChatWatchEventKindCreated, id)
		require.Equal(t, "watched", created.Chat.Title)
		require.Equal(t, chat.OwnerID, created.Chat.OwnerID)
		d.waitStatus(t, chat.ID, sdk.ChatStatusWaiting)
		// Hints coalesce: a turn that ends before the created event is read
		// shows up as created in waiting, with no status_change after it.
		for e := created; e.Chat.Status != sdk.ChatStatusWaiting; {
			e = next(t, alice, sdk.ChatWatchEventKindStatusChange, id)
		}

		// Title change.
		title := "renamed"
		require.NoError(t, d.alice.UpdateChat(d.ctx, chat.ID, sdk.UpdateChatRequest{Title: &title}))
		require.Equal(t, "renamed", next(t, alice, sdk.ChatWatchEventKindTitleChange, id).Chat.Title)

		// Archive and unarchive: status_change carrying archived.
		yes, no := true, false
		require.NoError(t, d.alice.UpdateChat(d.ctx, chat.ID, sdk.UpdateChatRequest{Archived: &yes}))
		require.True(t, next(t, alice, sdk.ChatWatchEventKindStatusChange, id).Chat.Archived)
		require.NoError(t, d.alice.UpdateChat(d.ctx, chat.ID, sdk.UpdateChatRequest{Archived: &no}))
		require.False(t, next(t, alice, sdk.ChatWatchEventKindStatusChange, id).Chat.Archived)

		// Action required: a dynamic tool call waits for its result.
		d.llm.Enqueue(llmtest.ToolCall("call_1", "lookup", `{}`))
		tooled, err := d.alice.CreateChat(d.ctx, sdk.CreateChatRequest{
			Title:              "tooled", // no title call to take the scripted reply
			Content:            sdk.Text("use the tool"),
			UnsafeDynamicTools: []sdk.DynamicTool{{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		})
		require.NoError(t, err)
		ar := next(t, alice, sdk.ChatWatchEventKindActionRequired, tooled.ID.String())
		require.Equal(t, sdk.ChatStatusRequiresAction, ar.Chat.Status)

		// Deleted.
		require.NoError(t, d.alice.DeleteChat(d.ctx, chat.ID))
		require.Equal(t, chat.ID, next(t, alice, sdk.ChatWatchEventKindDeleted, id).Chat.ID)

		// Bob saw nothing of Alice's; his own chat he sees.
		mine, err := d.bob.CreateChat(d.ctx, sdk.CreateChatRequest{Title: "bob's"})
		require.NoError(t, err)
		first := <-bob
		require.Equal(t, mine.ID, first.Chat.ID, "the first event bob gets is about his own chat")
		require.Equal(t, sdk.ChatWatchEventKindCreated, first.Kind)
	})
}

// The watch needs a caller and counts toward the per-user stream cap.
func TestWatchChatsAuthAndCap(t *testing.T) {
	t.Parallel()
	d := setupLimits(t, newSQLite, api.Limits{MaxStreamsPerUser: 1})
	url := "ws" + strings.TrimPrefix(d.srv.URL, "http") + "/api/v2/chats/watch"
	_, resp, err := websocket.Dial(d.ctx, url, nil)
	require.Error(t, err)
	require.NotNil(t, resp, "%v", err)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	header := http.Header{"Authorization": {"Bearer " + d.alice.Token}}
	conn, _, err := websocket.Dial(d.ctx, url, &websocket.DialOptions{HTTPHeader: header})
	require.NoError(t, err)
	defer conn.CloseNow()
	_, resp, err = websocket.Dial(d.ctx, url, &websocket.DialOptions{HTTPHeader: header})
	require.Error(t, err, "a second stream over the cap of 1")
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
}
