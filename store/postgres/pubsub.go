package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Reconnect backoff of the listener connection.
const (
	minReconnectBackoff = 100 * time.Millisecond
	maxReconnectBackoff = 10 * time.Second
)

// maxChannelLen is Postgres' identifier limit (NAMEDATALEN - 1): a longer
// channel name would be truncated silently and never match.
const maxChannelLen = 63

// maxPendingDeliveries bounds the notifications waiting for slow callbacks.
// Beyond it new notifications are dropped: they are hints, and receivers
// converge through versions and periodic syncs.
const maxPendingDeliveries = 10000

// listenerAppName marks the listener connection in pg_stat_activity.
const listenerAppName = "chatd-listener"

// ErrPubsubClosed is returned by Subscribe after Close.
var ErrPubsubClosed = errors.New("postgres pubsub: closed")

// Pubsub publishes with NOTIFY through the pool and receives with LISTEN on
// one dedicated connection, shared by every subscription of the process.
// When that connection drops it reconnects with bounded exponential backoff
// and re-LISTENs every channel; notifications sent while it was down are
// lost, which receivers tolerate (notifications are hints).
//
// It satisfies app/pubsub.Pubsub structurally.
type Pubsub struct {
	pool       *pgxpool.Pool
	connConfig *pgx.ConnConfig
	// log hears once that the database became unreachable (the listener
	// lost its connection) and once that it is reachable again.
	log *slog.Logger

	ctx  context.Context // lives until Close
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu     sync.Mutex
	closed bool
	nextID uint64
	subs   map[string]map[uint64]*subscription
	// listening holds the channels LISTENed on the live connection. The
	// listener goroutine writes it; Subscribe reads it to skip the round
	// trip when another subscriber already listens.
	listening map[string]bool
	waiters   []*listenWaiter
	// dirty says subs changed since the listener last synced its LISTENs.
	dirty bool
	// interrupt cancels the listener's current WaitForNotification so it
	// can issue pending LISTEN/UNLISTEN commands; nil when not waiting.
	interrupt context.CancelFunc
	pid       uint32 // backend pid of the listener connection, 0 when down
	pending   []*pgconn.Notification
	// maxPending bounds pending (maxPendingDeliveries; tests lower it).
	maxPending int
	// onDrop hears of each notification dropped for a full pending queue
	// (SetDropHook; the app counts them).
	onDrop func()
	// deliver wakes the delivery goroutine; buffered to one so wake-ups
	// coalesce.
	deliver chan struct{}
}

// SetDropHook has fn called (off the lock) for every notification received
// but dropped because maxPendingDeliveries were already waiting for slow
// callbacks; app/pubsub counts them as dropped.
func (p *Pubsub) SetDropHook(fn func()) {
	p.mu.Lock()
	p.onDrop = fn
	p.mu.Unlock()
}

// Pubsub has the method set of app/pubsub.Pubsub, which store packages may
// not import; this keeps the two from drifting apart silently.
var _ interface {
	Publish(ctx context.Context, channel string, payload []byte) error
	Subscribe(ctx context.Context, channel string, fn func(payload []byte)) (cancel func(), err error)
} = (*Pubsub)(nil)

type subscription struct {
	fn       func([]byte)
	canceled atomic.Bool
}

// listenWaiter is a Subscribe call waiting for its channel to be LISTENed.
type listenWaiter struct {
	channel string
	ready   chan struct{}
}

// NewPubsub connects the listener connection with the pool's configuration
// (so a bad configuration fails here) and starts the listener and delivery
// goroutines. ctx bounds only that first connection; Close stops everything.
func NewPubsub(ctx context.Context, pool *pgxpool.Pool) (*Pubsub, error) {
	return newPubsub(ctx, pool, nil)
}

// newPubsub is NewPubsub reporting outages to log (nil: nowhere).
func newPubsub(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) (*Pubsub, error) {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg := pool.Config().ConnConfig.Copy()
	if cfg.RuntimeParams["application_name"] == "" {
		cfg.RuntimeParams["application_name"] = listenerAppName
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect pubsub listener: %w", translate(err))
	}
	lifetime, stop := context.WithCancel(context.Background())
	p := &Pubsub{
		pool:       pool,
		connConfig: cfg,
		log:        log,
		ctx:        lifetime,
		stop:       stop,
		subs:       make(map[string]map[uint64]*subscription),
		listening:  make(map[string]bool),
		deliver:    make(chan struct{}, 1),
		maxPending: maxPendingDeliveries,
	}
	p.setPID(conn.PgConn().PID())
	p.wg.Add(2)
	go p.listen(conn)
	go p.deliverLoop()
	return p, nil
}

// Close stops the listener and delivery goroutines and closes the listener
// connection. It must not be called from a subscription callback.
func (p *Pubsub) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.stop()
	p.wg.Wait()
	return nil
}

