package stream_test

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

const token = "stream-test-token"

// TestStreamTurn: a viewer connected before the turn sees the bootstrap,
// the user message, live parts and the committed reply, in order.
func TestStreamTurn(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		// Paced tokens: an episode that starts and commits between two of
		// the viewer's fetches is never relayed (hints coalesce), so an
		// instant reply could show no parts at all.
		a, err := app.NewWithStore(ctx, config.Config{BootstrapToken: token, DemoTokenDelay: time.Millisecond}, newStore(t), io.Discard)
		require.NoError(t, err)
		defer a.Close()
		srv := httptest.NewServer(a.Handler())
		defer srv.Close()
		a.SetAdvertiseURL(srv.URL)
		require.NoError(t, a.Start(ctx))
		defer a.Stop()

		client := sdk.New(srv.URL, token)
		chat, err := client.CreateChat(ctx, sdk.CreateChatRequest{})
		require.NoError(t, err)

		url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/api/v2/chats/" + chat.ID.String() + "/stream"
		conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: map[string][]string{"Coder-Session-Token": {token}}})
		require.NoError(t, err)
		defer conn.CloseNow()

		var events []sdk.ChatStreamEvent
		read := func(until func(sdk.ChatStreamEvent) bool) {
			for {
				var frame []sdk.ChatStreamEvent
				require.NoError(t, wsjson.Read(ctx, conn, &frame))
				require.NotEmpty(t, frame)
				require.LessOrEqual(t, len(frame), 256)
				for _, e := range frame {
					events = append(events, e)
					if until(e) {
						return
					}
				}
			}
		}
		read(func(e sdk.ChatStreamEvent) bool { return e.Type == sdk.StreamStatus })
		_, err = client.SendMessage(ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("hello stream")})
		require.NoError(t, err)
		read(func(e sdk.ChatStreamEvent) bool {
			return e.Type == sdk.StreamStatus && e.Status.Status == sdk.ChatStatusWaiting && len(events) > 3
		})

		var types []string
		var text strings.Builder
		var seq int64
		var assistant *sdk.ChatMessage
		for _, e := range events {
			types = append(types, e.Type)
			if e.Type == sdk.StreamMessagePart {
				require.Greater(t, e.MessagePart.Seq, seq, "seq increases (by more than 1 where parts were merged)")
				seq = e.MessagePart.Seq
				text.WriteString(e.MessagePart.Part.Text)
			}
			if e.Type == sdk.StreamMessage && e.Message.Role == "assistant" {
				assistant = e.Message
			}
		}
		require.Equal(t, []string{sdk.StreamQueueUpdate, sdk.StreamStatus}, types[:2], "bootstrap of an empty chat")
		require.Contains(t, types, sdk.StreamMessagePart)
		require.NotNil(t, assistant, "the committed reply arrives")
		// Parts still in flight when the step commits belong to an episode
		// the loop has left (spec: "Part operation"), so the live preview is
		// a prefix of the committed text, not always all of it.
		require.True(t, strings.HasPrefix(assistant.Content[0].Text, text.String()),
			"live parts %q are a prefix of the committed text %q", text.String(), assistant.Content[0].Text)
	})
}
