package stream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/partbuf"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// silentPeer is a parts endpoint that accepts the WebSocket and then never
// reads, so it never answers a ping: a replica that hangs with its
// connection open. Its first connection waits for release, then reports
// what reading it returns; later ones wait for the test's end.
type silentPeer struct {
	srv     *httptest.Server
	mu      sync.Mutex
	conns   int
	release chan struct{}
	done    chan struct{}
	readErr chan error
}

func newSilentPeer(t *testing.T) *silentPeer {
	p := &silentPeer{release: make(chan struct{}), done: make(chan struct{}), readErr: make(chan error, 1)}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		p.mu.Lock()
		p.conns++
		first := p.conns == 1
		p.mu.Unlock()
		if !first {
			<-p.done
			return
		}
		select {
		case <-p.release:
		case <-p.done:
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), relayWait)
		defer cancel()
		for err == nil { // the episode selection, then the close
			_, _, err = conn.Read(ctx)
		}
		p.readErr <- err
	}))
	t.Cleanup(func() {
		close(p.done)
		p.srv.Close()
	})
	return p
}

func (p *silentPeer) connections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conns
}

type silentLocator struct{ p *silentPeer }

func (l silentLocator) Local() uuid.UUID { return uuid.Nil }
func (l silentLocator) Token() string    { return "peer-token" }
func (l silentLocator) Replica(context.Context, uuid.UUID) (store.Replica, error) {
	return store.Replica{Address: l.p.srv.URL}, nil
}

// TestRelayDropsSilentPeer: a replica whose parts endpoint stops answering
// pings is dropped after the pong timeout and dialled again, instead of
// holding the viewer's relay forever.
func TestRelayDropsSilentPeer(t *testing.T) {
	t.Parallel()
	p := newSilentPeer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := clock.NewFake(time.Now())
	r := newRelay(ctx, uuid.New(), partbuf.New(partbuf.Config{}), silentLocator{p}, clk, quiet())
	pings := clock.NewFake(time.Now())
	r.ka = keepalive{clock: pings, interval: PingInterval, timeout: 50 * time.Millisecond}
	defer r.stop()

	r.configure(remoteTarget(uuid.New(), 1, 1))
	require.Eventually(t, func() bool { return p.connections() == 1 }, relayWait, 5*time.Millisecond)
	waitCtx, cancelWait := context.WithTimeout(ctx, relayWait)
	defer cancelWait()
	require.NoError(t, pings.BlockUntil(waitCtx, 1), "the keepalive ticker")
	pings.Advance(PingInterval)
	// The ping goes unanswered; after the pong timeout the relay drops the
	// connection and, after its backoff on the clock, dials again.
	require.Eventually(t, func() bool {
		clk.Advance(100 * time.Millisecond)
		return p.connections() == 2
	}, relayWait, 10*time.Millisecond, "the relay drops the silent peer and reconnects")
	p.release <- struct{}{}
	select {
	case err := <-p.readErr:
		require.NotErrorIs(t, err, context.DeadlineExceeded, "the first connection was closed by the relay")
	case <-time.After(relayWait):
		t.Fatal("the first connection is still open")
	}
}

// TestServePartsDropsSilentPeer: the parts endpoint pings the relay that
// dialled it and ends the connection when the pong does not come.
func TestServePartsDropsSilentPeer(t *testing.T) {
	t.Parallel()
	chatID := uuid.New()
	buffer := partbuf.New(partbuf.Config{})
	defer buffer.Stop()
	clk := clock.NewFake(time.Now())
	served := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		served <- serveParts(r.Context(), conn, buffer, chatID, keepalive{clock: clk, interval: PingInterval, timeout: 50 * time.Millisecond})
	}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), relayWait)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	require.NoError(t, err)
	defer conn.CloseNow()
	// It selects an episode, then hangs: it never reads again, so it never
	// answers a ping.
	require.NoError(t, wsjson.Write(ctx, conn, sdk.EpisodeSelect{HistoryVersion: 1, GenerationAttempt: 1}))
	require.NoError(t, clk.BlockUntil(ctx, 1), "the keepalive ticker")
	clk.Advance(PingInterval)
	select {
	case err := <-served:
		require.ErrorContains(t, err, "did not answer a ping")
	case <-ctx.Done():
		t.Fatal("the parts endpoint kept a peer that does not answer pings")
	}
}
