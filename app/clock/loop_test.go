package clock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/clock"
)

// TestLoop: a pass runs at start, again when the wait it asked for is
// over, again at Wake, and not after Stop.
func TestLoop(t *testing.T) {
	ctx := waitCtx(t)
	c := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	l := clock.NewLoop(c)
	passes := make(chan time.Time)
	require.NoError(t, l.Start(context.Background(), func(context.Context) time.Duration {
		passes <- c.Now()
		return time.Hour
	}))
	require.Error(t, l.Start(context.Background(), nil), "a loop starts once")
	next := func() time.Time {
		t.Helper()
		select {
		case at := <-passes:
			return at
		case <-ctx.Done():
			t.Fatal("no pass")
			return time.Time{}
		}
	}
	first := next()
	require.NoError(t, c.BlockUntil(ctx, 1)) // the loop waits its hour
	c.Advance(time.Hour)
	require.Equal(t, first.Add(time.Hour), next())
	require.NoError(t, c.BlockUntil(ctx, 1))
	l.Wake()
	require.Equal(t, first.Add(time.Hour), next(), "Wake ends the wait before the clock moves")
	require.NoError(t, c.BlockUntil(ctx, 1))
	l.Stop()
	c.Advance(2 * time.Hour)
	select {
	case <-passes:
		t.Fatal("a pass after Stop")
	default:
	}
	l.Stop() // a second Stop is harmless
}
