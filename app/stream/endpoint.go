package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/partbuf"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// Limits of the stream's frames.
const (
	// MaxEventsPerFrame caps the events in one frame (API.md).
	MaxEventsPerFrame = 256
	// MaxFrameBytes keeps a frame well under Coder's client read limit (4 MiB).
	MaxFrameBytes = 1 << 20
	// WriteTimeout drops a viewer that cannot take a frame in time; other
	// viewers never wait for it.
	WriteTimeout = 10 * time.Second
	// PingInterval keeps idle connections (and proxies) alive.
	PingInterval = 15 * time.Second
	// syncRetries bounds database retries before the stream gives up.
	syncRetries = 3
)

// Subscriber is the part of pubsub the stream needs.
type Subscriber interface {
	Subscribe(ctx context.Context, channel string, fn func(payload []byte)) (cancel func(), err error)
}

// Config is what a Server serves from.
type Config struct {
	Store  store.ReadStore
	Pubsub Subscriber
	// Poller delivers the periodic sync hints; its owner starts and stops it.
	Poller  *Poller
	Buffer  *partbuf.Buffer
	Locator Locator
	// Log is slog.Default when nil.
	Log *slog.Logger
	// Clock drives keepalives and retry backoffs; clock.Real when nil.
	Clock clock.Clock
	// PingInterval is how often every stream and parts connection pings
	// its peer (default PingInterval).
	PingInterval time.Duration
	// PongTimeout drops a peer whose pong takes longer (default WriteTimeout).
	PongTimeout time.Duration
	// Registerer, when set, gets the connection gauges (newGauges).
	Registerer prometheus.Registerer
}

// Server serves the stream and parts endpoints. Every goroutine a
// connection starts ends before its handler returns, and Close ends and
// waits for every connection.
type Server struct {
	store   store.ReadStore
	pubsub  Subscriber
	poller  *Poller
	buffer  *partbuf.Buffer
	locator Locator
	log     *slog.Logger
	clock   clock.Clock
	ka      keepalive

	mu      sync.Mutex
	closed  bool
	cancels map[*context.CancelFunc]struct{}
	wg      sync.WaitGroup
	gauges  gauges
}

// NewServer returns a server over cfg's collaborators.
func NewServer(cfg Config) *Server {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	ka := defaultKeepalive(cfg.Clock)
	if cfg.PingInterval > 0 {
		ka.interval = cfg.PingInterval
	}
	if cfg.PongTimeout > 0 {
		ka.timeout = cfg.PongTimeout
	}
	return &Server{
		store: cfg.Store, pubsub: cfg.Pubsub, poller: cfg.Poller, buffer: cfg.Buffer,
		locator: cfg.Locator, log: cfg.Log, clock: cfg.Clock, ka: ka, gauges: newGauges(cfg.Registerer),
	}
}

// track registers one connection's cancel func so Close can end it; it
// reports false once the server is closed.
func (s *Server) track(cancel *context.CancelFunc) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.cancels == nil {
		s.cancels = map[*context.CancelFunc]struct{}{}
	}
	s.cancels[cancel] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *Server) untrack(cancel *context.CancelFunc) {
	s.mu.Lock()
	delete(s.cancels, cancel)
	s.mu.Unlock()
	s.wg.Done()
}

// ErrClosed is Watch's answer once Close has begun: the server is shutting
// down.
var ErrClosed = errors.New("stream: server shutting down")

// RestartReason is the close reason of the chat streams and watches that
// Close ends, with status 1012 (Service Restart): the server is shutting
// down, and the client should reconnect (behind a load balancer, to
// another replica).
const RestartReason = "server shutting down; reconnect"

// closing reports whether Close has begun.
func (s *Server) closing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// closeEnded closes a viewer's connection whose stream ended without a
// failure: 1012 with RestartReason when the server is closing, else the
// status its context's cause chooses (CloseStatuser, e.g. 1008 for revoked
// credentials), else 1001 (Going Away: the request or the peer ended it).
func (s *Server) closeEnded(ctx context.Context, conn *websocket.Conn) {
	if s.closing() {
		conn.Close(websocket.StatusServiceRestart, RestartReason)
		return
	}
	conn.Close(closeStatus(ctx))
}

