package stream

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coder/websocket"
	"github.com/google/uuid"
)

// BenchmarkWriterPart is the per-viewer cost of one live token: the
// writer turns a relayed part into a message_part frame and writes it to
// a WebSocket peer that reads and discards. Its allocations per op are
// what every viewer pays per token (go test -bench WriterPart -benchmem).
func BenchmarkWriterPart(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
		if err != nil {
			return
		}
		defer conn.CloseNow()
		buf := make([]byte, 4096)
		for {
			_, rd, err := conn.Reader(r.Context())
			if err != nil {
				return
			}
			if _, err := io.CopyBuffer(io.Discard, rd, buf); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.CloseNow()
	chat := uuid.New()
	w := &writer{conn: conn, partPrefix: partEventPrefix(chat)}
	loop := NewLoop(chat, nil) // at history 0, attempt 0: parts of episode (0, 0) are live
	part := json.RawMessage(`{"type":"text","text":"token"}`)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		p := relayPart{Seq: int64(i + 1), Part: part}
		if err := w.writeParts(ctx, loop, []relayPart{p}); err != nil {
			b.Fatal(err)
		}
	}
}

// A peer that takes no frame fails the write once the deadline passes:
// the connection is closed, as when a write's context ended.
func TestWriteDeadlineDropsAStuckPeer(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
		if err != nil {
			return
		}
		defer conn.CloseNow()
		<-release // never reads
	}))
	defer srv.Close()
	defer close(release)
	ctx := context.Background()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	require.NoError(t, err)
	defer conn.CloseNow()
	d := newWriteDeadline(ctx, conn, 100*time.Millisecond)
	frame := make([]byte, 1<<20)
	var werr error
	for range 1000 { // loopback buffers take a few MiB at most
		if werr = d.write(frame); werr != nil {
			break
		}
	}
	require.Error(t, werr)
	require.Contains(t, werr.Error(), "did not take a frame within 100ms")
	// The connection is closed: the next write fails at once.
	require.Error(t, d.write([]byte("[]")))
}
