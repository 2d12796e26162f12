package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
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

const relayWait = 10 * time.Second

// peer is another replica's parts endpoint over its own part buffer. It
// counts connections and can drop the open ones.
type peer struct {
	t      *testing.T
	buffer *partbuf.Buffer
	srv    *httptest.Server
	chatID uuid.UUID

	mu    sync.Mutex
	conns int
	open  map[int]context.CancelFunc
	ended chan int // a connection's handler returned
}

func newPeer(t *testing.T, chatID uuid.UUID) *peer {
	p := &peer{t: t, buffer: partbuf.New(partbuf.Config{}), chatID: chatID, open: map[int]context.CancelFunc{}, ended: make(chan int, 16)}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(ReplicaTokenHeader) != localToken || r.Header.Get(ReplicaWorkerHeader) == "" || r.URL.Path != "/api/v2/chats/"+chatID.String()+"/stream/parts" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		ctx, cancel := context.WithCancel(r.Context())
		p.mu.Lock()
		p.conns++
		id := p.conns
		p.open[id] = cancel
		p.mu.Unlock()
		_ = serveParts(ctx, conn, p.buffer, chatID, defaultKeepalive(clock.Real{}))
		p.mu.Lock()
		delete(p.open, id)
		p.mu.Unlock()
		p.ended <- id
	}))
	t.Cleanup(func() {
		p.dropAll()
		p.srv.Close()
		p.buffer.Stop()
	})
	return p
}

func (p *peer) replica() store.Replica { return store.Replica{Address: p.srv.URL} }

// localToken is the relaying replica's own token, which peers check.
const localToken = "local-token"

func (p *peer) connections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conns
}

// dropAll ends every open connection from the server side.
func (p *peer) dropAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, cancel := range p.open {
		cancel()
	}
}

// episode creates an episode with parts "<prefix>1".."<prefix>n".
func (p *peer) episode(hv, ga int64, prefix string, n int) partbuf.Episode {
	ep := partbuf.Episode{ChatID: p.chatID, HistoryVersion: hv, GenerationAttempt: ga}
	require.NoError(p.t, p.buffer.CreateEpisode(ep))
	addParts(p.t, p.buffer, ep, prefix, 1, n)
	return ep
}

func addParts(t *testing.T, b *partbuf.Buffer, ep partbuf.Episode, prefix string, from, to int) {
	for i := from; i <= to; i++ {
		require.NoError(t, b.AddPart(ep, sdk.ChatMessagePart{Type: sdk.PartText, Text: fmt.Sprintf("%s%d", prefix, i)}))
	}
}

// locator resolves workers to peers.
type locator struct {
	local uuid.UUID
	peers map[uuid.UUID]*peer
}

func (l locator) Local() uuid.UUID { return l.local }

func (l locator) Token() string { return localToken }

func (l locator) Replica(_ context.Context, worker uuid.UUID) (store.Replica, error) {
	p, ok := l.peers[worker]
	if !ok {
		return store.Replica{}, store.ErrNotFound
	}
	return p.replica(), nil
}

