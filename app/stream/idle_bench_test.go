//go:build unix

package stream_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/store/dbtest"
)

// idleViewers is how many connections BenchmarkIdleViewerMemory holds.
const idleViewers = 300

// BenchmarkIdleViewerMemory measures the memory (heap and stacks, both
// ends of the connection, after a collection) and goroutines one idle
// viewer of a chat stream holds, next to a bare coder/websocket
// connection held the same way in the same run: the server writes one
// frame and reads; the client reads.
//
//	go test -run '^$' -bench IdleViewerMemory -benchtime 1x ./app/stream/
func BenchmarkIdleViewerMemory(b *testing.B) {
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
		if err != nil {
			return
		}
		defer conn.CloseNow()
		ctx := conn.CloseRead(r.Context())
		if conn.Write(ctx, websocket.MessageText, []byte("[]")) != nil {
			return
		}
		<-ctx.Done()
	}))
	defer bare.Close()
	baseMem, baseG := holdIdle(b, "ws"+strings.TrimPrefix(bare.URL, "http"), nil)

	r := startApp(b, dbtest.NewSQLite(b), config.Config{NoWorker: true, StreamPollInterval: time.Hour})
	chat := createChat(b, r.client, "")
	mem, g := holdIdle(b, streamURL(r.srv.URL, chat.ID), http.Header{"Authorization": {"Bearer " + token}})

	b.ReportMetric(mem/1024, "viewer-KiB")
	b.ReportMetric(baseMem/1024, "bare-KiB")
	b.ReportMetric(mem/baseMem, "ratio")
	b.ReportMetric(g, "viewer-goroutines")
	b.ReportMetric(baseG, "bare-goroutines")
	b.ReportMetric(0, "ns/op")
}

func heapAndStacks() (uint64, int) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc + ms.StackInuse, runtime.NumGoroutine()
}

// holdIdle opens idleViewers connections, waits for each one's first
// frame, and returns the memory and goroutines per connection.
func holdIdle(b *testing.B, url string, header http.Header) (float64, float64) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mem0, g0 := heapAndStacks()
	var ready, done sync.WaitGroup
	errs := make([]error, idleViewers)
	slots := make(chan struct{}, 32)
	for i := range idleViewers {
		ready.Add(1)
		done.Go(func() {
			slots <- struct{}{}
			conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: header})
			<-slots
			if err != nil {
				errs[i] = err
				ready.Done()
				return
			}
			defer conn.CloseNow()
			_, _, errs[i] = conn.Read(ctx)
			ready.Done()
			_, _, _ = conn.Read(ctx)
		})
	}
	ready.Wait()
	for _, err := range errs {
		require.NoError(b, err)
	}
	b.ResetTimer()
	mem1, g1 := heapAndStacks()
	b.StopTimer()
	cancel()
	done.Wait()
	return (float64(mem1) - float64(mem0)) / idleViewers, float64(g1-g0) / idleViewers
}
