// Package partbuf is the message part buffer: a replica-local, in-memory store
// of the streaming message parts of each LLM response, keyed by episode
// (chat_id, history_version, generation_attempt).
//
// The generation goroutine adds parts best-effort while the provider streams;
// stream endpoints subscribe to an episode and receive its parts, numbered
// from 1 without gaps; the interrupt goroutine closes the episode and reads
// what was buffered. Closed episodes are garbage collected once nobody reads
// them any more.
package partbuf

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/sdk"
)

// Defaults for Config's zero values.
const (
	// DefaultMaxBytes caps an episode's parts, measured as the sum of the
	// parts' JSON encodings (1 MiB).
	DefaultMaxBytes = 1 << 20
	// DefaultCollectAfter is the minimum time a closed episode is kept.
	DefaultCollectAfter = 15 * time.Second
	// DefaultCollectInterval is how often the garbage collection goroutine runs.
	DefaultCollectInterval = 5 * time.Second
	// DefaultSubscriberTimeout is how long a subscriber may take to accept a
	// part before its channel is closed.
	DefaultSubscriberTimeout = 10 * time.Second
)

// Errors returned by Buffer methods, wrapped with the episode they concern.
var (
	ErrEpisodeExists   = errors.New("episode already exists")
	ErrEpisodeNotFound = errors.New("episode not found")
	ErrEpisodeClosed   = errors.New("episode closed")
	ErrEpisodeFull     = errors.New("episode full")
)

// Episode identifies one LLM response: one generation attempt of a chat at a
// history version.
type Episode struct {
	ChatID            uuid.UUID
	HistoryVersion    int64
	GenerationAttempt int64
}

// String formats the episode for errors and logs.
func (e Episode) String() string {
	return fmt.Sprintf("%s/%d/%d", e.ChatID, e.HistoryVersion, e.GenerationAttempt)
}

// Part is a message part as delivered to subscribers: its content, its
// JSON encoding and its position in the episode, starting at 1. JSON is
// encoded once, by AddPart, and shared by every reader (the stream frames
// of every viewer, the parts endpoint): readers must not modify it.
type Part struct {
	Seq     int64
	Content sdk.ChatMessagePart
	JSON    []byte
}

// ToolTiming is when one tool call occurrence of an episode started and
// finished. A zero time means the event was not recorded.
type ToolTiming struct {
	CallIndex   int
	StartedAt   time.Time
	CompletedAt time.Time
}

// Config tunes a Buffer. Zero values take the Default constants.
type Config struct {
	// MaxBytes caps each episode's parts, summing their JSON encodings.
	MaxBytes int
	// CollectAfter is the minimum age of a closed episode before garbage
	// collection may remove it (and only once it has no subscribers).
	CollectAfter time.Duration
	// CollectInterval is the period of the garbage collection goroutine,
	// which calls Collect with the clock's time.
	CollectInterval time.Duration
	// SubscriberTimeout bounds how long a subscription waits for its reader
	// to accept one part; past it, the subscription's channel is closed.
	SubscriberTimeout time.Duration
	// Clock stamps closes and model invocations and drives the garbage
	// collection goroutine and the subscriber timeouts; clock.Real when nil.
	Clock clock.Clock
	// Registerer, when set, gets chatd_partbuf_drops_total{reason}: parts
	// an episode refused as full (episode_full) and subscriptions closed
	// for a slow reader (slow_subscriber).
	Registerer prometheus.Registerer
}

// Drop reasons of chatd_partbuf_drops_total.
const (
	DropEpisodeFull    = "episode_full"
	DropSlowSubscriber = "slow_subscriber"
)

// Buffer is the message part buffer. It is safe for concurrent use. Its
// garbage collection goroutine runs between Start and Stop; subscriptions
// work without it.
type Buffer struct {
	cfg Config

	// mu guards episodes, the episodes' subscriber counts, started and
	// stopped. It is taken before any episode's mu.
	mu       sync.RWMutex
	episodes map[Episode]*episode
	started  bool
	stopped  bool

	done chan struct{} // closed by Stop
	wg   sync.WaitGroup

	fullDrops, slowDrops prometheus.Counter // nil without a registerer

	// Test hooks, set before use.
	afterCollect func(removed int)
	onSlowDrop   func(Episode)
}

