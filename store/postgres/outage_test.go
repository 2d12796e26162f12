package postgres

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// syncBuffer is a log sink the listener goroutine writes while the test
// reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// An outage of the listener's connection is logged once, and so is the
// recovery; a healthy connection logs nothing.
func TestPubsubLogsOutageOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testDSN(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	var logs syncBuffer
	ps, err := newPubsub(ctx, pool, slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ps.Close()) })
	channel := testChannel()
	got, fn := collector()
	cancel, err := ps.Subscribe(ctx, channel, fn)
	require.NoError(t, err)
	defer cancel()
	require.Empty(t, logs.String())

	pid := ps.listenerPID()
	admin(t, testDSN(t), fmt.Sprintf("SELECT pg_terminate_backend(%d)", pid))
	require.Eventually(t, func() bool { n := ps.listenerPID(); return n != 0 && n != pid }, waitTimeout, 5*time.Millisecond,
		"the listener reconnects (it logs before it publishes its new pid)")
	// Subscribing to a new channel returns once the new connection listens.
	other := testChannel()
	cancel2, err := ps.Subscribe(ctx, other, fn)
	require.NoError(t, err)
	defer cancel2()
	require.NoError(t, ps.Publish(ctx, other, []byte("back")))
	require.Equal(t, "back", receive(t, got))

	out := logs.String()
	require.Equal(t, 1, strings.Count(out, "postgres unreachable"), out)
	require.Equal(t, 1, strings.Count(out, "postgres reachable again"), out)
	require.Less(t, strings.Index(out, "unreachable"), strings.Index(out, "reachable again"), out)
}
