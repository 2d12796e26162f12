//go:build unix

package stream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/bench/rawws"
	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/partbuf"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store/dbtest"
)

// benchTokens is how many parts each case streams per iteration.
const benchTokens = 200

// BenchmarkStreamLatency measures token delivery latency, from the
// provider's part entering the replica's part buffer (partbuf.AddPart, as
// the generation goroutine does) to its arrival at 1, 100 and 1000
// WebSocket viewers of the chat stream on loopback. The same run measures a
// baseline server that writes the same JSON frames straight to the same
// number of connections; the ratios are stream/baseline. Tokens are paced
// (like a provider) so that the latency is not a measure of queueing; on a
// busy machine the 1000-viewer case can still fall behind, which the CPU
// cost per delivered token (process user+system time, both ends of every
// connection included) shows independently of scheduling.
//
//	go test -run '^$' -bench StreamLatency -benchtime 1x ./app/stream/
func BenchmarkStreamLatency(b *testing.B) {
	for _, viewers := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("viewers=%d", viewers), func(b *testing.B) {
			// Leave each token time to reach every viewer on two cores.
			interval := max(time.Millisecond, time.Duration(viewers)*30*time.Microsecond)
			base, baseCPU := benchBaseline(b, viewers, interval)
			got, cpu := benchStream(b, viewers, interval)
			bp50, bp99 := percentile(base, 50), percentile(base, 99)
			p50, p99 := percentile(got, 50), percentile(got, 99)
			b.ReportMetric(micros(p50), "p50-µs")
			b.ReportMetric(micros(p99), "p99-µs")
			b.ReportMetric(micros(bp50), "base-p50-µs")
			b.ReportMetric(micros(bp99), "base-p99-µs")
			b.ReportMetric(float64(p50)/float64(bp50), "p50-ratio")
			b.ReportMetric(float64(p99)/float64(bp99), "p99-ratio")
			b.ReportMetric(micros(cpu), "cpu-µs/delivery")
			b.ReportMetric(micros(baseCPU), "base-cpu-µs/delivery")
			b.ReportMetric(0, "ns/op")
		})
	}
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

// benchStream streams parts through a real app: a chat owned by the app's
// worker id, its episode in the app's buffer, viewers on /stream.
func benchStream(b *testing.B, viewers int, interval time.Duration) ([]time.Duration, time.Duration) {
	ctx := context.Background()
	r := startApp(b, dbtest.NewSQLite(b), config.Config{NoWorker: true, StreamPollInterval: time.Hour})
	chat := createChat(b, r.client, "bench")
	require.NoError(b, r.app.Internals().Machine.Do(ctx, func(tx *chatstate.Tx) error {
		if _, err := tx.Acquire(chat.ID, r.app.Internals().Worker.ID(), uuid.New()); err != nil {
			return err
		}
		_, err := tx.RecordGenerationAttempt(chat.ID)
		return err
	}))
	row := chatRow(b, r.app.Internals().Store, chat.ID)
	ep := partbuf.Episode{ChatID: chat.ID, HistoryVersion: row.HistoryVersion, GenerationAttempt: row.GenerationAttempt}
	require.NoError(b, r.app.Internals().Buffer.CreateEpisode(ep))
	header := http.Header{"Authorization": {"Bearer " + token}}
	// The bootstrap ends with preview_reset, after the relay is pointed at
	// the episode.
	ready := func(e sdk.ChatStreamEvent) bool { return e.Type == sdk.StreamPreviewReset }
	return measure(b, streamURL(r.srv.URL, chat.ID), header, viewers, ready, interval, func(i int64, sent time.Duration) {
		part := sdk.ChatMessagePart{Type: sdk.PartText, Text: " " + strconv.FormatInt(int64(sent), 10)}
		require.NoError(b, r.app.Internals().Buffer.AddPart(ep, part))
	})
}

// benchBaseline writes the stream's message_part frames directly: one
// writer goroutine per connection, the frame encoded once per token.
func benchBaseline(b *testing.B, viewers int, interval time.Duration) ([]time.Duration, time.Duration) {
	raw := rawws.New(benchTokens * b.N)
	defer raw.Close()
	ready := func(e sdk.ChatStreamEvent) bool { return e.Type == sdk.StreamPreviewReset }
	return measure(b, raw.URL, nil, viewers, ready, interval, func(seq int64, sent time.Duration) {
		require.NoError(b, raw.Send(seq, " "+strconv.FormatInt(int64(sent), 10)))
	})
}

// measure connects viewers to url, waits until each is ready, then emits
// benchTokens*b.N parts, one per interval, and returns every viewer's
// latency for every part and the process CPU time per delivered part. A
// part's text is a space and its emission time since the run's start, so
// readers need no shared state, and a viewer that fell behind reads each
// token of a merged part.
func measure(b *testing.B, url string, header http.Header, viewers int, ready func(sdk.ChatStreamEvent) bool,
	interval time.Duration, emit func(seq int64, sent time.Duration),
) ([]time.Duration, time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	want := benchTokens * b.N
	results := make([][]time.Duration, viewers)
	var readyWG, doneWG sync.WaitGroup
	conns := make([]*websocket.Conn, viewers)
	dialSlots := make(chan struct{}, 32)
	errs := make(chan error, viewers)
	for i := range viewers {
		readyWG.Add(1)
		doneWG.Add(1)
		dialSlots <- struct{}{}
		go func() {
			defer doneWG.Done()
			conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: header})
			<-dialSlots
			if err != nil {
				readyWG.Done()
				errs <- err
				return
			}
			conn.SetReadLimit(1 << 22)
			conns[i] = conn
			lat := make([]time.Duration, 0, want)
			isReady := false
			for len(lat) < want {
				_, data, err := conn.Read(ctx)
				if err != nil {
					if !isReady {
						readyWG.Done()
					}
					errs <- err
					return
				}
				now := time.Since(start)
				var frame []sdk.ChatStreamEvent
				if err := json.Unmarshal(data, &frame); err != nil {
					errs <- err
					return
				}
				for _, e := range frame {
					switch {
					case e.Type == sdk.StreamMessagePart:
						// A viewer that fell behind gets tokens merged.
						for f := range strings.FieldsSeq(e.MessagePart.Part.Text) {
							sent, _ := strconv.ParseInt(f, 10, 64)
							lat = append(lat, now-time.Duration(sent))
						}
					case !isReady && ready(e):
						isReady = true
						readyWG.Done()
					}
				}
			}
			results[i] = lat
		}()
	}
	readyWG.Wait()
	select {
	case err := <-errs:
		b.Fatalf("viewer: %v", err)
	default:
	}
	b.ResetTimer()
	cpu0 := cpuTime(b)
	tick := time.NewTicker(interval)
	for seq := int64(1); seq <= int64(want); seq++ {
		<-tick.C
		emit(seq, time.Since(start))
	}
	tick.Stop()
	doneWG.Wait()
	b.StopTimer()
	cpu := (cpuTime(b) - cpu0) / time.Duration(viewers*want)
	close(errs)
	for err := range errs {
		b.Fatalf("viewer: %v", err)
	}
	var all []time.Duration
	for i, lat := range results {
		require.Len(b, lat, want, "viewer %d", i)
		all = append(all, lat...)
	}
	for _, c := range conns {
		c.Close(websocket.StatusNormalClosure, "")
	}
	return all, cpu
}

// cpuTime is the process's user plus system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