// episode is one episode's state. Every field but subscribers and the atomics is guarded by
// mu; subscribers is guarded by Buffer.mu.
type episode struct {
	mu sync.RWMutex
	// created is false while the entry exists only for subscribers waiting
	// for the episode to be created.
	created   bool
	closed    bool
	full      bool // once a part did not fit, later parts are refused too
	closedAt  time.Time
	invokedAt time.Time
	size      int
	// parts only grows: readers read elements below the length they
	// observed without holding mu.
	parts []Part
	tools map[int]ToolTiming

	// view is what readers see of parts and closed, published by every
	// change of them, so that readers take no lock: the generating
	// goroutine never waits for a reader.
	view atomic.Pointer[partsView]
	// wake is closed and replaced (under mu) when parts are added or the
	// episode closes, if a reader took it (waiting is set). A reader
	// loads wake, sets waiting, then loads view: a part published after
	// that view finds waiting set and gets wake closed.
	wake    atomic.Pointer[chan struct{}]
	waiting atomic.Bool
	// signal asks the episode's broadcaster to close wake: AddPart does
	// not wake the readers itself, since closing a channel readies every
	// goroutine waiting on it, which would make the generating
	// goroutine's cost grow with the viewers.
	signal chan struct{}

	// subscribers is guarded by Buffer.mu; quit ends the broadcaster,
	// which runs while subscribers > 0.
	subscribers int
	quit        chan struct{}
}

// partsView is an episode's parts and closed flag as readers see them.
type partsView struct {
	parts  []Part
	closed bool
}

func newEpisode() *episode {
	e := &episode{signal: make(chan struct{}, 1)}
	wake := make(chan struct{})
	e.wake.Store(&wake)
	e.view.Store(&partsView{})
	return e
}

// publish makes parts and closed visible to readers. Call with e.mu held.
func (e *episode) publish() {
	e.view.Store(&partsView{parts: e.parts, closed: e.closed})
}

// read returns the parts from index next on, whether the episode is
// closed, and the channel to wait on for more, without a lock.
func (e *episode) read(next int) (parts []Part, closed bool, wake <-chan struct{}) {
	w := e.wake.Load()
	e.waiting.Store(true)
	v := e.view.Load()
	return v.parts[next:len(v.parts):len(v.parts)], v.closed, *w
}

// wakeAll wakes the readers waiting on e. Call with e.mu held.
func (e *episode) wakeAll() {
	if e.waiting.Swap(false) {
		wake := make(chan struct{})
		close(*e.wake.Swap(&wake))
	}
}

// signalReaders asks the broadcaster to wake the waiting readers: O(1)
// for the caller whatever their number. Call with e.mu held.
func (e *episode) signalReaders() {
	if e.waiting.Load() {
		select {
		case e.signal <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}

// broadcast is the episode's broadcaster: it does the fan-out of AddPart's
// signals, so the generating goroutine never does per-reader work. It runs
// while the episode has subscribers (subscribe starts it, the last
// unsubscribe ends it) or until the Buffer stops.
func (b *Buffer) broadcast(e *episode, quit <-chan struct{}) {
	defer b.wg.Done()
	for {
		select {
		case <-e.signal:
			e.mu.Lock()
			e.wakeAll()
			e.mu.Unlock()
		case <-quit:
			return
		case <-b.done:
			return
		}
	}
}

// addSubscriber counts one reader of e, starting its broadcaster with the
// first. Call with b.mu held.
func (b *Buffer) addSubscriber(e *episode) {
	e.subscribers++
	if e.subscribers == 1 {
		e.quit = make(chan struct{})
		b.wg.Add(1)
		go b.broadcast(e, e.quit)
	}
}

// New returns an empty Buffer.
func New(cfg Config) *Buffer {
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.CollectAfter == 0 {
		cfg.CollectAfter = DefaultCollectAfter
	}
	if cfg.CollectInterval == 0 {
		cfg.CollectInterval = DefaultCollectInterval
	}
	if cfg.SubscriberTimeout == 0 {
		cfg.SubscriberTimeout = DefaultSubscriberTimeout
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	b := &Buffer{
		cfg:      cfg,
		episodes: make(map[Episode]*episode),
		done:     make(chan struct{}),
	}
	if cfg.Registerer != nil {
		drops := prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_partbuf_drops_total",
			Help: "Streamed parts the part buffer dropped, by reason: episode_full (a part over the episode's size cap) or slow_subscriber (a subscription closed for a slow reader).",
		}, []string{"reason"})
		cfg.Registerer.MustRegister(drops)
		b.fullDrops, b.slowDrops = drops.WithLabelValues(DropEpisodeFull), drops.WithLabelValues(DropSlowSubscriber)
	}
	return b
}

// dropped counts one drop (nil counter: no registerer).
func dropped(c prometheus.Counter) {
	if c != nil {
		c.Inc()
	}
}

// Start runs the garbage collection goroutine until ctx is done or Stop is
// called. It may be called once.
func (b *Buffer) Start(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return errors.New("partbuf: start after stop")
	}
	if b.started {
		return errors.New("partbuf: already started")
	}
	b.started = true
	b.wg.Add(1)
	go b.collectLoop(ctx)
	return nil
}

