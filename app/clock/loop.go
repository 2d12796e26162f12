package clock

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Loop runs a pass again and again on a clock: after each pass it waits
// the duration the pass returned, or until Wake, whichever comes first.
// The schedules' runner and the webhooks' deliverer are Loops.
type Loop struct {
	clock Clock
	wake  chan struct{}

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// NewLoop returns a stopped loop on c (Real when nil).
func NewLoop(c Clock) *Loop {
	if c == nil {
		c = Real{}
	}
	return &Loop{clock: c, wake: make(chan struct{}, 1)}
}

// Wake ends the current wait, or the next one if no wait is on.
func (l *Loop) Wake() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Start runs pass until Stop or ctx ends; it fails when already started.
func (l *Loop) Start(ctx context.Context, pass func(context.Context) time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel != nil {
		return errors.New("clock: loop already started")
	}
	ctx, l.cancel = context.WithCancel(ctx)
	l.done = make(chan struct{})
	go l.run(ctx, pass, l.done)
	return nil
}

// Stop ends the loop and waits for its pass to return.
func (l *Loop) Stop() {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.cancel = nil
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (l *Loop) run(ctx context.Context, pass func(context.Context) time.Duration, done chan struct{}) {
	defer close(done)
	for {
		t := l.clock.NewTimer(pass(ctx))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		case <-l.wake:
			t.Stop()
		}
	}
}
