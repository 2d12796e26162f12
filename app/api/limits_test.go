package api

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/clock"
)

func TestRateLimiterBucket(t *testing.T) {
	t.Parallel()
	fake := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	l := newRateLimiter(fake, 60) // one a second, a minute's worth at once
	for range 60 {
		ok, _ := l.allow("u")
		require.True(t, ok)
	}
	ok, wait := l.allow("u")
	require.False(t, ok)
	require.Equal(t, time.Second, wait)
	ok, _ = l.allow("v")
	require.True(t, ok, "keys have their own buckets")

	fake.Advance(500 * time.Millisecond)
	ok, wait = l.allow("u")
	require.False(t, ok)
	require.Equal(t, 500*time.Millisecond, wait, "refill is continuous")
	fake.Advance(500 * time.Millisecond)
	ok, _ = l.allow("u")
	require.True(t, ok)

	// A bucket that refilled completely is forgotten on the next sweep.
	fake.Advance(2 * time.Minute)
	ok, _ = l.allow("w")
	require.True(t, ok)
	require.Len(t, l.buckets, 1, "only w's bucket is left")

	unlimited := newRateLimiter(fake, 0)
	require.Nil(t, unlimited)
	ok, _ = unlimited.allow("u")
	require.True(t, ok)
}

func TestStreamSlots(t *testing.T) {
	t.Parallel()
	s := &slots{max: 2, held: map[uuid.UUID]int{}}
	u := uuid.New()
	r1, ok := s.acquire(u)
	require.True(t, ok)
	_, ok = s.acquire(u)
	require.True(t, ok)
	_, ok = s.acquire(u)
	require.False(t, ok)
	_, ok = s.acquire(uuid.New())
	require.True(t, ok, "per user")
	r1()
	r1() // releasing twice frees one slot
	require.Equal(t, 1, s.held[u])
	_, ok = s.acquire(u)
	require.True(t, ok)
}

func TestRetryAfterRoundsUp(t *testing.T) {
	t.Parallel()
	err := errRateLimited("requests", 1500*time.Millisecond).(*rateLimited)
	require.Equal(t, 2*time.Second, err.retryAfter)
	err = errRateLimited("requests", time.Millisecond).(*rateLimited)
	require.Equal(t, time.Second, err.retryAfter, "never 0: clients would retry at once")
}
