package stream_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// A viewer that stops reading its socket holds up neither the generating
// goroutine nor the other viewers: every part reaches the reading viewer,
// once and in order, while the stalled one has not read a frame. The
// parts wait in the episode, not in a per-viewer queue the producer
// fills. When the stalled viewer reads again, what waited for it comes
// coalesced: the same text in fewer events than parts.
func TestStalledViewerBlocksNobody(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		ctx := context.Background()
		r := startApp(t, newStore(t), config.Config{NoWorker: true})
		chat := createChat(t, r.client, "go")
		ep := generating(t, r, chat.ID)

		// The stalled viewer reads its bootstrap, up to preview_reset,
		// then nothing.
		readFrame := bootedFrames(t, ctx, r.srv.URL, chat.ID)
		reader := dial(t, r.srv.URL, chat.ID)
		reader.untilType(sdk.StreamPreviewReset)

		// About 900 KiB of parts: more than the socket buffers of the
		// stalled connection take.
		const n = 900
		filler := strings.Repeat("x", 1000)
		var want strings.Builder
		for i := 1; i <= n; i++ {
			tok := fmt.Sprintf("%d %s|", i, filler)
			want.WriteString(tok)
			require.NoError(t, r.app.Internals().Buffer.AddPart(ep, sdk.ChatMessagePart{Type: sdk.PartText, Text: tok}))
		}
		text, _, last := partText(t, reader.untilPart(n))
		require.Equal(t, want.String(), text)
		require.Equal(t, int64(n), last)

		var events []sdk.ChatStreamEvent
		frames := 0
		for last = 0; last < n; {
			frame := readFrame()
			frames++
			events = append(events, frame...)
			for _, e := range frame {
				if e.Type == sdk.StreamMessagePart {
					last = e.MessagePart.Seq
				}
			}
		}
		text, parts, _ := partText(t, events)
		require.Equal(t, want.String(), text, "the stalled viewer gets the same text")
		require.Less(t, parts, n, "in fewer events than parts")
		require.Less(t, frames, n, "and fewer frames")
	})
}

// A viewer that stops answering pings is dropped after the pong timeout:
// the keepalive that runs in the stream's loop pings an idle viewer.
func TestSilentViewerDropped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(time.Now())
	r := startApp(t, dbtest.NewSQLite(t), config.Config{NoWorker: true, Clock: clk, StreamPingInterval: time.Hour, StreamPongTimeout: 50 * time.Millisecond})
	chat := createChat(t, r.client, "")
	conn, _, err := websocket.Dial(ctx, streamURL(r.srv.URL, chat.ID), &websocket.DialOptions{
		HTTPHeader: http.Header{"Coder-Session-Token": {token}},
	})
	require.NoError(t, err)
	defer conn.CloseNow()
	_, _, err = conn.Read(ctx) // the bootstrap; then the client reads nothing, so pongs never come
	require.NoError(t, err)
	require.Equal(t, 1.0, gauge(t, r.app.Internals().Metrics.Registry, "chatd_stream_viewers"))
	clk.Advance(time.Hour)
	require.Eventually(t, func() bool { return gauge(t, r.app.Internals().Metrics.Registry, "chatd_stream_viewers") == 0 },
		waitTimeout, 10*time.Millisecond, "the silent viewer is dropped")
}
