package partbuf

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// follow reads f until it is done, waiting on its wake channel.
func follow(t *testing.T, f *Follower) []Part {
	t.Helper()
	var got []Part
	timeout := time.After(waitLimit)
	for {
		parts, wake, done := f.Next()
		got = append(got, parts...)
		if done {
			return got
		}
		select {
		case <-wake:
		case <-timeout:
			t.Errorf("follower not done after %d parts", len(got))
			return got
		}
	}
}

// A thousand readers, half followers and half channel subscriptions,
// all waiting while the parts come one by one, each get every part once,
// in order: the broadcaster wakes every one of them for every part.
func TestThousandReadersGetEveryPartInOrder(t *testing.T) {
	t.Parallel()
	s := setup(t, func(c *Config) { c.SubscriberTimeout = time.Hour })
	require.NoError(t, s.buf.CreateEpisode(s.ep))
	const readers, parts = 1000, 50
	results := make([][]Part, readers)
	var wg sync.WaitGroup
	for i := range readers {
		if i%2 == 0 {
			f := s.buf.Follow(s.ep)
			wg.Go(func() {
				defer f.Close()
				results[i] = follow(t, f)
			})
			continue
		}
		ch, cancel := s.buf.SubscribeToEpisode(context.Background(), s.ep)
		t.Cleanup(cancel)
		wg.Go(func() { results[i] = drain(t, ch) })
	}
	for i := range parts {
		require.NoError(t, s.buf.AddPart(s.ep, text(fmt.Sprint(i+1))))
	}
	s.buf.CloseEpisode(s.ep)
	wg.Wait()
	for i, got := range results {
		require.Len(t, got, parts, "reader %d", i)
		for j, p := range got {
			require.Equal(t, encodedPart(t, int64(j+1), text(fmt.Sprint(j+1))), p, "reader %d", i)
		}
	}
}

// A follower that does not read holds up neither the generating
// goroutine nor the other readers, and later reads everything.
func TestSlowFollowerBlocksNobody(t *testing.T) {
	t.Parallel()
	s := setup(t)
	require.NoError(t, s.buf.CreateEpisode(s.ep))
	slow := s.buf.Follow(s.ep)
	defer slow.Close()
	fast := s.buf.Follow(s.ep)
	defer fast.Close()
	_, _, done := slow.Next() // waiting, like a viewer stuck on its socket
	require.False(t, done)
	got := make(chan []Part, 1)
	go func() { got <- follow(t, fast) }()
	const n = 5000
	for i := range n {
		require.NoError(t, s.buf.AddPart(s.ep, text(fmt.Sprint(i))))
	}
	s.buf.CloseEpisode(s.ep)
	requireSeqs(t, <-got, n)
	requireSeqs(t, follow(t, slow), n)
}

func TestFollowerLifecycle(t *testing.T) {
	t.Parallel()
	t.Run("waits for the episode", func(t *testing.T) {
		t.Parallel()
		s := setup(t)
		f := s.buf.Follow(s.ep)
		defer f.Close()
		parts, wake, done := f.Next()
		require.Empty(t, parts)
		require.False(t, done)
		require.NoError(t, s.buf.CreateEpisode(s.ep))
		addTexts(t, s.buf, s.ep, "a")
		<-wake
		parts, _, _ = f.Next()
		require.Equal(t, []Part{encodedPart(t, 1, text("a"))}, parts)
	})
	t.Run("closed episode: its parts, then done", func(t *testing.T) {
		t.Parallel()
		s := setup(t)
		require.NoError(t, s.buf.CreateEpisode(s.ep))
		addTexts(t, s.buf, s.ep, "a", "b")
		s.buf.CloseEpisode(s.ep)
		f := s.buf.Follow(s.ep)
		defer f.Close()
		requireSeqs(t, follow(t, f), 2)
		_, wake, done := f.Next()
		require.True(t, done)
		require.Nil(t, wake)
	})
	t.Run("stop wakes and ends followers", func(t *testing.T) {
		t.Parallel()
		s := setup(t)
		f := s.buf.Follow(s.ep)
		defer f.Close()
		_, wake, _ := f.Next()
		s.buf.Stop()
		<-wake
		_, _, done := f.Next()
		require.True(t, done)
		after := s.buf.Follow(s.ep)
		_, _, done = after.Next()
		require.True(t, done)
		after.Close()
	})
	t.Run("an open follower keeps the episode from collection", func(t *testing.T) {
		t.Parallel()
		s := setup(t)
		require.NoError(t, s.buf.CreateEpisode(s.ep))
		s.buf.CloseEpisode(s.ep)
		f := s.buf.Follow(s.ep)
		later := s.clock.Now().Add(time.Hour)
		require.Equal(t, 0, s.buf.Collect(later))
		f.Close()
		f.Close() // idempotent
		require.Equal(t, 1, s.buf.Collect(later))
	})
	t.Run("closing a follower of a placeholder removes it", func(t *testing.T) {
		t.Parallel()
		s := setup(t)
		f := s.buf.Follow(s.ep)
		f.Close()
		require.Nil(t, s.buf.lookup(s.ep))
	})
}
