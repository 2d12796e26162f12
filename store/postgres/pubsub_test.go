package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

const waitTimeout = 10 * time.Second

// newTestPubsub returns a Pubsub over a pool of its own, so two of them use
// separate listener connections like two replicas would.
func newTestPubsub(t *testing.T) *Pubsub {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testDSN(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	ps, err := NewPubsub(ctx, pool)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ps.Close()) })
	return ps
}

// testChannel is unique per test: channels are shared by the whole
// database, across the per-test schemas.
func testChannel() string { return "chat:update:" + uuid.NewString() }

// collector records payloads on a channel for the test to wait on.
func collector() (chan string, func([]byte)) {
	ch := make(chan string, 100)
	return ch, func(b []byte) { ch <- string(b) }
}

func receive(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(waitTimeout):
		t.Fatal("no notification within", waitTimeout)
		return ""
	}
}

func TestPubsubTwoInstances(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := newTestPubsub(t), newTestPubsub(t)
	require.NotEqual(t, a.listenerPID(), b.listenerPID(), "one listener connection each")
	channel := testChannel()

	gotA, fnA := collector()
	gotB, fnB := collector()
	cancelA, err := a.Subscribe(ctx, channel, fnA)
	require.NoError(t, err)
	defer cancelA()
	cancelB, err := b.Subscribe(ctx, channel, fnB)
	require.NoError(t, err)
	defer cancelB()

	// Subscribe returned, so the LISTEN is in place: nothing is missed.
	require.NoError(t, a.Publish(ctx, channel, []byte(`{"snapshot_version":2}`)))
	require.Equal(t, `{"snapshot_version":2}`, receive(t, gotA))
	require.Equal(t, `{"snapshot_version":2}`, receive(t, gotB))
}

func TestPubsubSubscribersOfOneChannel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ps := newTestPubsub(t)
	channel, other := testChannel(), testChannel()

	got1, fn1 := collector()
	got2, fn2 := collector()
	gotOther, fnOther := collector()
	cancel1, err := ps.Subscribe(ctx, channel, fn1)
	require.NoError(t, err)
	cancel2, err := ps.Subscribe(ctx, channel, fn2)
	require.NoError(t, err)
	cancelOther, err := ps.Subscribe(ctx, other, fnOther)
	require.NoError(t, err)
	defer cancelOther()

	require.NoError(t, ps.Publish(ctx, channel, []byte("1")))
	require.Equal(t, "1", receive(t, got1))
	require.Equal(t, "1", receive(t, got2))

	// Notifications are delivered in order, so once "2" arrives on the other
	// channel any stray delivery of "1" to it would have come first.
	cancel1()
	require.NoError(t, ps.Publish(ctx, channel, []byte("2")))
	require.NoError(t, ps.Publish(ctx, other, []byte("x")))
	require.Equal(t, "2", receive(t, got2))
	require.Equal(t, "x", receive(t, gotOther))
	require.Empty(t, got1, "a cancelled subscriber gets nothing")

	cancel2()
	cancel2() // idempotent
	require.Eventually(t, func() bool { return !ps.isListening(channel) }, waitTimeout, 10*time.Millisecond,
		"the last cancel UNLISTENs")
	require.True(t, ps.isListening(other))

	// A new subscriber after the UNLISTEN listens again.
	got3, fn3 := collector()
	cancel3, err := ps.Subscribe(ctx, channel, fn3)
	require.NoError(t, err)
	defer cancel3()
	require.NoError(t, ps.Publish(ctx, channel, []byte("3")))
	require.Equal(t, "3", receive(t, got3))
}

func TestPubsubSubscribeFromCallback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ps := newTestPubsub(t)
	first, second := testChannel(), testChannel()

	got, fn := collector()
	subscribed := make(chan error, 1)
	cancel, err := ps.Subscribe(ctx, first, func([]byte) {
		// Subscribe waits for the listener; callbacks run elsewhere, so
		// this must not deadlock.
		_, err := ps.Subscribe(ctx, second, fn)
		subscribed <- err
	})
	require.NoError(t, err)
	defer cancel()

	require.NoError(t, ps.Publish(ctx, first, []byte("go")))
	select {
	case err := <-subscribed:
		require.NoError(t, err)
	case <-time.After(waitTimeout):
		t.Fatal("Subscribe from a callback did not return")
	}
	require.NoError(t, ps.Publish(ctx, second, []byte("ok")))
	require.Equal(t, "ok", receive(t, got))
}

