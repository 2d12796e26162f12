package worker

import (
	"context"
	"sync"
	"time"

	"github.com/chatd/chatd/app/clock"
)

// sleep waits d on c, or returns ctx's error.
func sleep(ctx context.Context, c clock.Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-c.After(d):
		return nil
	}
}

// keyedLock is a set of mutexes by key, taken with a context. It is the
// runner goroutines' in-memory lock on (chat, history_version, status).
type keyedLock struct {
	mu    sync.Mutex
	locks map[any]*keyedEntry
}

type keyedEntry struct {
	ch   chan struct{}
	refs int
}

// lock takes key's lock or returns ctx's error; unlock releases it.
func (k *keyedLock) lock(ctx context.Context, key any) (unlock func(), err error) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[any]*keyedEntry{}
	}
	e := k.locks[key]
	if e == nil {
		e = &keyedEntry{ch: make(chan struct{}, 1)}
		k.locks[key] = e
	}
	e.refs++
	k.mu.Unlock()

	release := func() {
		k.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
	select {
	case e.ch <- struct{}{}:
		return func() { <-e.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}
