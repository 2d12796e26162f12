package e2e_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/store"
)

// families is what a registry holds: each family's type and the label
// names of its first series (sorted by name).
func families(t testing.TB, reg prometheus.Gatherer) map[string]family {
	t.Helper()
	fams, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]family{}
	for _, f := range fams {
		var labels []string
		for _, l := range f.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		out[f.GetName()] = family{f.GetType(), labels}
	}
	return out
}

type family struct {
	typ    dto.MetricType
	labels []string
}

// TestRuntimeMetricNames pins the names, types and labels of the metrics
// outside the worker's stage families (TestMetricNamesAndLabels in
// app/worker pins those): they exist from the start, at zero, so a
// dashboard built on them does not break silently. Change this test only
// together with docs/observability.md and docs/grafana-dashboard.json.
func TestRuntimeMetricNames(t *testing.T) {
	h := apptest.Start(t, apptest.Options{NoStart: true})
	got := families(t, h.Metrics.Registry)
	for name, want := range map[string]family{
		"chatd_queue_depth":                {dto.MetricType_GAUGE, nil},
		"chatd_running_chats":              {dto.MetricType_GAUGE, []string{"pool"}},
		"chatd_stage_anomalies_total":      {dto.MetricType_COUNTER, []string{"reason"}},
		"chatd_stream_viewers":             {dto.MetricType_GAUGE, nil},
		"chatd_stream_relay_connections":   {dto.MetricType_GAUGE, []string{"direction"}},
		"chatd_partbuf_drops_total":        {dto.MetricType_COUNTER, []string{"reason"}},
		"chatd_pubsub_notifications_total": {dto.MetricType_COUNTER, []string{"event"}},
		"chatd_store_tx_duration_seconds":  {dto.MetricType_HISTOGRAM, []string{"store", "tx"}},
		"chatd_store_tx_conflicts_total":   {dto.MetricType_COUNTER, []string{"store"}},
	} {
		require.Equal(t, want, got[name], name)
	}
}

// TestStoreMetrics: every transaction of the app's store is timed by kind
// under the store's name, and one failing on a conflict is counted.
func TestStoreMetrics(t *testing.T) {
	h := apptest.Start(t, apptest.Options{NoStart: true})
	reg := h.Metrics.Registry
	count := func(name string, labels map[string]string) float64 {
		fams, err := reg.Gather()
		require.NoError(t, err)
		for _, f := range fams {
			if f.GetName() != name {
				continue
			}
		series:
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
						continue series
					}
				}
				if h := m.GetHistogram(); h != nil {
					return float64(h.GetSampleCount())
				}
				return m.GetCounter().GetValue()
			}
		}
		return -1
	}
	reads := count("chatd_store_tx_duration_seconds", map[string]string{"store": "sqlite", "tx": "read"})
	writes := count("chatd_store_tx_duration_seconds", map[string]string{"store": "sqlite", "tx": "write"})
	ctx := context.Background()
	require.NoError(t, h.Store.ReadTx(ctx, func(store.Reader) error { return nil }))
	require.ErrorIs(t, h.Store.InTx(ctx, func(store.Tx) error { return store.ErrConflict }), store.ErrConflict)
	require.Equal(t, reads+1, count("chatd_store_tx_duration_seconds", map[string]string{"store": "sqlite", "tx": "read"}))
	require.Equal(t, writes+1, count("chatd_store_tx_duration_seconds", map[string]string{"store": "sqlite", "tx": "write"}))
	require.Equal(t, 1.0, count("chatd_store_tx_conflicts_total", map[string]string{"store": "sqlite"}))
}