func TestPubsubReconnects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ps := newTestPubsub(t)
	channel := testChannel()
	got, fn := collector()
	cancel, err := ps.Subscribe(ctx, channel, fn)
	require.NoError(t, err)
	defer cancel()

	pid := ps.listenerPID()
	require.NotZero(t, pid)
	admin(t, testDSN(t), fmt.Sprintf("SELECT pg_terminate_backend(%d)", pid))

	// Notifications sent while the listener is down are lost; keep
	// publishing until one arrives on the new connection.
	require.Eventually(t, func() bool {
		require.NoError(t, ps.Publish(ctx, channel, []byte("again")))
		select {
		case s := <-got:
			return s == "again"
		case <-time.After(50 * time.Millisecond):
			return false
		}
	}, waitTimeout, 10*time.Millisecond)
	newPID := ps.listenerPID()
	require.NotZero(t, newPID)
	require.NotEqual(t, pid, newPID, "a new listener connection")

	// And a subscription made after the reconnect works too.
	other := testChannel()
	got2, fn2 := collector()
	cancel2, err := ps.Subscribe(ctx, other, fn2)
	require.NoError(t, err)
	defer cancel2()
	require.NoError(t, ps.Publish(ctx, other, []byte("fresh")))
	require.Equal(t, "fresh", receive(t, got2))
}

func TestPubsubSubscribeDoneContext(t *testing.T) {
	t.Parallel()
	ps := newTestPubsub(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := ps.Subscribe(ctx, testChannel(), func([]byte) {})
	require.ErrorIs(t, err, context.Canceled)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	require.Empty(t, ps.subs, "a failed Subscribe leaves no subscription")
	require.Empty(t, ps.waiters)
}

func TestPubsubClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testDSN(t))
	require.NoError(t, err)
	defer pool.Close()
	ps, err := NewPubsub(ctx, pool)
	require.NoError(t, err)
	cancel, err := ps.Subscribe(ctx, testChannel(), func([]byte) {})
	require.NoError(t, err)

	require.NoError(t, ps.Close())
	require.NoError(t, ps.Close(), "Close is idempotent")
	cancel() // cancelling after Close is harmless
	_, err = ps.Subscribe(ctx, testChannel(), func([]byte) {})
	require.ErrorIs(t, err, ErrPubsubClosed)
	require.Zero(t, ps.listenerPID(), "the listener connection is closed")
}

func TestPubsubChannelNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ps := newTestPubsub(t)
	for _, bad := range []string{"", strings.Repeat("x", 64), "a\x00b"} {
		_, err := ps.Subscribe(ctx, bad, func([]byte) {})
		require.Error(t, err, "%q", bad)
		require.Error(t, ps.Publish(ctx, bad, nil), "%q", bad)
	}
	// Names that need quoting work: the spec's names contain ':'.
	channel := `odd "name"; DROP TABLE x` + uuid.NewString()[:8]
	got, fn := collector()
	cancel, err := ps.Subscribe(ctx, channel, fn)
	require.NoError(t, err)
	defer cancel()
	require.NoError(t, ps.Publish(ctx, channel, []byte("q")))
	require.Equal(t, "q", receive(t, got))

	err = ps.Publish(ctx, channel, []byte(strings.Repeat("x", 9000)))
	require.ErrorIs(t, err, store.ErrInvariant, "NOTIFY payloads are capped below 8000 bytes")
}

// A notification received while maxPending wait for a slow subscriber is
// dropped and reported to the drop hook (app/pubsub counts it); the
// queued ones are still delivered once the subscriber catches up.
func TestPubsubDropsReported(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ps := newTestPubsub(t)
	ps.mu.Lock()
	ps.maxPending = 1
	ps.mu.Unlock()
	var drops atomic.Int32
	ps.SetDropHook(func() { drops.Add(1) })
	channel := testChannel()

	release := make(chan struct{})
	got := make(chan string, 10)
	cancel, err := ps.Subscribe(ctx, channel, func(b []byte) {
		<-release // the slow subscriber
		got <- string(b)
	})
	require.NoError(t, err)
	defer cancel()

	// The blocked callback holds one, one waits, the rest find the queue
	// full; how many get in depends on when the delivery loop took the
	// first. Every notification is either delivered or reported dropped.
	for i := range 5 {
		require.NoError(t, ps.Publish(ctx, channel, fmt.Appendf(nil, `{"n":%d}`, i)))
	}
	require.Eventually(t, func() bool { return drops.Load() >= 3 }, waitTimeout, 5*time.Millisecond, "drops are reported")
	close(release)
	require.Equal(t, `{"n":0}`, receive(t, got), "delivered in order")
	delivered := 1
	for delivered+int(drops.Load()) < 5 {
		receive(t, got)
		delivered++
	}
	require.Equal(t, 5, delivered+int(drops.Load()))
}
