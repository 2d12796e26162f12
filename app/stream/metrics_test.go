package stream_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store/dbtest"
)

// gauge is the value of the gauge family name's series with the label
// values want (name=value pairs), or of its only series.
func gauge(t testing.TB, reg prometheus.Gatherer, name string, want ...string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(want); i += 2 {
				if got[want[i]] != want[i+1] {
					continue series
				}
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s %v", name, want)
	return 0
}

// TestViewersGauge: chatd_stream_viewers counts the open stream
// connections, and a closed one is no longer counted.
func TestViewersGauge(t *testing.T) {
	t.Parallel()
	r := startApp(t, dbtest.NewSQLite(t), demoConfig())
	reg := r.app.Internals().Metrics.Registry
	require.Zero(t, gauge(t, reg, "chatd_stream_viewers"))
	chat := createChat(t, r.client, "")
	one := dial(t, r.srv.URL, chat.ID)
	two := dial(t, r.srv.URL, chat.ID)
	one.untilStatus(sdk.ChatStatusWaiting)
	two.untilStatus(sdk.ChatStatusWaiting)
	require.Equal(t, 2.0, gauge(t, reg, "chatd_stream_viewers"))
	one.close()
	require.Eventually(t, func() bool { return gauge(t, reg, "chatd_stream_viewers") == 1 },
		waitTimeout, 5*time.Millisecond, "the closed viewer is no longer counted")
	require.Zero(t, gauge(t, reg, "chatd_stream_relay_connections", "direction", "outbound"), "one replica: no relay")
}