// Stop ends the garbage collection goroutine and every subscription, closing
// their channels, and waits for them to exit. Later subscriptions get a
// closed channel. The other methods keep working. Stop is idempotent.
func (b *Buffer) Stop() {
	b.mu.Lock()
	if !b.stopped {
		b.stopped = true
		close(b.done)
		// Readers without a goroutine (Follow) learn it from their wake.
		for _, e := range b.episodes {
			e.mu.Lock()
			e.wakeAll()
			e.mu.Unlock()
		}
	}
	b.mu.Unlock()
	b.wg.Wait()
}

func (b *Buffer) collectLoop(ctx context.Context) {
	defer b.wg.Done()
	t := b.cfg.Clock.NewTicker(b.cfg.CollectInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.done:
			return
		case now := <-t.C():
			n := b.Collect(now)
			if b.afterCollect != nil {
				b.afterCollect(n)
			}
		}
	}
}

// Collect removes the episodes closed at least CollectAfter before now that
// have no subscribers, and returns how many it removed. The garbage
// collection goroutine calls it; tests call it with their own clock.
func (b *Buffer) Collect(now time.Time) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	removed := 0
	for key, e := range b.episodes {
		if e.subscribers > 0 {
			continue
		}
		e.mu.RLock()
		expired := e.closed && now.Sub(e.closedAt) >= b.cfg.CollectAfter
		e.mu.RUnlock()
		if expired {
			delete(b.episodes, key)
			removed++
		}
	}
	return removed
}

// lookup returns the episode's entry, which may be a placeholder for
// waiting subscribers (created false), or nil.
func (b *Buffer) lookup(ep Episode) *episode {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.episodes[ep]
}

// CreateEpisode creates an empty, open episode. It must precede AddPart and
// fails with ErrEpisodeExists if the episode was already created or closed.
func (b *Buffer) CreateEpisode(ep Episode) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.episodes[ep]
	if e == nil {
		e = newEpisode()
		e.created = true
		b.episodes[ep] = e
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.created {
		return fmt.Errorf("create episode %s: %w", ep, ErrEpisodeExists)
	}
	e.created = true
	return nil
}

