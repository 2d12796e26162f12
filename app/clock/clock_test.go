package clock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/clock"
)

var start = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// fired reports whether ch holds a value, and which.
func fired(ch <-chan time.Time) (time.Time, bool) {
	select {
	case v := <-ch:
		return v, true
	default:
		return time.Time{}, false
	}
}

func TestFakeAfter(t *testing.T) {
	t.Parallel()
	c := clock.NewFake(start)
	require.Equal(t, start, c.Now())

	got, ok := fired(c.After(0))
	require.True(t, ok, "a non-positive duration fires at once")
	require.Equal(t, start, got)

	ch := c.After(time.Minute)
	require.NoError(t, c.BlockUntil(waitCtx(t), 1))
	require.Equal(t, 1, c.Waiters())

	c.Advance(59 * time.Second)
	_, ok = fired(ch)
	require.False(t, ok, "fired before its deadline")
	require.Equal(t, 1, c.Waiters())

	c.Advance(time.Second)
	require.Equal(t, start.Add(time.Minute), <-ch)
	require.Equal(t, 0, c.Waiters())
	require.Equal(t, start.Add(time.Minute), c.Now())
}

func TestFakeBlockUntilWaitsForAGoroutine(t *testing.T) {
	t.Parallel()
	c := clock.NewFake(time.Unix(0, 0))
	done := make(chan struct{})
	go func() {
		<-c.After(time.Second)
		close(done)
	}()
	require.NoError(t, c.BlockUntil(waitCtx(t), 1))
	c.Advance(time.Second)
	<-done

	short, cancelShort := context.WithCancel(context.Background())
	cancelShort()
	require.ErrorIs(t, c.BlockUntil(short, 5), context.Canceled)
}

// TestFakeOrder: one Advance past several deadlines fires them in deadline
// order, each with its own deadline as the time.
func TestFakeOrder(t *testing.T) {
	t.Parallel()
	c := clock.NewFake(start)
	late, early := c.After(3*time.Second), c.After(time.Second)
	c.Advance(10 * time.Second)
	require.Equal(t, start.Add(time.Second), <-early)
	require.Equal(t, start.Add(3*time.Second), <-late)
	require.Equal(t, start.Add(10*time.Second), c.Now())
}

func TestFakeTimer(t *testing.T) {
	t.Parallel()
	c := clock.NewFake(start)
	tm := c.NewTimer(time.Second)
	require.True(t, tm.Stop(), "a pending timer stops")
	require.False(t, tm.Stop(), "a stopped one is not pending")
	require.Zero(t, c.Waiters())
	c.Advance(time.Hour)
	_, ok := fired(tm.C())
	require.False(t, ok, "a stopped timer never fires")

	require.False(t, tm.Reset(time.Second))
	c.Advance(time.Second)
	require.Equal(t, start.Add(time.Hour+time.Second), <-tm.C())

	// Reset after a fire that nobody received: the stale value is dropped.
	require.False(t, tm.Reset(time.Second))
	c.Advance(time.Second)
	require.False(t, tm.Reset(time.Minute), "it had fired")
	_, ok = fired(tm.C())
	require.False(t, ok, "no stale value after Reset")
	require.True(t, tm.Reset(2*time.Minute), "pending after a Reset")
	c.Advance(2 * time.Minute)
	_, ok = fired(tm.C())
	require.True(t, ok)
}

func TestFakeTicker(t *testing.T) {
	t.Parallel()
	c := clock.NewFake(start)
	tk := c.NewTicker(time.Second)
	require.Equal(t, 1, c.Waiters(), "a running ticker is pending")
	for i := 1; i <= 3; i++ {
		c.Advance(time.Second)
		require.Equal(t, start.Add(time.Duration(i)*time.Second), <-tk.C())
	}
	// A reader that falls behind misses ticks instead of queueing them.
	c.Advance(5 * time.Second)
	require.Equal(t, start.Add(4*time.Second), <-tk.C())
	_, ok := fired(tk.C())
	require.False(t, ok)
	tk.Stop()
	require.Zero(t, c.Waiters())
	c.Advance(time.Hour)
	_, ok = fired(tk.C())
	require.False(t, ok, "a stopped ticker never fires")
	require.Panics(t, func() { c.NewTicker(0) })
}

// TestReal: the wall clock's timers fire and stop.
func TestReal(t *testing.T) {
	t.Parallel()
	var c clock.Clock = clock.Real{}
	before := time.Now()
	require.False(t, c.Now().Before(before))
	<-c.After(time.Millisecond)
	tm := c.NewTimer(time.Millisecond)
	<-tm.C()
	require.False(t, tm.Stop())
	tk := c.NewTicker(time.Millisecond)
	<-tk.C()
	tk.Stop()
}
