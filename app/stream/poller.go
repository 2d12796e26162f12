package stream

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/store"
)

// DefaultPollInterval is how often the sync poller reads all registered chats.
const DefaultPollInterval = 10 * time.Second

// Poller is the replica-wide sync poller: one query for every chat that
// has a viewer on this replica, delivered as hints to each stream loop, so
// a dropped notification is noticed within one interval. Its loop runs
// between Start and Stop; Register and Poll work without it.
type Poller struct {
	store    store.ReadStore
	interval time.Duration
	clock    clock.Clock
	log      *slog.Logger

	mu   sync.Mutex
	next int
	subs map[uuid.UUID]map[int]func(Hints)

	lifeMu  sync.Mutex
	started bool
	stopped bool
	cancel  context.CancelFunc
	done    chan struct{} // closed when the loop has returned
}

// NewPoller returns a poller that polls every interval
// (DefaultPollInterval when not positive) on clk (clock.Real when nil).
func NewPoller(s store.ReadStore, interval time.Duration, clk clock.Clock, log *slog.Logger) *Poller {
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	if clk == nil {
		clk = clock.Real{}
	}
	if log == nil {
		log = slog.Default()
	}
	return &Poller{store: s, interval: interval, clock: clk, log: log, subs: map[uuid.UUID]map[int]func(Hints){}}
}

// Start runs the polling loop until ctx ends or Stop is called. It may be
// called once.
func (p *Poller) Start(ctx context.Context) error {
	p.lifeMu.Lock()
	defer p.lifeMu.Unlock()
	switch {
	case p.stopped:
		return errors.New("stream poller: start after stop")
	case p.started:
		return errors.New("stream poller: already started")
	}
	p.started = true
	ctx, p.cancel = context.WithCancel(ctx)
	p.done = make(chan struct{})
	// The ticker exists before Start returns, so a test clock sees it.
	t := p.clock.NewTicker(p.interval)
	go func() {
		defer close(p.done)
		defer t.Stop()
		p.run(ctx, t)
	}()
	return nil
}

// Stop ends the polling loop and waits for it. It is idempotent and may be
// called without Start.
func (p *Poller) Stop() {
	p.lifeMu.Lock()
	p.stopped = true
	cancel, done := p.cancel, p.done
	p.lifeMu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// Register adds a subscriber for chatID; the returned func removes it.
func (p *Poller) Register(chatID uuid.UUID, deliver func(Hints)) func() {
	p.mu.Lock()
	defer p.mu.Unlock()
	id := p.next
	p.next++
	if p.subs[chatID] == nil {
		p.subs[chatID] = map[int]func(Hints){}
	}
	p.subs[chatID][id] = deliver
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			delete(p.subs[chatID], id)
			if len(p.subs[chatID]) == 0 {
				delete(p.subs, chatID)
			}
		})
	}
}

func (p *Poller) run(ctx context.Context, t clock.Ticker) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			p.Poll(ctx)
		}
	}
}

// Poll runs one round: snapshot the registrations, read the chats in one
// query, deliver hints.
func (p *Poller) Poll(ctx context.Context) {
	p.mu.Lock()
	ids := make([]uuid.UUID, 0, len(p.subs))
	subs := make(map[uuid.UUID][]func(Hints), len(p.subs))
	for id, m := range p.subs {
		ids = append(ids, id)
		for _, fn := range m {
			subs[id] = append(subs[id], fn)
		}
	}
	p.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	var chats []store.Chat
	err := p.store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		chats, err = tx.ChatGetMany(ctx, ids)
		return err
	})
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn("stream sync poll", "err", err)
		}
		return
	}
	for _, c := range chats {
		for _, fn := range subs[c.ID] {
			fn(HintsFromChat(c))
		}
		delete(subs, c.ID)
	}
	for _, fns := range subs { // not found: deleted
		for _, fn := range fns {
			fn(Hints{Gone: true})
		}
	}
}