// CloseEpisode closes an episode so that no more parts can be added and its
// subscriptions end once they have delivered every part. Closing an unknown
// episode creates it closed, so that a close racing a create wins whatever
// the order; closing a closed episode does nothing.
func (b *Buffer) CloseEpisode(ep Episode) {
	now := b.cfg.Clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.episodes[ep]
	if e == nil {
		e = newEpisode()
		b.episodes[ep] = e
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	e.created = true
	e.closed = true
	e.closedAt = now
	e.publish()
	e.wakeAll()
}

// AddPart appends a part to an open episode. It fails with
// ErrEpisodeNotFound, ErrEpisodeClosed, or ErrEpisodeFull when the part would
// take the episode past MaxBytes; once full, an episode refuses every later
// part, so that what it holds stays a prefix of the response. The buffer
// keeps its own copy of the part.
func (b *Buffer) AddPart(ep Episode, part sdk.ChatMessagePart) error {
	encoded, err := json.Marshal(part)
	if err != nil {
		return fmt.Errorf("add part to episode %s: encode: %w", ep, err)
	}
	part = clonePart(part)

	e := b.lookup(ep)
	if e == nil {
		return fmt.Errorf("add part to episode %s: %w", ep, ErrEpisodeNotFound)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case !e.created:
		return fmt.Errorf("add part to episode %s: %w", ep, ErrEpisodeNotFound)
	case e.closed:
		return fmt.Errorf("add part to episode %s: %w", ep, ErrEpisodeClosed)
	case e.full:
		dropped(b.fullDrops)
		return fmt.Errorf("add part to episode %s: %w", ep, ErrEpisodeFull)
	case e.size+len(encoded) > b.cfg.MaxBytes:
		e.full = true
		dropped(b.fullDrops)
		return fmt.Errorf("add part to episode %s: %w", ep, ErrEpisodeFull)
	}
	e.size += len(encoded)
	e.parts = append(e.parts, Part{Seq: int64(len(e.parts)) + 1, Content: part, JSON: encoded})
	e.publish()
	e.signalReaders()
	return nil
}

// GetParts returns a copy of an episode's parts, in order. It fails with
// ErrEpisodeNotFound for an episode never created or already collected.
func (b *Buffer) GetParts(ep Episode) ([]sdk.ChatMessagePart, error) {
	e := b.lookup(ep)
	if e == nil {
		return nil, fmt.Errorf("get parts of episode %s: %w", ep, ErrEpisodeNotFound)
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if !e.created {
		return nil, fmt.Errorf("get parts of episode %s: %w", ep, ErrEpisodeNotFound)
	}
	out := make([]sdk.ChatMessagePart, len(e.parts))
	for i, p := range e.parts {
		out[i] = clonePart(p.Content)
	}
	return out, nil
}

// StartModelInvocation stamps the instant the episode opens its provider
// stream. It fails with ErrEpisodeNotFound or ErrEpisodeClosed. A second call
// keeps the first stamp, so billing counts from the first stream.
func (b *Buffer) StartModelInvocation(ep Episode) error {
	now := b.cfg.Clock.Now()
	return b.update(ep, "start model invocation", func(e *episode) {
		if e.invokedAt.IsZero() {
			e.invokedAt = now
		}
	})
}

// ModelInvokedAt returns the instant stamped by StartModelInvocation, or the
// zero time when the episode is unknown or never invoked a model. Read it
// before CloseEpisode: closed episodes are collected.
func (b *Buffer) ModelInvokedAt(ep Episode) time.Time {
	e := b.lookup(ep)
	if e == nil {
		return time.Time{}
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.invokedAt
}

// RecordToolStart records when call occurrence callIndex of the episode
// started. It fails with ErrEpisodeNotFound or ErrEpisodeClosed: a closed
// episode's record is final.
func (b *Buffer) RecordToolStart(ep Episode, callIndex int, startedAt time.Time) error {
	return b.update(ep, "record tool start", func(e *episode) {
		t := e.tools[callIndex]
		t.CallIndex = callIndex
		t.StartedAt = startedAt
		e.setTool(t)
	})
}

// RecordToolCompletion records when call occurrence callIndex of the episode
// finished. Errors are those of RecordToolStart.
func (b *Buffer) RecordToolCompletion(ep Episode, callIndex int, completedAt time.Time) error {
	return b.update(ep, "record tool completion", func(e *episode) {
		t := e.tools[callIndex]
		t.CallIndex = callIndex
		t.CompletedAt = completedAt
		e.setTool(t)
	})
}

func (e *episode) setTool(t ToolTiming) {
	if e.tools == nil {
		e.tools = make(map[int]ToolTiming)
	}
	e.tools[t.CallIndex] = t
}

// ToolCompletions returns the recorded tool timings of the episode, ordered
// by call index. It fails with ErrEpisodeNotFound.
func (b *Buffer) ToolCompletions(ep Episode) ([]ToolTiming, error) {
	e := b.lookup(ep)
	if e == nil {
		return nil, fmt.Errorf("tool completions of episode %s: %w", ep, ErrEpisodeNotFound)
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if !e.created {
		return nil, fmt.Errorf("tool completions of episode %s: %w", ep, ErrEpisodeNotFound)
	}
	out := slices.Collect(maps.Values(e.tools))
	slices.SortFunc(out, func(a, b ToolTiming) int { return cmp.Compare(a.CallIndex, b.CallIndex) })
	return out, nil
}

// update applies fn to an open, created episode.
func (b *Buffer) update(ep Episode, op string, fn func(*episode)) error {
	e := b.lookup(ep)
	if e == nil {
		return fmt.Errorf("%s for episode %s: %w", op, ep, ErrEpisodeNotFound)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case !e.created:
		return fmt.Errorf("%s for episode %s: %w", op, ep, ErrEpisodeNotFound)
	case e.closed:
		return fmt.Errorf("%s for episode %s: %w", op, ep, ErrEpisodeClosed)
	}
	fn(e)
	return nil
}
