package partbuf

import (
	"context"
	"slices"
	"sync"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/sdk"
)

// SubscribeToEpisode returns a channel that receives every part of the
// episode, buffered ones first, then live ones as they are added. If the
// episode does not exist yet, the subscription waits for it.
//
// A goroutine owned by the subscription delivers the parts; it closes the
// channel and exits when:
//   - it has delivered every part of a closed episode;
//   - the reader does not accept a part within SubscriberTimeout;
//   - ctx is done, cancel is called, or the Buffer is stopped.
//
// cancel is idempotent and returns once the channel is closed. Delivered
// parts are shared between subscribers: readers must not modify them.
func (b *Buffer) SubscribeToEpisode(ctx context.Context, ep Episode) (<-chan Part, func()) {
	ch := make(chan Part)
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		close(ch)
		return ch, func() {}
	}
	e := b.episodes[ep]
	if e == nil {
		e = newEpisode()
		b.episodes[ep] = e
	}
	b.addSubscriber(e)
	b.wg.Add(1)
	b.mu.Unlock()

	s := &subscription{
		b:    b,
		key:  ep,
		e:    e,
		ch:   ch,
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	go s.run(ctx)
	var once sync.Once
	cancel := func() {
		once.Do(func() { close(s.stop) })
		<-s.done
	}
	return ch, cancel
}

// unsubscribe drops a subscriber of e, removing e if it was only a
// placeholder for subscribers.
func (b *Buffer) unsubscribe(key Episode, e *episode) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e.subscribers--
	if e.subscribers > 0 {
		return
	}
	close(e.quit)
	e.mu.RLock()
	placeholder := !e.created
	e.mu.RUnlock()
	if placeholder && b.episodes[key] == e {
		delete(b.episodes, key)
	}
}

// subscription is one reader's cursor over an episode's parts.
type subscription struct {
	b    *Buffer
	key  Episode
	e    *episode
	ch   chan Part
	stop chan struct{} // closed by cancel
	done chan struct{} // closed when run has returned
	// timer bounds a blocked send; created on the first one.
	timer clock.Timer
}

func (s *subscription) run(ctx context.Context) {
	defer func() {
		// Unsubscribe first: once the reader sees the channel closed, the
		// episode no longer counts it.
		s.b.unsubscribe(s.key, s.e)
		close(s.ch)
		close(s.done)
		s.b.wg.Done()
	}()
	next := 0 // index of the next part to deliver
	for {
		pending, closed, wake := s.e.read(next)

		for _, p := range pending {
			if !s.send(ctx, p) {
				return
			}
		}
		next += len(pending)
		switch {
		case len(pending) > 0:
			continue
		case closed:
			return
		}
		select {
		case <-wake:
		case <-s.stop:
			return
		case <-ctx.Done():
			return
		case <-s.b.done:
			return
		}
	}
}

// send delivers p, reporting false if the subscription must end.
func (s *subscription) send(ctx context.Context, p Part) bool {
	// Fast path: the reader is waiting, no timer needed.
	select {
	case s.ch <- p:
		return true
	default:
	}
	if s.timer == nil {
		s.timer = s.b.cfg.Clock.NewTimer(s.b.cfg.SubscriberTimeout)
	} else {
		s.timer.Reset(s.b.cfg.SubscriberTimeout)
	}
	select {
	case s.ch <- p:
		s.timer.Stop()
		return true
	case <-s.timer.C():
		dropped(s.b.slowDrops)
		if s.b.onSlowDrop != nil {
			s.b.onSlowDrop(s.key)
		}
		return false
	case <-s.stop:
	case <-ctx.Done():
	case <-s.b.done:
	}
	s.timer.Stop()
	return false
}

// clonePart copies the part's byte slices and pointers, so that the buffer
// and its callers never share mutable memory.
func clonePart(p sdk.ChatMessagePart) sdk.ChatMessagePart {
	p.Args = slices.Clone(p.Args)
	p.Result = slices.Clone(p.Result)
	if p.FileID != nil {
		id := *p.FileID
		p.FileID = &id
	}
	if p.CreatedAt != nil {
		t := *p.CreatedAt
		p.CreatedAt = &t
	}
	if p.CompletedAt != nil {
		t := *p.CompletedAt
		p.CompletedAt = &t
	}
	return p
}
