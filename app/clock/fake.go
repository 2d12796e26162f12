package clock

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Fake is a controlled clock for tests. Now only moves with Advance; the
// timers, tickers and After channels it made fire when Advance reaches
// their deadline, in deadline order (creation order on ties), each
// receiving its own deadline as the time. Safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	seq     uint64
	waiters []*fakeTimer  // pending timers, tickers and After channels
	changed chan struct{} // closed and replaced whenever waiters change
}

var _ Clock = (*Fake)(nil)

// NewFake returns a fake clock reading start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, changed: make(chan struct{})}
}

// fakeTimer is one pending deadline: a timer or After channel (period 0)
// or a ticker.
type fakeTimer struct {
	f      *Fake
	ch     chan time.Time
	at     time.Time
	period time.Duration
	seq    uint64
}

// Now returns the clock's time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// After returns a channel that receives the time once Advance has moved
// the clock d past now. A d <= 0 fires at once.
func (f *Fake) After(d time.Duration) <-chan time.Time {
	return f.NewTimer(d).C()
}

// NewTimer returns a timer that fires once Advance has moved the clock d
// past now. A d <= 0 fires at once.
func (f *Fake) NewTimer(d time.Duration) Timer {
	t := &fakeTimer{f: f, ch: make(chan time.Time, 1)}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scheduleLocked(t, d)
	return t
}

// NewTicker returns a ticker that fires every d of Advance. It panics when
// d is not positive, as time.NewTicker does.
func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	t := &fakeTimer{f: f, ch: make(chan time.Time, 1), period: d}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scheduleLocked(t, d)
	return fakeTicker{t}
}

// Advance moves the clock by d, firing every deadline it reaches in order;
// a ticker fires once per period passed, dropping ticks its reader has not
// taken, like a real one.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	target := f.now.Add(d)
	for {
		i := f.nextLocked()
		if i < 0 || f.waiters[i].at.After(target) {
			break
		}
		t := f.waiters[i]
		f.now = t.at
		select {
		case t.ch <- t.at:
		default: // a ticker whose reader is behind
		}
		if t.period > 0 {
			t.at = t.at.Add(t.period)
		} else {
			f.removeLocked(t)
		}
	}
	f.now = target
	f.notifyLocked()
}

// Waiters counts the pending deadlines: timers and After channels that have
// not fired (including those whose reader has gone away) and running
// tickers.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// BlockUntil waits until at least n deadlines are pending, that is until
// the goroutines under test are blocked on the clock, or ctx ends.
func (f *Fake) BlockUntil(ctx context.Context, n int) error {
	for {
		f.mu.Lock()
		count, changed := len(f.waiters), f.changed
		f.mu.Unlock()
		if count >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// scheduleLocked makes t pending d from now, or fires it at once when d is
// not positive.
func (f *Fake) scheduleLocked(t *fakeTimer, d time.Duration) {
	if d <= 0 {
		t.ch <- f.now
		return
	}
	f.seq++
	t.at, t.seq = f.now.Add(d), f.seq
	f.waiters = append(f.waiters, t)
	f.notifyLocked()
}

// nextLocked is the index of the earliest deadline, or -1.
func (f *Fake) nextLocked() int {
	best := -1
	for i, t := range f.waiters {
		if best < 0 || t.at.Before(f.waiters[best].at) || t.at.Equal(f.waiters[best].at) && t.seq < f.waiters[best].seq {
			best = i
		}
	}
	return best
}

// removeLocked drops t from the pending deadlines, reporting whether it was
// pending.
func (f *Fake) removeLocked(t *fakeTimer) bool {
	i := slices.Index(f.waiters, t)
	if i < 0 {
		return false
	}
	f.waiters = slices.Delete(f.waiters, i, i+1)
	f.notifyLocked()
	return true
}

func (f *Fake) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// fakeTicker is a fakeTimer with a period, seen through Ticker.
type fakeTicker struct{ *fakeTimer }

// Stop implements Ticker.
func (t fakeTicker) Stop() { t.fakeTimer.Stop() }

// C implements Timer and Ticker.
func (t *fakeTimer) C() <-chan time.Time { return t.ch }

// Stop implements Timer and Ticker; a value already delivered but not yet
// received is discarded.
func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	t.drain()
	return t.f.removeLocked(t)
}

// Reset implements Timer.
func (t *fakeTimer) Reset(d time.Duration) bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	t.drain()
	pending := t.f.removeLocked(t)
	t.f.scheduleLocked(t, d)
	return pending
}

func (t *fakeTimer) drain() {
	select {
	case <-t.ch:
	default:
	}
}
