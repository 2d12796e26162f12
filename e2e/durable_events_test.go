package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

type streamEvent struct {
	Type           string                  `json:"type"`
	Message        *sdk.ChatMessage        `json:"message"`
	QueuedMessages []sdk.ChatQueuedMessage `json:"queued_messages"`
}

// ChatMessage and ChatQueuedMessage carry the request_id that admitted
// them, in the stream, in GET /messages and in the queue, so concurrent
// clients can match events to their requests.
func TestDurableEventsCarryRequestID(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		d := setup(t, newStore)
		chat, err := d.alice.CreateChat(d.ctx, sdk.CreateChatRequest{Title: "events"})
		require.NoError(t, err)
		hang := llmtest.Hang()
		d.llm.Enqueue(hang, llmtest.TextChunks("second answer"))
		running, queued := uuid.New(), uuid.New()
		first, err := d.send(d.alice, chat.ID, running, "first")
		require.NoError(t, err)
		<-hang.Started()

		ctx, cancel := context.WithTimeout(d.ctx, 30*time.Second)
		defer cancel()
		conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(d.srv.URL, "http")+"/api/v2/chats/"+chat.ID.String()+"/stream",
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + d.alice.Token}}})
		require.NoError(t, err)
		defer conn.CloseNow()
		conn.SetReadLimit(8 << 20)
		// until reads frames until an event satisfies ok.
		until := func(what string, ok func(streamEvent) bool) streamEvent {
			t.Helper()
			for {
				_, raw, err := conn.Read(ctx)
				require.NoError(t, err, "waiting for %s", what)
				var events []streamEvent
				require.NoError(t, json.Unmarshal(raw, &events))
				for _, e := range events {
					if ok(e) {
						return e
					}
				}
			}
		}
		isUser := func(id uuid.UUID) func(streamEvent) bool {
			return func(e streamEvent) bool {
				return e.Type == "message" && e.Message != nil && e.Message.Role == "user" &&
					e.Message.RequestID != nil && *e.Message.RequestID == id
			}
		}
		// The bootstrap has the running request's message.
		until("the running message", isUser(running))

		// The admission answer and the queue event carry the queued request's id.
		out, err := d.send(d.alice, chat.ID, queued, "second")
		require.NoError(t, err)
		require.Equal(t, queued.String(), out["queued_message"].(map[string]any)["request_id"])
		until("the queued message", func(e streamEvent) bool {
			return e.Type == "queue_update" && len(e.QueuedMessages) == 1 &&
				e.QueuedMessages[0].RequestID != nil && *e.QueuedMessages[0].RequestID == queued
		})
		page, err := d.alice.ChatMessages(d.ctx, chat.ID, sdk.MessagesOptions{})
		require.NoError(t, err)
		require.Len(t, page.QueuedMessages, 1)
		require.Equal(t, queued, *page.QueuedMessages[0].RequestID)
		require.Equal(t, running.String(), first["message"].(map[string]any)["request_id"])

		// Promoted, the message keeps its request's id.
		_, err = d.alice.Interrupt(d.ctx, chat.ID)
		require.NoError(t, err)
		until("the promoted message", isUser(queued))
		d.waitStatus(t, chat.ID, sdk.ChatStatusWaiting)
		page, err = d.alice.ChatMessages(d.ctx, chat.ID, sdk.MessagesOptions{})
		require.NoError(t, err)
		ids := map[string]uuid.UUID{}
		for _, m := range page.Messages {
			if m.Role == "user" {
				require.NotNil(t, m.RequestID, "user message %d", m.ID)
				ids[m.Content[0].Text] = *m.RequestID
			}
		}
		require.Equal(t, map[string]uuid.UUID{"first": running, "second": queued}, ids)

		// A message sent without a request id has none.
		d.llm.Enqueue(llmtest.TextChunks("ok"))
		plain, err := d.alice.SendMessage(d.ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("plain")})
		require.NoError(t, err)
		require.Nil(t, plain.Message.RequestID)
	})
}