// Publish sends payload (JSON text) to every listener of channel, in this
// process and every other replica. It uses a pooled connection, so it can be
// called right after a transaction commits.
func (p *Pubsub) Publish(ctx context.Context, channel string, payload []byte) error {
	if err := validChannel(channel); err != nil {
		return err
	}
	if _, err := p.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, string(payload)); err != nil {
		return fmt.Errorf("publish on %s: %w", channel, translate(err))
	}
	return nil
}

// Subscribe calls fn for every payload published on channel until cancel is
// called. It returns once the channel is LISTENed, so a caller that
// subscribes and then reads the database misses no change; while the
// listener is reconnecting that wait lasts until the reconnect or until ctx
// is done, whichever comes first. fn runs on the
// delivery goroutine, one notification at a time, and must not block for
// long; it may call Subscribe, cancel and Publish.
func (p *Pubsub) Subscribe(ctx context.Context, channel string, fn func(payload []byte)) (func(), error) {
	if err := validChannel(channel); err != nil {
		return nil, err
	}
	if fn == nil {
		return nil, errors.New("subscribe: nil callback")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("subscribe to %s: %w", channel, err)
	}
	sub := &subscription{fn: fn}

	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrPubsubClosed
	}
	id := p.nextID
	p.nextID++
	if p.subs[channel] == nil {
		p.subs[channel] = make(map[uint64]*subscription)
	}
	p.subs[channel][id] = sub
	var once sync.Once
	cancel := func() { once.Do(func() { p.unsubscribe(channel, id, sub) }) }
	if p.listening[channel] {
		p.mu.Unlock()
		return cancel, nil
	}
	w := &listenWaiter{channel: channel, ready: make(chan struct{})}
	p.waiters = append(p.waiters, w)
	p.markDirtyLocked()
	p.mu.Unlock()

	select {
	case <-w.ready:
		return cancel, nil
	case <-ctx.Done():
		p.dropWaiter(w)
		cancel()
		return nil, fmt.Errorf("subscribe to %s: %w", channel, ctx.Err())
	case <-p.ctx.Done():
		cancel()
		return nil, ErrPubsubClosed
	}
}

func (p *Pubsub) unsubscribe(channel string, id uint64, sub *subscription) {
	sub.canceled.Store(true)
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.subs[channel], id)
	if len(p.subs[channel]) == 0 {
		delete(p.subs, channel)
		p.markDirtyLocked() // the listener UNLISTENs
	}
}

func (p *Pubsub) dropWaiter(w *listenWaiter) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, other := range p.waiters {
		if other == w {
			p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
			return
		}
	}
}

// markDirtyLocked tells the listener that LISTENs must be synced, waking it
// from WaitForNotification. p.mu must be held.
func (p *Pubsub) markDirtyLocked() {
	p.dirty = true
	if p.interrupt != nil {
		p.interrupt()
		p.interrupt = nil
	}
}

func (p *Pubsub) setPID(pid uint32) {
	p.mu.Lock()
	p.pid = pid
	p.mu.Unlock()
}

// listenerPID is the backend pid of the listener connection (0 while it is
// down); tests use it to kill the connection.
func (p *Pubsub) listenerPID() uint32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pid
}

// isListening reports whether channel is LISTENed on the live connection.
func (p *Pubsub) isListening(channel string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.listening[channel]
}

// listen owns the listener connection: it serves it until it fails, then
// reconnects with backoff, until Close.
func (p *Pubsub) listen(conn *pgx.Conn) {
	defer p.wg.Done()
	backoff := minReconnectBackoff
	for {
		connectedAt := time.Now()
		// Why the connection ended does not matter to the reconnect, only
		// to the operator, who hears of it once per outage.
		err := p.serve(conn)
		p.connectionLost()
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = conn.Close(closeCtx)
		cancel()
		if p.ctx.Err() != nil {
			return
		}
		lostAt := time.Now()
		p.log.Warn("postgres unreachable: the notification listener lost its connection; reconnecting (notifications are missed until then)",
			"err", translate(err))
		// A connection that stayed up a while earns a fast reconnect; one
		// that keeps dropping right away backs off.
		if time.Since(connectedAt) > maxReconnectBackoff {
			backoff = minReconnectBackoff
		}
		for {
			if !p.sleep(jitter(backoff)) {
				return
			}
			backoff = min(2*backoff, maxReconnectBackoff)
			var err error
			if conn, err = pgx.ConnectConfig(p.ctx, p.connConfig); err == nil {
				break
			}
		}
		// serve re-LISTENs every channel: connectionLost emptied listening.
		p.log.Info("postgres reachable again: the notification listener reconnected", "down_for", time.Since(lostAt).Round(time.Millisecond))
		p.setPID(conn.PgConn().PID())
	}
}