// Close ends every stream and parts connection and waits for them: HTTP
// shutdown does not wait for hijacked WebSocket connections. The chat
// streams and watches end with status 1012 (closeEnded).
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	for c := range s.cancels {
		(*c)()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// serveTracked runs fn with a context Close can cancel. A connection
// accepted while Close was already under way is closed as Close closes the
// others, with 1012.
func (s *Server) serveTracked(parent context.Context, conn *websocket.Conn, fn func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	if !s.track(&cancel) {
		conn.Close(websocket.StatusServiceRestart, RestartReason)
		return
	}
	defer s.untrack(&cancel)
	fn(ctx)
}

// mailbox coalesces sync hints: the loop only needs the newest.
type mailbox struct {
	mu      sync.Mutex
	pending *Hints
	wake    chan struct{}
}

func newMailbox() *mailbox { return &mailbox{wake: make(chan struct{}, 1)} }

func (m *mailbox) put(h Hints) {
	m.mu.Lock()
	if m.pending == nil || h.Gone || m.pending.SnapshotVersion != nil && h.SnapshotVersion != nil && *h.SnapshotVersion > *m.pending.SnapshotVersion {
		m.pending = &h
	}
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *mailbox) take() *Hints {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.pending
	m.pending = nil
	return h
}

// Serve runs one viewer's stream on an accepted WebSocket until the client
// leaves, the chat is deleted, or a write fails (spec: "Endpoint lifecycle").
// It returns once the goroutines it started have ended.
func (s *Server) Serve(ctx context.Context, conn *websocket.Conn, chatID uuid.UUID) error {
	return s.ServeWith(ctx, conn, chatID, Options{})
}

// Options are a viewer's choices (query parameters of the stream).
type Options struct {
	// HistoryLimit bounds the history the stream sends at bootstrap and
	// on a history reset (?history_limit=N); 0 sends all of it.
	HistoryLimit int
}

// MaxHistoryLimit is the largest ?history_limit accepted (API.md).
const MaxHistoryLimit = 1000

// ParseOptions reads the stream's query parameters; an error says what
// is wrong with them, for a 400.
func ParseOptions(q url.Values) (Options, error) {
	var o Options
	if v := q.Get("history_limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxHistoryLimit {
			return o, fmt.Errorf("history_limit must be an integer from 1 to %d, got %q", MaxHistoryLimit, v)
		}
		o.HistoryLimit = n
	}
	return o, nil
}

// ServeWith is Serve with the viewer's options.
func (s *Server) ServeWith(ctx context.Context, conn *websocket.Conn, chatID uuid.UUID, opts Options) error {
	return s.run(ctx, chatID, opts, &writer{conn: conn, partPrefix: partEventPrefix(chatID)}, conn)
}

// Watch runs the same stream loop as a viewer's WebSocket stream (the
// bootstrap, then every change and every live part of the chat, relayed
// from whichever replica runs it) and hands each batch of events to fn
// instead of a connection: the protocol surfaces (app/aisdk) build their
// streams from it. fn also gets an empty batch every ping interval, so the
// caller can keep its own connection alive. Watch returns fn's error, the
// context's, or store.ErrNotFound once the chat is deleted.
func (s *Server) Watch(ctx context.Context, chatID uuid.UUID, fn func(ctx context.Context, events []sdk.ChatStreamEvent) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if !s.track(&cancel) {
		return ErrClosed
	}
	defer s.untrack(&cancel)
	return s.run(ctx, chatID, Options{}, funcSink(fn), nil)
}

// sink is where run sends a viewer's events: a WebSocket (writer) or a
// function (Watch).
type sink interface {
	write(ctx context.Context, events []sdk.ChatStreamEvent) error
	writeParts(ctx context.Context, loop *Loop, parts []relayPart) error
}

// funcSink hands events to a function, parts decoded into message_part
// events.
type funcSink func(ctx context.Context, events []sdk.ChatStreamEvent) error

func (f funcSink) write(ctx context.Context, events []sdk.ChatStreamEvent) error {
	return f(ctx, events)
}

func (f funcSink) writeParts(ctx context.Context, loop *Loop, parts []relayPart) error {
	var events []sdk.ChatStreamEvent
	for _, p := range parts {
		var part sdk.ChatMessagePart
		if len(p.Part) > 0 {
			if err := json.Unmarshal(p.Part, &part); err != nil {
				return fmt.Errorf("decode part: %w", err)
			}
		}
		e, err := loop.Part(p.HistoryVersion, p.GenerationAttempt, p.Seq, part)
		if err != nil {
			return err
		}
		if e != nil {
			events = append(events, *e)
		}
	}
	if len(events) == 0 {
		return nil
	}
	return f(ctx, events)
}

