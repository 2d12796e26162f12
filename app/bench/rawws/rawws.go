// Package rawws is the baseline of chatd's token delivery figures: a bare
// coder/websocket server that writes the stream's frames with nothing of
// chatd in between. Every connection gets a preview_reset frame on
// connect (so a reader knows it is ready), then every message_part frame
// Send makes, from one writer goroutine of its own; each frame is encoded
// once for all connections. chatd bench and the app/stream benchmarks
// measure against it in the same run.
package rawws

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// Server is a running baseline server.
type Server struct {
	// URL is the ws:// address to dial.
	URL string

	chatID  uuid.UUID
	srv     *httptest.Server
	mu      sync.Mutex
	writers []chan []byte
}

// New starts a server whose connections each buffer up to frames frames.
func New(frames int) *Server {
	s := &Server{chatID: uuid.New()}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
		if err != nil {
			return
		}
		defer conn.CloseNow()
		ch := make(chan []byte, frames)
		s.mu.Lock()
		s.writers = append(s.writers, ch)
		s.mu.Unlock()
		ctx := conn.CloseRead(r.Context())
		hello, _ := json.Marshal([]sdk.ChatStreamEvent{{Type: sdk.StreamPreviewReset, ChatID: s.chatID}})
		if conn.Write(ctx, websocket.MessageText, hello) != nil {
			return
		}
		for frame := range ch {
			if conn.Write(ctx, websocket.MessageText, frame) != nil {
				return
			}
		}
		conn.Close(websocket.StatusNormalClosure, "")
	}))
	s.URL = "ws" + strings.TrimPrefix(s.srv.URL, "http")
	return s
}

// Send encodes one message_part frame (part seq, text) and hands it to
// every connection's writer.
func (s *Server) Send(seq int64, text string) error {
	frame, err := json.Marshal([]sdk.ChatStreamEvent{{Type: sdk.StreamMessagePart, ChatID: s.chatID, MessagePart: &sdk.ChatStreamMessagePart{
		Role: store.RoleAssistant, Part: sdk.ChatMessagePart{Type: sdk.PartText, Text: text},
		HistoryVersion: 1, GenerationAttempt: 1, Seq: seq,
	}}})
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ch := range s.writers {
		ch <- frame
	}
	return nil
}

// Close ends the writers and stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	for _, ch := range s.writers {
		close(ch)
	}
	s.writers = nil
	s.mu.Unlock()
	s.srv.Close()
}
