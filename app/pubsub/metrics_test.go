package pubsub_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/pubsub"
)

// failing is a pubsub whose publishes fail.
type failing struct{ pubsub.Pubsub }

func (failing) Publish(context.Context, string, []byte) error { return errors.New("down") }

// TestInstrumentedCounts: sent per successful publish, received per
// delivery to each subscriber, dropped per failed publish.
func TestInstrumentedCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	ps := pubsub.Instrument(pubsub.NewMemory(), reg)
	got := make(chan string, 4)
	for range 2 {
		_, err := ps.Subscribe(ctx, "c", func(p []byte) { got <- string(p) })
		require.NoError(t, err)
	}
	require.NoError(t, ps.Publish(ctx, "c", []byte("x")))
	require.Equal(t, "x", <-got)
	require.Equal(t, "x", <-got)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP chatd_pubsub_notifications_total Pubsub notifications by event: sent (published), received (delivered to a subscriber), dropped (a failed publish, or one received while too many waited for slow subscribers).
# TYPE chatd_pubsub_notifications_total counter
chatd_pubsub_notifications_total{event="dropped"} 0
chatd_pubsub_notifications_total{event="received"} 2
chatd_pubsub_notifications_total{event="sent"} 1
`)))

	reg2 := prometheus.NewRegistry()
	bad := pubsub.Instrument(failing{pubsub.NewMemory()}, reg2)
	require.Error(t, bad.Publish(ctx, "c", []byte("x")))
	require.NoError(t, testutil.GatherAndCompare(reg2, strings.NewReader(`
# HELP chatd_pubsub_notifications_total Pubsub notifications by event: sent (published), received (delivered to a subscriber), dropped (a failed publish, or one received while too many waited for slow subscribers).
# TYPE chatd_pubsub_notifications_total counter
chatd_pubsub_notifications_total{event="dropped"} 1
chatd_pubsub_notifications_total{event="received"} 0
chatd_pubsub_notifications_total{event="sent"} 0
`)))
}

// dropping is a pubsub that drops received notifications itself and
// reports them through its drop hook, as the Postgres one does.
type dropping struct {
	pubsub.Pubsub
	hook func()
}

func (d *dropping) SetDropHook(fn func()) { d.hook = fn }

// TestInstrumentedCountsReceiveDrops: the wrapper hooks into a pubsub that
// reports its own drops and counts them as dropped.
func TestInstrumentedCountsReceiveDrops(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	d := &dropping{Pubsub: pubsub.NewMemory()}
	pubsub.Instrument(d, reg)
	require.NotNil(t, d.hook, "the wrapper set the drop hook")
	d.hook()
	d.hook()
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP chatd_pubsub_notifications_total Pubsub notifications by event: sent (published), received (delivered to a subscriber), dropped (a failed publish, or one received while too many waited for slow subscribers).
# TYPE chatd_pubsub_notifications_total counter
chatd_pubsub_notifications_total{event="dropped"} 2
chatd_pubsub_notifications_total{event="received"} 0
chatd_pubsub_notifications_total{event="sent"} 0
`)))
}
