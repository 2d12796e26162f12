//go:build unix

package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
)

// BenchmarkWriterBehind is what a viewer that fell behind costs when it
// catches up: the writer gets the parts that waited for it (what
// takeLocal hands over after a slow write) and writes them to a peer that
// reads and counts. pending=1 is a viewer that keeps up, one token per
// write. frames/op, events/op and wire-B/op are per catch-up; ns/op,
// cpu-ns/op (the process's user and system time) and allocs/op include
// the peer's reads.
//
//	go test -run '^$' -bench WriterBehind -benchmem ./app/stream/
func BenchmarkWriterBehind(b *testing.B) {
	for _, pending := range []int{1, 32, 1000} {
		b.Run(fmt.Sprintf("pending=%d", pending), func(b *testing.B) {
			var frames, events, wire atomic.Int64
			needle := []byte(`"type":"message_part"`)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
				if err != nil {
					return
				}
				defer conn.CloseNow()
				conn.SetReadLimit(4 << 20)
				for {
					_, data, err := conn.Read(r.Context())
					if err != nil {
						return
					}
					frames.Add(1)
					wire.Add(int64(len(data)))
					events.Add(int64(bytes.Count(data, needle)))
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
			loop := NewLoop(chat, nil) // episode (0, 0) is live
			// Tokens as a provider streams them, encoded as the buffer does.
			var words []json.RawMessage
			for _, w := range []string{"The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", ".\n"} {
				text, _ := json.Marshal(w)
				words = append(words, json.RawMessage(`{"type":"text","text":`+string(text)+`}`))
			}
			batch := make([]relayPart, pending)
			seq := int64(0)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU(b)
			for range b.N {
				for j := range batch {
					seq++
					batch[j] = relayPart{Seq: seq, Part: words[seq%int64(len(words))]}
				}
				if err := w.writeParts(ctx, loop, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			cpu := processCPU(b) - cpu0
			// The peer has read everything once the closing handshake is done.
			conn.Close(websocket.StatusNormalClosure, "")
			b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(frames.Load())/float64(b.N), "frames/op")
			b.ReportMetric(float64(events.Load())/float64(b.N), "events/op")
			b.ReportMetric(float64(wire.Load())/float64(b.N), "wire-B/op")
		})
	}
}

// processCPU is the process's user plus system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
