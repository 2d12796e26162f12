package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/partbuf"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// A replica dialing another's parts endpoint names itself and presents its
// own token; the endpoint compares the token's hash with the one the
// caller published in its replica row.
const (
	ReplicaWorkerHeader = "Chatd-Replica-Worker"
	ReplicaTokenHeader  = "Chatd-Replica-Token"
)

// relayPart is one part on its way from the forwarder to the loop: its
// place and its JSON, encoded once where the part was made (AddPart) and
// carried as is into every viewer's frame.
type relayPart struct {
	HistoryVersion, GenerationAttempt, Seq int64
	Part                                   json.RawMessage
}

// rawPartFrame is sdk.PartFrame with the part kept as JSON: the parts
// endpoint writes it from the buffer's encoding and the relay reads it
// without decoding the part.
type rawPartFrame struct {
	HistoryVersion    int64           `json:"history_version"`
	GenerationAttempt int64           `json:"generation_attempt"`
	Seq               int64           `json:"seq"`
	Part              json.RawMessage `json:"part"`
}

// remotePartsBuffer is the capacity of the channel between a parts
// connection's reader and the loop.
const remotePartsBuffer = 256

// Locator finds where a worker's parts endpoint is.
type Locator interface {
	// Local is this replica's worker id.
	Local() uuid.UUID
	// Token is this replica's own token, presented to the others.
	Token() string
	// Replica resolves another worker's address.
	Replica(ctx context.Context, workerID uuid.UUID) (store.Replica, error)
}

// relay is the forwarder (spec: "Relay behavior"). The worker on this
// replica is read from the part buffer with a partbuf.Follower, in the
// loop's own goroutine (localWake, takeLocal); another replica's through
// its parts endpoint, one WebSocket per worker, re-selecting the episode
// with a control message when only the episode changes, its parts on out.
// Nothing is allocated for a viewer that never sees a remote worker: out
// is made by the first remote connection. Its goroutines end with ctx or
// stop, which waits for them.
type relay struct {
	chatID  uuid.UUID
	buffer  *partbuf.Buffer
	locator Locator
	clock   clock.Clock
	ka      keepalive // pings the parts connections
	log     *slog.Logger
	out     chan relayPart // nil until the first remote connection
	ctx     context.Context
	wg      sync.WaitGroup

	conns prometheus.Gauge // open connections to other replicas (nil: not counted)

	target Target
	cancel context.CancelFunc // the current remote connection
	remote *remoteConn

	// The local episode: its follower, the channel that says it has more
	// (closed at first, so the buffered parts are taken at once), and the
	// slice takeLocal reuses.
	local     *partbuf.Follower
	localWait <-chan struct{}
	localBuf  []relayPart
}

func newRelay(ctx context.Context, chatID uuid.UUID, buffer *partbuf.Buffer, locator Locator, clk clock.Clock, log *slog.Logger) *relay {
	return &relay{
		ctx: ctx, chatID: chatID, buffer: buffer, locator: locator, clock: clk, log: log,
		// The server sets its own keepalive (on the same clock); alone, a
		// relay pings on real time so that clk paces only its reconnects.
		ka: defaultKeepalive(clock.Real{}),
	}
}

// configure points the forwarder at a target; called by the loop only.
func (r *relay) configure(t Target) {
	if t == r.target {
		return
	}
	prev := r.target
	r.target = t
	switch {
	case !t.WorkerID.Valid:
		r.close()
	case t.WorkerID.UUID == r.locator.Local():
		r.close()
		r.subscribeLocal(t)
	case r.remote != nil && prev.WorkerID == t.WorkerID:
		r.remote.selectEpisode(t) // same worker: keep the connection
	default:
		r.close()
		r.dialRemote(t)
	}
}

// close ends the current subscription or connection without waiting for
// it, so the loop never waits on the network; its goroutine can only
// forward stale parts, which the loop drops.
func (r *relay) close() {
	if r.cancel != nil {
		r.cancel()
		r.cancel = nil
	}
	r.remote = nil
	if r.local != nil {
		r.local.Close()
		r.local, r.localWait = nil, nil
	}
}