// serve syncs LISTENs and waits for notifications on conn until conn fails
// or Pubsub closes.
func (p *Pubsub) serve(conn *pgx.Conn) error {
	for {
		if err := p.syncListens(conn); err != nil {
			return err
		}
		p.mu.Lock()
		if p.dirty {
			p.mu.Unlock()
			continue
		}
		waitCtx, cancel := context.WithCancel(p.ctx)
		p.interrupt = cancel
		p.mu.Unlock()

		n, err := conn.WaitForNotification(waitCtx)
		interrupted := waitCtx.Err() != nil
		p.mu.Lock()
		p.interrupt = nil
		p.mu.Unlock()
		cancel()

		if n != nil {
			p.enqueue(n)
		}
		if err != nil {
			if p.ctx.Err() != nil {
				return p.ctx.Err()
			}
			// An interruption for pending LISTENs leaves the connection
			// usable; anything else means it is gone.
			if interrupted && !conn.IsClosed() {
				continue
			}
			return err
		}
	}
}

// syncListens makes the connection's LISTENs match the subscribed channels
// and releases the Subscribe calls whose channel is now listened.
func (p *Pubsub) syncListens(conn *pgx.Conn) error {
	p.mu.Lock()
	p.dirty = false
	var toListen, toUnlisten []string
	for ch := range p.subs {
		if !p.listening[ch] {
			toListen = append(toListen, ch)
		}
	}
	for ch := range p.listening {
		if len(p.subs[ch]) == 0 {
			toUnlisten = append(toUnlisten, ch)
		}
	}
	p.mu.Unlock()

	for _, ch := range toListen {
		if _, err := conn.Exec(p.ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return fmt.Errorf("listen %s: %w", ch, err)
		}
		p.mu.Lock()
		p.listening[ch] = true
		p.releaseWaitersLocked()
		p.mu.Unlock()
	}
	for _, ch := range toUnlisten {
		p.mu.Lock()
		if len(p.subs[ch]) > 0 {
			// Subscribed again meanwhile: keep listening.
			p.mu.Unlock()
			continue
		}
		// Forget the channel before UNLISTEN so a concurrent Subscribe
		// waits for a fresh LISTEN instead of trusting this one.
		delete(p.listening, ch)
		p.mu.Unlock()
		if _, err := conn.Exec(p.ctx, "UNLISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return fmt.Errorf("unlisten %s: %w", ch, err)
		}
	}
	p.mu.Lock()
	p.releaseWaitersLocked()
	p.mu.Unlock()
	return nil
}

func (p *Pubsub) releaseWaitersLocked() {
	kept := p.waiters[:0]
	for _, w := range p.waiters {
		if p.listening[w.channel] {
			close(w.ready)
		} else {
			kept = append(kept, w)
		}
	}
	clear(p.waiters[len(kept):])
	p.waiters = kept
}

// connectionLost forgets the dead connection's LISTENs; Subscribe calls made
// until the reconnect wait for it.
func (p *Pubsub) connectionLost() {
	p.mu.Lock()
	clear(p.listening)
	p.pid = 0
	p.mu.Unlock()
}

// sleep waits d, or returns false when Pubsub closes first.
func (p *Pubsub) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.ctx.Done():
		return false
	}
}

// jitter spreads reconnects of many replicas over [d/2, d).
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}

func (p *Pubsub) enqueue(n *pgconn.Notification) {
	p.mu.Lock()
	var dropped func()
	if len(p.pending) < p.maxPending {
		p.pending = append(p.pending, n)
	} else {
		dropped = p.onDrop
	}
	p.mu.Unlock()
	if dropped != nil {
		dropped()
	}
	select {
	case p.deliver <- struct{}{}:
	default:
	}
}

// deliverLoop runs callbacks off the listener goroutine, so a callback can
// Subscribe (which waits for the listener) without deadlocking.
func (p *Pubsub) deliverLoop() {
	defer p.wg.Done()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-p.deliver:
		}
		for {
			p.mu.Lock()
			if len(p.pending) == 0 {
				p.mu.Unlock()
				break
			}
			n := p.pending[0]
			p.pending[0] = nil
			p.pending = p.pending[1:]
			subs := make([]*subscription, 0, len(p.subs[n.Channel]))
			for _, s := range p.subs[n.Channel] {
				subs = append(subs, s)
			}
			p.mu.Unlock()
			for _, s := range subs {
				if p.ctx.Err() != nil {
					return
				}
				if !s.canceled.Load() {
					s.fn([]byte(n.Payload))
				}
			}
		}
	}
}

// validChannel refuses names Postgres would truncate or cannot carry.
func validChannel(channel string) error {
	switch {
	case channel == "":
		return errors.New("pubsub: empty channel name")
	case len(channel) > maxChannelLen:
		return fmt.Errorf("pubsub: channel name %q longer than %d bytes", channel, maxChannelLen)
	case strings.ContainsRune(channel, 0):
		return fmt.Errorf("pubsub: channel name %q contains a NUL byte", channel)
	}
	return nil
}
