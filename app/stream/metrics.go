package stream

import "github.com/prometheus/client_golang/prometheus"

// Relay directions of chatd_stream_relay_connections.
const (
	RelayInbound  = "inbound"  // another replica reading this one's parts endpoint
	RelayOutbound = "outbound" // this replica reading another's, for its viewers
)

// gauges are the stream server's connection gauges; nil gauges (no
// registerer) count nothing.
type gauges struct {
	viewers, relayIn, relayOut prometheus.Gauge
}

// newGauges registers chatd_stream_viewers (open GET /chats/{chat}/stream
// connections) and chatd_stream_relay_connections{direction} on reg.
func newGauges(reg prometheus.Registerer) gauges {
	if reg == nil {
		return gauges{}
	}
	viewers := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "chatd_stream_viewers",
		Help: "Open chat stream connections (viewers) on this replica.",
	})
	relay := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "chatd_stream_relay_connections",
		Help: "Open relay connections between replicas' part streams: inbound (a peer reading this replica's parts), outbound (this replica reading a peer's).",
	}, []string{"direction"})
	reg.MustRegister(viewers, relay)
	return gauges{viewers: viewers, relayIn: relay.WithLabelValues(RelayInbound), relayOut: relay.WithLabelValues(RelayOutbound)}
}

// track counts one open connection on g until the returned func is called.
func track(g prometheus.Gauge) func() {
	if g == nil {
		return func() {}
	}
	g.Inc()
	return g.Dec
}