// run is the stream loop of one viewer; conn, when set, is the WebSocket
// it pings (Watch has none: its sink gets an empty batch instead).
func (s *Server) run(ctx context.Context, chatID uuid.UUID, opts Options, w sink, conn *websocket.Conn) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	box := newMailbox()
	// 1. Subscribe first, so nothing between it and the bootstrap is missed.
	unsubscribe, err := s.pubsub.Subscribe(ctx, pubsub.ChannelUpdate(chatID.String()), func(payload []byte) {
		var p chatstate.UpdatePayload
		if json.Unmarshal(payload, &p) == nil {
			box.put(HintsFromPayload(p))
		}
	})
	if err != nil {
		s.log.Warn("stream: subscribe failed; the poller still syncs", "chat_id", chatID, "err", err)
		unsubscribe = func() {}
	}
	defer unsubscribe()
	// 2. Register with the poller.
	defer s.poller.Register(chatID, box.put)()
	// 3-4. Null state, then the bootstrap fetch.
	rel := newRelay(ctx, chatID, s.buffer, s.locator, s.clock, s.log)
	rel.conns = s.gauges.relayOut
	rel.ka = s.ka
	defer rel.stop()
	loop := NewLoop(chatID, rel.configure)
	src := StoreSource{Store: s.store, HistoryLimit: opts.HistoryLimit}
	asks, unwatch := s.watchQuestions(ctx, chatID, loop, w)
	defer unwatch()

	// Keepalive runs in this loop: a goroutine exists only while a ping
	// is out.
	pings := s.ka.pinger()
	defer pings.stop()

	syncOnce := func(h Hints) error {
		var err error
		for attempt := 1; attempt <= syncRetries; attempt++ {
			var events []sdk.ChatStreamEvent
			if events, err = loop.Sync(ctx, src, h); err == nil {
				return w.write(ctx, events)
			}
			if errors.Is(err, store.ErrNotFound) || ctx.Err() != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-s.clock.After(time.Duration(attempt) * 200 * time.Millisecond):
			}
		}
		return err
	}
	if err := syncOnce(Hints{}); err != nil {
		return err
	}
	if err := asks.sync(ctx); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-pings.C():
			if conn == nil {
				if err := w.write(ctx, nil); err != nil {
					return err
				}
				continue
			}
			pings.ping(ctx, conn, &wg)
		case err := <-pings.result():
			pings.done()
			if err != nil {
				cancel() // as a failed keepalive always has: the stream ends
				return ctx.Err()
			}
		case <-box.wake:
			if h := box.take(); h != nil {
				if err := syncOnce(*h); err != nil {
					return err
				}
				if err := asks.afterSync(ctx); err != nil {
					return err
				}
			}
		case <-asks.hint:
			if err := asks.sync(ctx); err != nil {
				return err
			}
		case <-rel.localWake():
			// The local episode's parts, as many as are there: a burst
			// of tokens goes out in one frame.
			if err := w.writeParts(ctx, loop, rel.takeLocal()); err != nil {
				return err
			}
		case p := <-rel.out:
			parts := []relayPart{p}
			for more := true; more && len(parts) < MaxEventsPerFrame; {
				select {
				case p = <-rel.out:
					parts = append(parts, p)
				default:
					more = false
				}
			}
			if err := w.writeParts(ctx, loop, parts); err != nil {
				return err
			}
		}
	}
}

// writer sends events as JSON-array frames of at most MaxEventsPerFrame
// events and about MaxFrameBytes, each with a write deadline. Every
// event is encoded once: into the writer's batch, from which the frames
// are cut.
type writer struct {
	conn *websocket.Conn
	// partPrefix starts the chat's message_part events (partEventPrefix).
	partPrefix []byte
	// batch holds the encoded events of one write back to back, event i
	// at batch[ends[i-1]:ends[i]]; frame is the frame being sent. Both are
	// reused while small, so an idle viewer keeps no large buffer.
	batch []byte
	ends  []int
	frame []byte
	// deadline bounds each frame's write (WriteTimeout), made at the
	// first write.
	deadline *writeDeadline
	// run is the merged delta the batch ends with (coalesce.go).
	run run
}

// maxKeptBuffer is the largest buffer a writer keeps between writes.
const maxKeptBuffer = 16 << 10