// receive reads n parts from the relay.
func receive(t *testing.T, r *relay, n int) []relayPart {
	t.Helper()
	var out []relayPart
	for len(out) < n {
		select {
		case p := <-r.out:
			out = append(out, p)
		case <-r.localWake():
			out = append(out, r.takeLocal()...)
		case <-time.After(relayWait):
			t.Fatalf("timed out after %d of %d parts: %+v", len(out), n, out)
		}
	}
	return out
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func partTexts(ps []relayPart) string {
	var b strings.Builder
	for _, p := range ps {
		var part sdk.ChatMessagePart
		if err := json.Unmarshal(p.Part, &part); err != nil {
			part.Text = "<" + err.Error() + ">"
		}
		fmt.Fprintf(&b, "%d/%d/%d:%s ", p.HistoryVersion, p.GenerationAttempt, p.Seq, part.Text)
	}
	return strings.TrimSpace(b.String())
}

func remoteTarget(worker uuid.UUID, hv, ga int64) Target {
	return Target{WorkerID: uuid.NullUUID{UUID: worker, Valid: true}, HistoryVersion: hv, GenerationAttempt: ga}
}

// TestRelayRemoteEpisodes: a remote worker's parts come over one parts
// connection; a new episode of the same worker is selected on it with a
// control message, not a new connection.
func TestRelayRemoteEpisodes(t *testing.T) {
	t.Parallel()
	chatID := uuid.New()
	b := newPeer(t, chatID)
	wb := uuid.New()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newRelay(ctx, chatID, partbuf.New(partbuf.Config{}), locator{local: uuid.New(), peers: map[uuid.UUID]*peer{wb: b}}, clock.Real{}, quiet())
	defer r.stop()

	ep := b.episode(5, 1, "a", 2)
	r.configure(remoteTarget(wb, 5, 1))
	require.Equal(t, "5/1/1:a1 5/1/2:a2", partTexts(receive(t, r, 2)), "buffered parts first")
	addParts(t, b.buffer, ep, "a", 3, 3)
	require.Equal(t, "5/1/3:a3", partTexts(receive(t, r, 1)), "then live ones")
	b.buffer.CloseEpisode(ep)

	r.configure(remoteTarget(wb, 5, 2))
	b.episode(5, 2, "b", 2)
	require.Equal(t, "5/2/1:b1 5/2/2:b2", partTexts(receive(t, r, 2)))
	r.configure(remoteTarget(wb, 7, 1))
	b.episode(7, 1, "c", 1)
	require.Equal(t, "7/1/1:c1", partTexts(receive(t, r, 1)))
	require.Equal(t, 1, b.connections(), "episode changes reuse the connection")

	r.configure(remoteTarget(wb, 7, 1))
	require.Equal(t, 1, b.connections(), "the same target is a no-op")
}

// TestRelayWorkerChange: a new worker means a connection to its replica,
// and the old connection is closed; no worker closes it too.
func TestRelayWorkerChange(t *testing.T) {
	t.Parallel()
	chatID := uuid.New()
	b, c := newPeer(t, chatID), newPeer(t, chatID)
	wb, wc := uuid.New(), uuid.New()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newRelay(ctx, chatID, partbuf.New(partbuf.Config{}), locator{local: uuid.New(), peers: map[uuid.UUID]*peer{wb: b, wc: c}}, clock.Real{}, quiet())
	defer r.stop()

	b.episode(3, 1, "b", 2)
	r.configure(remoteTarget(wb, 3, 1))
	require.Equal(t, "3/1/1:b1 3/1/2:b2", partTexts(receive(t, r, 2)))

	c.episode(3, 2, "c", 2)
	r.configure(remoteTarget(wc, 3, 2))
	require.Equal(t, "3/2/1:c1 3/2/2:c2", partTexts(receive(t, r, 2)))
	waitEnded(t, b)
	require.Equal(t, 1, c.connections())

	r.configure(Target{})
	waitEnded(t, c)
}

func waitEnded(t *testing.T, p *peer) {
	t.Helper()
	select {
	case <-p.ended:
	case <-time.After(relayWait):
		t.Fatal("the relay did not close its parts connection")
	}
}

// TestRelayReconnectReselects: when the parts connection drops, the relay
// reconnects and selects the current episode again, so the stream goes on.
func TestRelayReconnectReselects(t *testing.T) {
	t.Parallel()
	chatID := uuid.New()
	b := newPeer(t, chatID)
	wb := uuid.New()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := clock.NewFake(time.Now())
	r := newRelay(ctx, chatID, partbuf.New(partbuf.Config{}), locator{local: uuid.New(), peers: map[uuid.UUID]*peer{wb: b}}, clk, quiet())
	defer r.stop()

	ep := b.episode(4, 1, "a", 2)
	r.configure(remoteTarget(wb, 4, 1))
	require.Equal(t, "4/1/1:a1 4/1/2:a2", partTexts(receive(t, r, 2)))
	b.dropAll()
	waitEnded(t, b)
	waitCtx, cancelWait := context.WithTimeout(ctx, relayWait)
	defer cancelWait()
	require.NoError(t, clk.BlockUntil(waitCtx, 1), "the relay backs off on its clock")
	require.Equal(t, 1, b.connections(), "no reconnect before the backoff")
	clk.Advance(100 * time.Millisecond)
	require.Eventually(t, func() bool { return b.connections() == 2 }, relayWait, 10*time.Millisecond, "the relay reconnects")

	addParts(t, b.buffer, ep, "a", 3, 3)
	// The new connection replays the episode from seq 1 (the loop drops
	// what it already has); what matters is that part 3 arrives.
	var got []relayPart
	timeout := time.After(2 * time.Second)
	for len(got) < 3 {
		select {
		case p := <-r.out:
			got = append(got, p)
			continue
		case <-timeout:
		}
		break
	}
	require.Equal(t, "4/1/1:a1 4/1/2:a2 4/1/3:a3", partTexts(got),
		"after a reconnect the relay must select the current episode again; "+
			"relay.runRemote only sends rc.pending, which the first connection consumed, so the new connection streams nothing")
}

// TestRelayLocal: the local worker's parts are read from this replica's
// buffer, without dialing.
func TestRelayLocal(t *testing.T) {
	t.Parallel()
	chatID := uuid.New()
	local := uuid.New()
	buf := partbuf.New(partbuf.Config{})
	defer buf.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newRelay(ctx, chatID, buf, locator{local: local}, clock.Real{}, quiet())
	defer r.stop()

	ep := partbuf.Episode{ChatID: chatID, HistoryVersion: 2, GenerationAttempt: 1}
	r.configure(remoteTarget(local, 2, 1)) // before the episode exists
	require.NoError(t, buf.CreateEpisode(ep))
	addParts(t, buf, ep, "l", 1, 3)
	require.Equal(t, "2/1/1:l1 2/1/2:l2 2/1/3:l3", partTexts(receive(t, r, 3)))

	ep2 := partbuf.Episode{ChatID: chatID, HistoryVersion: 2, GenerationAttempt: 2}
	require.NoError(t, buf.CreateEpisode(ep2))
	addParts(t, buf, ep2, "m", 1, 1)
	addParts(t, buf, ep, "l", 4, 4)
	r.configure(remoteTarget(local, 2, 2))
	addParts(t, buf, ep2, "m", 2, 2)
	// The new episode arrives whole and in order. The old subscription is
	// cancelled but not waited for, so a part of the old episode that was
	// in flight may still come through, even after the new episode's
	// parts; the loop drops it (wrong episode), so viewers never see it.
	var current []relayPart
	for len(current) < 2 {
		for _, p := range receive(t, r, 1) {
			if p.GenerationAttempt == 2 {
				current = append(current, p)
			}
		}
	}
	require.Equal(t, "2/2/1:m1 2/2/2:m2", partTexts(current))
}

// TestServeParts: the parts endpoint serves the selected episode (buffered
// parts, then live ones, contiguous from 1), waits quietly for an episode
// that does not exist yet, and switches on a new selection.
func TestServeParts(t *testing.T) {
	t.Parallel()
	chatID := uuid.New()
	b := newPeer(t, chatID)
	ctx, cancel := context.WithTimeout(context.Background(), relayWait)
	defer cancel()
	url := "ws" + strings.TrimPrefix(b.srv.URL, "http") + "/api/v2/chats/" + chatID.String() + "/stream/parts"
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{ReplicaWorkerHeader: {uuid.NewString()}, ReplicaTokenHeader: {localToken}}})
	require.NoError(t, err)
	defer conn.CloseNow()
	read := func(n int) string {
		var got []relayPart
		for len(got) < n {
			var frame []sdk.PartFrame
			require.NoError(t, wsjson.Read(ctx, conn, &frame))
			require.NotEmpty(t, frame)
			for _, f := range frame {
				part, err := json.Marshal(f.Part)
				require.NoError(t, err)
				got = append(got, relayPart{f.HistoryVersion, f.GenerationAttempt, f.Seq, part})
			}
		}
		require.Len(t, got, n)
		return partTexts(got)
	}

	// A missing episode is not an error: nothing is sent until it exists.
	require.NoError(t, wsjson.Write(ctx, conn, sdk.EpisodeSelect{HistoryVersion: 9, GenerationAttempt: 1}))
	ep := b.episode(9, 1, "x", 2)
	require.Equal(t, "9/1/1:x1 9/1/2:x2", read(2))
	addParts(t, b.buffer, ep, "x", 3, 4)
	require.Equal(t, "9/1/3:x3 9/1/4:x4", read(2))

	b.episode(9, 2, "y", 1)
	require.NoError(t, wsjson.Write(ctx, conn, sdk.EpisodeSelect{HistoryVersion: 9, GenerationAttempt: 2}))
	require.Equal(t, "9/2/1:y1", read(1))
	addParts(t, b.buffer, ep, "x", 5, 5) // the old episode is no longer served
	b.buffer.CloseEpisode(ep)
	require.NoError(t, wsjson.Write(ctx, conn, sdk.EpisodeSelect{HistoryVersion: 9, GenerationAttempt: 1}))
	require.Equal(t, "9/1/1:x1 9/1/2:x2 9/1/3:x3 9/1/4:x4 9/1/5:x5", read(5), "re-selecting replays from seq 1")
	require.Equal(t, 1, b.connections())
}
