package e2e_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// BenchmarkResume is one viewer joining a running turn, one at a time on
// SQLite: the AI SDK's resume (GET /ai-sdk/chat/{id}/stream, up to the
// replayed text) next to the native WebSocket stream's bootstrap of the
// same chat (up to the buffered part), its baseline. The difference is
// what the AI SDK surface adds: resolving its client chat id and finding
// the turn's user message.
func BenchmarkResume(b *testing.B) {
	r := startAISDK(b, func(t testing.TB) store.Store { return dbtest.NewSQLite(t) })
	hold := make(chan struct{})
	reply := llmtest.Join(llmtest.TextChunks("Part one, "), llmtest.Pause(hold))
	r.llm.Enqueue(reply)
	posted := make(chan error, 1)
	go func() {
		_, err := r.try(r.alice, http.MethodPost, "", submit("bench", userMsg("m1", "go")), nil)
		posted <- err
	}()
	defer func() {
		close(hold)
		if err := <-posted; err != nil {
			b.Error(err)
		}
	}()
	<-reply.Started()

	resume := func() error {
		ctx, cancel := context.WithCancel(r.ctx)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url+"/api/v2/ai-sdk/chat/bench/stream", nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+r.alice)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"text-delta"`) {
				return nil
			}
		}
		if err := sc.Err(); err != nil {
			return err
		}
		return context.Canceled
	}
	// The turn's text is buffered before the first resume is timed.
	for resume() != nil {
		if r.ctx.Err() != nil {
			b.Fatal(r.ctx.Err())
		}
	}
	b.Run("ai-sdk", func(b *testing.B) {
		for b.Loop() {
			if err := resume(); err != nil {
				b.Fatal(err)
			}
		}
	})
	chats, err := r.aliceAPI.ListChats(r.ctx, sdk.ListChatsOptions{})
	if err != nil || len(chats) != 1 {
		b.Fatalf("the chat: %v, %v", chats, err)
	}
	chatID := chats[0].ID.String()
	b.Run("websocket", func(b *testing.B) {
		for b.Loop() {
			ctx, cancel := context.WithCancel(r.ctx)
			conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(r.url, "http")+"/api/v2/chats/"+chatID+"/stream",
				&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + r.alice}}})
			if err != nil {
				b.Fatal(err)
			}
			conn.SetReadLimit(8 << 20)
			for {
				_, raw, err := conn.Read(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if strings.Contains(string(raw), "Part one") && strings.Contains(string(raw), `"message_part"`) {
					break
				}
			}
			conn.CloseNow()
			cancel()
		}
	})
}