// write sends events, each marshalled once.
func (w *writer) write(ctx context.Context, events []sdk.ChatStreamEvent) error {
	w.reset()
	for i := range events {
		var err error
		if w.batch, err = appendEvent(w.batch, &events[i]); err != nil {
			return fmt.Errorf("encode %s event: %w", events[i].Type, err)
		}
		w.ends = append(w.ends, len(w.batch))
	}
	return w.flush(ctx)
}

// contentNull is how a message without content parts encodes its content.
var contentNull = []byte(`"content":null`)

// appendEvent appends e's JSON to dst. A message holding its stored
// content raw (wire.ToMessageRaw) is encoded without it and the content
// spliced in where the null stands, unscanned: it is the bulk of a long
// chat's bootstrap. No field of an event or a message before content holds
// an object, so the first "content":null is the message's (a string
// holding those bytes would have its quotes escaped).
func appendEvent(dst []byte, e *sdk.ChatStreamEvent) ([]byte, error) {
	if e.Message == nil || e.Message.RawContent == nil {
		b, err := json.Marshal(e)
		return append(dst, b...), err
	}
	m := *e.Message
	raw := m.RawContent
	m.Content, m.RawContent = nil, nil
	ev := *e
	ev.Message = &m
	b, err := json.Marshal(&ev)
	if err != nil {
		return dst, err
	}
	i := bytes.Index(b, contentNull)
	if i < 0 {
		return dst, errors.New("stream bug: an encoded message has no content")
	}
	at := i + len(`"content":`)
	dst = append(dst, b[:at]...)
	dst = append(dst, bytes.TrimSpace(raw)...)
	return append(dst, b[i+len(contentNull):]...), nil
}

// writeParts applies parts to the loop and sends the message_part
// events it emits, built from the parts' shared JSON. Several parts are
// a viewer catching up: runs of text or reasoning deltas among them go
// out merged (coalesce.go). A single part, a viewer keeping up, goes out
// as it is.
func (w *writer) writeParts(ctx context.Context, loop *Loop, parts []relayPart) error {
	w.reset()
	merge := len(parts) > 1
	for _, p := range parts {
		ok, err := loop.accept(p.HistoryVersion, p.GenerationAttempt, p.Seq)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if merge {
			if head, ok := delta(p.Part); ok {
				w.appendDelta(p, head)
				continue
			}
		}
		w.run.open = false
		w.batch = appendPartEvent(w.batch, w.partPrefix, p)
		w.ends = append(w.ends, len(w.batch))
	}
	return w.flush(ctx)
}

func (w *writer) reset() {
	w.batch, w.ends, w.run = w.batch[:0], w.ends[:0], run{}
}

// flush sends the batch in frames.
func (w *writer) flush(ctx context.Context) error {
	defer func() {
		if cap(w.batch) > maxKeptBuffer {
			w.batch = nil
		}
		if cap(w.frame) > maxKeptBuffer {
			w.frame = nil
		}
	}()
	start := 0 // the first event not sent yet
	for start < len(w.ends) {
		w.frame = append(w.frame[:0], '[')
		from := 0
		if start > 0 {
			from = w.ends[start-1]
		}
		n := 0
		for start+n < len(w.ends) && n < MaxEventsPerFrame {
			to := w.ends[start+n]
			if n > 0 && len(w.frame)+(to-from)+2 > MaxFrameBytes {
				break
			}
			if n > 0 {
				w.frame = append(w.frame, ',')
			}
			w.frame = append(w.frame, w.batch[from:to]...)
			from = to
			n++
		}
		w.frame = append(w.frame, ']')
		if w.deadline == nil {
			w.deadline = newWriteDeadline(ctx, w.conn, WriteTimeout)
		}
		if err := w.deadline.write(w.frame); err != nil {
			return err
		}
		start += n
	}
	return nil
}