// stop closes the relay and waits for every goroutine it started; configure
// must not be called after it.
func (r *relay) stop() {
	r.close()
	r.wg.Wait()
}

func (r *relay) send(ctx context.Context, p relayPart) bool {
	select {
	case r.out <- p:
		return true
	case <-ctx.Done():
		return false
	}
}

func (r *relay) subscribeLocal(t Target) {
	ep := partbuf.Episode{ChatID: r.chatID, HistoryVersion: t.HistoryVersion, GenerationAttempt: t.GenerationAttempt}
	r.local = r.buffer.Follow(ep)
	r.localWait = ready
}

// ready is a channel that is always ready.
var ready = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// localWake is closed when the local episode may have parts for
// takeLocal; nil without a local episode.
func (r *relay) localWake() <-chan struct{} { return r.localWait }

// takeLocal returns the local episode's parts not taken yet, in a slice
// the next call reuses. Once the episode is over it drops the follower.
func (r *relay) takeLocal() []relayPart {
	if r.local == nil {
		return nil
	}
	parts, wake, done := r.local.Next()
	ep := r.local.Episode()
	r.localWait = wake
	if done {
		r.local.Close()
		r.local = nil
	}
	r.localBuf = r.localBuf[:0]
	for _, p := range parts {
		r.localBuf = append(r.localBuf, relayPart{ep.HistoryVersion, ep.GenerationAttempt, p.Seq, p.JSON})
	}
	return r.localBuf
}

// remoteConn is a parts-endpoint connection to another replica. It
// remembers the current episode selection and sends it on every
// (re)connect, under the same lock as later selections, so the peer always
// serves the newest one.
type remoteConn struct {
	mu      sync.Mutex
	conn    *websocket.Conn
	current sdk.EpisodeSelect
}

func (c *remoteConn) selectEpisode(t Target) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.current = sdk.EpisodeSelect{HistoryVersion: t.HistoryVersion, GenerationAttempt: t.GenerationAttempt}
	if c.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), WriteTimeout)
		defer cancel()
		_ = wsjson.Write(ctx, c.conn, c.current)
	}
}

// attach makes conn the connection and sends it the current selection.
func (c *remoteConn) attach(ctx context.Context, conn *websocket.Conn) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.conn = conn
	wctx, cancel := context.WithTimeout(ctx, WriteTimeout)
	defer cancel()
	return wsjson.Write(wctx, conn, c.current)
}

func (c *remoteConn) detach() {
	c.mu.Lock()
	c.conn = nil
	c.mu.Unlock()
}

// dialRemote connects to the worker's replica in the background, so the
// loop never waits on the network; it reconnects with backoff until the
// target changes.
func (r *relay) dialRemote(t Target) {
	if r.out == nil {
		r.out = make(chan relayPart, remotePartsBuffer)
	}
	ctx, cancel := context.WithCancel(r.ctx)
	rc := &remoteConn{current: sdk.EpisodeSelect{HistoryVersion: t.HistoryVersion, GenerationAttempt: t.GenerationAttempt}}
	r.cancel, r.remote = cancel, rc
	r.wg.Go(func() {
		for backoff := 100 * time.Millisecond; ctx.Err() == nil; backoff = min(2*backoff, 5*time.Second) {
			err := r.runRemote(ctx, t.WorkerID.UUID, rc)
			if ctx.Err() != nil {
				return
			}
			r.log.Info("relay connection to replica ended; reconnecting", "chat_id", r.chatID, "worker_id", t.WorkerID.UUID, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-r.clock.After(backoff):
			}
		}
	})
}

