// Package clock is chatd's one time source. Every component that reads the
// time or waits for it takes a Clock; the composition root passes Real, and
// tests pass a Fake that only moves when they advance it, so deadlines,
// backoffs, leases and periodic loops are reached without sleeping.
package clock

import "time"

// Clock reads the time and makes the timers that wait for it.
type Clock interface {
	// Now is the current time.
	Now() time.Time
	// After returns a channel that receives the time once d has passed.
	After(d time.Duration) <-chan time.Time
	// NewTimer returns a timer that fires once, d from now.
	NewTimer(d time.Duration) Timer
	// NewTicker returns a ticker that fires every d; d must be positive.
	NewTicker(d time.Duration) Ticker
}

// Timer is a single event, as time.Timer. As with Go 1.23+ timers, no
// stale value is received after Stop or Reset returns.
type Timer interface {
	// C is the channel the time is delivered on.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it was pending.
	Stop() bool
	// Reset makes the timer fire d from now; it reports whether it was pending.
	Reset(d time.Duration) bool
}

// Ticker delivers the time periodically, as time.Ticker: a slow reader
// misses ticks rather than queueing them.
type Ticker interface {
	// C is the channel the ticks are delivered on.
	C() <-chan time.Time
	// Stop turns the ticker off.
	Stop()
}

// Real is the wall clock.
type Real struct{}

var _ Clock = Real{}

// Now is time.Now.
func (Real) Now() time.Time { return time.Now() }

// After is time.After.
func (Real) After(d time.Duration) <-chan time.Time { return time.After(d) }

// NewTimer is time.NewTimer.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

// NewTicker is time.NewTicker.
func (Real) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time { return r.t.C }
func (r realTicker) Stop()               { r.t.Stop() }