// HandleStream is GET /chats/{chat}/stream after authentication: allowed
// reports whether the caller may see the chat (404 otherwise).
//
// The HTTP server's read and write timeouts do not reach the stream:
// net/http clears a connection's deadlines when it is hijacked, which
// Accept does; pings and per-frame write deadlines bound it instead
// (app's TestStreamOutlivesRequestTimeouts holds this).
func (s *Server) HandleStream(w http.ResponseWriter, r *http.Request, chatID uuid.UUID) {
	opts, err := ParseOptions(r.URL.Query())
	if err != nil {
		badRequest(w, err.Error())
		return
	}
	rw := &refusal{ResponseWriter: w}
	conn, err := websocket.Accept(rw, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		rw.answer() // the library's refusal (e.g. a bad Origin), as JSON
		return
	}
	defer conn.CloseNow()
	defer track(s.gauges.viewers)()
	s.serveTracked(r.Context(), conn, func(ctx context.Context) {
		ctx, stop := peerContext(ctx, conn)
		defer stop()
		err := s.ServeWith(ctx, conn, chatID, opts)
		switch {
		case errors.Is(err, store.ErrNotFound):
			conn.Close(websocket.StatusNormalClosure, "chat deleted")
		case err == nil || errClosed(err) || ctx.Err() != nil:
			s.closeEnded(ctx, conn)
		default:
			s.log.Info("stream ended", "chat_id", chatID, "err", err)
			conn.Close(websocket.StatusInternalError, "stream error")
		}
	})
}

// CloseStatuser is a cause of a stream's context (context.Cause) that
// chooses the WebSocket close status the stream ends with, e.g. 1008 when
// the viewer's credentials were revoked. Without one, an ended context
// closes with 1001 (going away).
type CloseStatuser interface {
	CloseStatus() (code int, reason string)
}

// peerContext is ctx, also ended when the peer leaves (conn.CloseRead).
// The connection's reader does not get ctx itself: coder/websocket drops a
// connection without a close frame when a read's context ends, and a
// stream ended from this side (revoked credentials, shutdown) must still
// send its close status. The reader ends when the connection closes.
func peerContext(ctx context.Context, conn *websocket.Conn) (context.Context, context.CancelFunc) {
	peer := conn.CloseRead(context.WithoutCancel(ctx))
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(peer, func() { cancel(context.Canceled) })
	return ctx, func() { stop(); cancel(context.Canceled) }
}

// writeDeadline bounds every write to one peer by d with one timer for the
// connection, reset for each write, where a context with a deadline per
// write made a context, a timer and coder/websocket's own watch of that
// context per frame: the allocations every viewer paid for every token.
// A write that outlasts d closes the connection, which fails the write,
// as coder/websocket does when a write's context ends. Writes are not
// ended by the stream's context (see sendContext).
type writeDeadline struct {
	conn  *websocket.Conn
	ctx   context.Context // never done: coder/websocket watches nothing
	timer *time.Timer
	d     time.Duration
}

func newWriteDeadline(ctx context.Context, conn *websocket.Conn, d time.Duration) *writeDeadline {
	t := time.AfterFunc(d, func() { _ = conn.CloseNow() })
	t.Stop()
	return &writeDeadline{conn: conn, ctx: context.WithoutCancel(ctx), timer: t, d: d}
}

// write sends one text frame, or fails once d has passed.
func (w *writeDeadline) write(frame []byte) error {
	w.timer.Reset(w.d)
	err := w.conn.Write(w.ctx, websocket.MessageText, frame)
	if !w.timer.Stop() && err != nil {
		return fmt.Errorf("websocket peer did not take a frame within %s: %w", w.d, err)
	}
	return err
}

// sendContext bounds one write to the peer (a frame, a ping) by d, but is
// not ended by ctx: coder/websocket drops the connection without a close
// frame when a write's context ends mid-write, and a stream the server
// ends (shutdown, revoked credentials) must still send its close status
// once that write is done.
func sendContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), d)
}

func closeStatus(ctx context.Context) (websocket.StatusCode, string) {
	var c CloseStatuser
	if errors.As(context.Cause(ctx), &c) {
		code, reason := c.CloseStatus()
		return websocket.StatusCode(code), reason
	}
	return websocket.StatusGoingAway, ""
}

// HandleParts is GET /chats/{chat}/stream/parts for replicas: the peer
// must present this replica's token.
func (s *Server) HandleParts(w http.ResponseWriter, r *http.Request, chatID uuid.UUID) {
	rw := &refusal{ResponseWriter: w}
	conn, err := websocket.Accept(rw, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		rw.answer() // the library's refusal (e.g. a bad Origin), as JSON
		return
	}
	defer conn.CloseNow()
	defer track(s.gauges.relayIn)()
	s.serveTracked(r.Context(), conn, func(ctx context.Context) {
		err := serveParts(ctx, conn, s.buffer, chatID, s.ka)
		if err == nil || errClosed(err) {
			conn.Close(websocket.StatusNormalClosure, "")
			return
		}
		conn.Close(websocket.StatusInternalError, "parts stream error")
	})
}