func (r *relay) runRemote(ctx context.Context, worker uuid.UUID, rc *remoteConn) error {
	rep, err := r.locator.Replica(ctx, worker)
	if err != nil {
		return fmt.Errorf("locate replica of worker %s: %w", worker, err)
	}
	url := strings.TrimRight(rep.Address, "/") + "/api/v2/chats/" + r.chatID.String() + "/stream/parts"
	url = "ws" + strings.TrimPrefix(url, "http")
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		HTTPHeader: http.Header{ReplicaWorkerHeader: {r.locator.Local().String()}, ReplicaTokenHeader: {r.locator.Token()}},
	})
	if err != nil {
		return fmt.Errorf("dial %s: %w", rep.Address, err)
	}
	defer conn.CloseNow()
	defer track(r.conns)()
	conn.SetReadLimit(8 << 20)
	defer rc.detach()
	if err := rc.attach(ctx, conn); err != nil {
		return err
	}
	// A peer that stops answering pings is dropped and dialled again.
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pingErr := make(chan error, 1)
	wg.Go(func() {
		if err := r.ka.run(ctx, conn); err != nil {
			pingErr <- err
			cancel()
		}
	})
	for {
		var frames []rawPartFrame
		if err := wsjson.Read(ctx, conn, &frames); err != nil {
			select {
			case perr := <-pingErr:
				return perr
			default:
				return err
			}
		}
		for _, f := range frames {
			if !r.send(ctx, relayPart(f)) {
				return ctx.Err()
			}
		}
	}
}

// serveParts is the parts endpoint (spec: "Parts endpoint"): it serves
// whichever episode the peer selects, from this replica's buffer, whether
// or not this replica owns the chat. It pings the peer with ka and returns
// when a pong does not come in time, once its goroutines have ended.
func serveParts(ctx context.Context, conn *websocket.Conn, buffer *partbuf.Buffer, chatID uuid.UUID, ka keepalive) error {
	ctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop() // ends the reader: a cancelled read closes the connection
	selects := make(chan sdk.EpisodeSelect, 1)
	readErr := make(chan error, 1)
	wg.Go(func() {
		for {
			var sel sdk.EpisodeSelect
			if err := wsjson.Read(ctx, conn, &sel); err != nil {
				readErr <- err
				return
			}
			select { // only the newest selection matters
			case <-selects:
			default:
			}
			selects <- sel
		}
	})
	pingErr := make(chan error, 1)
	wg.Go(func() {
		if err := ka.run(ctx, conn); err != nil {
			pingErr <- err
		}
	})
	var (
		parts  <-chan partbuf.Part
		cancel = func() {}
		ep     partbuf.Episode
		frame  []byte
	)
	defer func() { cancel() }()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-readErr:
			return err
		case err := <-pingErr:
			return err
		case sel := <-selects:
			cancel()
			ep = partbuf.Episode{ChatID: chatID, HistoryVersion: sel.HistoryVersion, GenerationAttempt: sel.GenerationAttempt}
			parts, cancel = buffer.SubscribeToEpisode(ctx, ep)
		case p, ok := <-parts:
			if !ok {
				parts = nil // episode done (or subscriber dropped): wait for the next selection
				continue
			}
			frame = appendPartFrame(append(frame[:0], '['), ep, p)
			for n, more := 1, true; more && n < MaxEventsPerFrame; n++ {
				select {
				case q, ok := <-parts:
					if !ok {
						parts, more = nil, false
						continue
					}
					frame = appendPartFrame(append(frame, ','), ep, q)
				default:
					more = false
				}
			}
			frame = append(frame, ']')
			wctx, wcancel := context.WithTimeout(ctx, WriteTimeout)
			err := conn.Write(wctx, websocket.MessageText, frame)
			wcancel()
			if err != nil {
				return err
			}
		}
	}
}

// appendPartFrame appends p as the JSON of an sdk.PartFrame, its part
// the buffer's encoding.
func appendPartFrame(b []byte, ep partbuf.Episode, p partbuf.Part) []byte {
	b = append(b, `{"history_version":`...)
	b = strconv.AppendInt(b, ep.HistoryVersion, 10)
	b = append(b, `,"generation_attempt":`...)
	b = strconv.AppendInt(b, ep.GenerationAttempt, 10)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, p.Seq, 10)
	b = append(b, `,"part":`...)
	b = append(b, p.JSON...)
	return append(b, '}')
}

// errClosed reports a normal close.
func errClosed(err error) bool {
	s := websocket.CloseStatus(err)
	return s == websocket.StatusNormalClosure || s == websocket.StatusGoingAway || errors.Is(err, context.Canceled)
}
