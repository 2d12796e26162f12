package pubsub

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
)

// Notification events of chatd_pubsub_notifications_total.
const (
	EventSent     = "sent"     // Publish succeeded
	EventReceived = "received" // delivered to a subscriber's callback
	EventDropped  = "dropped"  // Publish failed: the notification is lost
)

// Instrumented wraps a Pubsub and counts its notifications in
// chatd_pubsub_notifications_total{event}. A notification the backend
// drops after a successful Publish (Postgres' delivery queue overflowing)
// shows as sent but not received.
type Instrumented struct {
	Pubsub
	sent, received, dropped prometheus.Counter
}

// Instrument registers the pubsub counters on reg and wraps p.
func Instrument(p Pubsub, reg prometheus.Registerer) *Instrumented {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chatd_pubsub_notifications_total",
		Help: "Pubsub notifications by event: sent (published), received (delivered to a subscriber), dropped (a failed publish, or one received while too many waited for slow subscribers).",
	}, []string{"event"})
	reg.MustRegister(vec)
	i := &Instrumented{
		Pubsub: p,
		sent:   vec.WithLabelValues(EventSent), received: vec.WithLabelValues(EventReceived),
		dropped: vec.WithLabelValues(EventDropped),
	}
	// A pubsub that drops received notifications itself (Postgres, when
	// too many wait for slow subscribers) reports them here.
	if d, ok := p.(interface{ SetDropHook(func()) }); ok {
		d.SetDropHook(i.dropped.Inc)
	}
	return i
}

// Publish publishes and counts the notification as sent or dropped.
func (i *Instrumented) Publish(ctx context.Context, channel string, payload []byte) error {
	err := i.Pubsub.Publish(ctx, channel, payload)
	if err != nil {
		i.dropped.Inc()
	} else {
		i.sent.Inc()
	}
	return err
}

// Subscribe subscribes fn, counting each delivery as received.
func (i *Instrumented) Subscribe(ctx context.Context, channel string, fn func(payload []byte)) (func(), error) {
	return i.Pubsub.Subscribe(ctx, channel, func(payload []byte) {
		i.received.Inc()
		fn(payload)
	})
}
