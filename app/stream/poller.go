package stream

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// DefaultPollInterval is how often the sync poller reads all registered chats.
const DefaultPollInterval = 10 * time.Second

// Poller is the replica-wide sync poller: one query for every chat that
// has a viewer on this replica, delivered as hints to each stream loop, so
// a dropped notification is noticed within one interval.
type Poller struct {
	store    store.Store
	interval time.Duration
	log      *slog.Logger

	mu   sync.Mutex
	next int
	subs map[uuid.UUID]map[int]func(Hints)
}

// NewPoller returns a poller; Run drives it.
func NewPoller(s store.Store, interval time.Duration, log *slog.Logger) *Poller {
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	if log == nil {
		log = slog.Default()
	}
	return &Poller{store: s, interval: interval, log: log, subs: map[uuid.UUID]map[int]func(Hints){}}
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

// Run polls every interval until ctx ends.
func (p *Poller) Run(ctx context.Context) {
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
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
