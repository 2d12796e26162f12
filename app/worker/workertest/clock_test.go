package workertest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/worker/workertest"
)

func TestClock(t *testing.T) {
	t.Parallel()
	start := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	c := workertest.NewClock(start)
	require.Equal(t, start, c.Now())

	select {
	case got := <-c.After(0):
		require.Equal(t, start, got, "a non-positive duration fires at once")
	default:
		t.Fatal("After(0) did not fire at once")
	}

	ch := c.After(time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, c.BlockUntil(ctx, 1))
	require.Equal(t, 1, c.Waiters())

	c.Advance(59 * time.Second)
	select {
	case <-ch:
		t.Fatal("fired before its deadline")
	default:
	}
	require.Equal(t, 1, c.Waiters())

	c.Advance(time.Second)
	require.Equal(t, start.Add(time.Minute), <-ch)
	require.Equal(t, 0, c.Waiters())
	require.Equal(t, start.Add(time.Minute), c.Now())
}

func TestClockBlockUntilWaitsForAGoroutine(t *testing.T) {
	t.Parallel()
	c := workertest.NewClock(time.Unix(0, 0))
	fired := make(chan struct{})
	go func() {
		<-c.After(time.Second)
		close(fired)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, c.BlockUntil(ctx, 1))
	c.Advance(time.Second)
	<-fired

	short, cancelShort := context.WithCancel(context.Background())
	cancelShort()
	require.ErrorIs(t, c.BlockUntil(short, 5), context.Canceled)
}
