package worker

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/sdk"
)

// TestMetricNamesAndLabels pins the worker's metric families, their types,
// label names and the stage buckets, so dashboards built on them do not
// break silently. Change this test only together with docs/observability.md.
func TestMetricNamesAndLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.observe(StageCommit, ScopeTurn, KindRoot, 0)
	m.observeModel(StageStream, modelIdentity{"openai", "gpt"}, KindRoot, 0)
	m.outcome(OutcomeCompleted, KindRoot)
	m.toolCall("current_time", "pure", "ok")
	m.retry(sdk.ChatErrorKind("overloaded"))
	m.failed(sdk.ChatErrorKind("config"))

	type family struct {
		typ    dto.MetricType
		labels []string
	}
	want := map[string]family{
		"chatd_stage_duration_seconds":       {dto.MetricType_HISTOGRAM, []string{"chat_kind", "scope", "stage"}},
		"chatd_model_stage_duration_seconds": {dto.MetricType_HISTOGRAM, []string{"chat_kind", "model", "provider_type", "stage"}},
		"chatd_turn_outcomes_total":          {dto.MetricType_COUNTER, []string{"chat_kind", "outcome"}},
		"chatd_tool_calls_total":             {dto.MetricType_COUNTER, []string{"effect", "outcome", "tool"}},
		"chatd_generation_retries_total":     {dto.MetricType_COUNTER, []string{"kind"}},
		"chatd_generation_errors_total":      {dto.MetricType_COUNTER, []string{"kind"}},
	}
	fams, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]family{}
	for _, f := range fams {
		var labels []string
		for _, l := range f.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName()) // sorted by name
		}
		got[f.GetName()] = family{f.GetType(), labels}
		if f.GetType() == dto.MetricType_HISTOGRAM {
			var bounds []float64
			for _, b := range f.GetMetric()[0].GetHistogram().GetBucket() {
				bounds = append(bounds, b.GetUpperBound())
			}
			require.Equal(t, StageBuckets, bounds, f.GetName())
		}
	}
	require.Equal(t, want, got)

	// Milliseconds for commits, minutes for turns.
	require.Equal(t, 0.001, StageBuckets[0])
	require.Equal(t, 1800.0, StageBuckets[len(StageBuckets)-1])
	// The stage and outcome names are the spec's.
	require.Equal(t, []string{"chat_turn", "acquisition", "mcp_connect", "stream", "time_to_first_token",
		"provider_attempt", "tool_call", "commit", "retry_backoff"},
		[]string{StageChatTurn, StageAcquisition, StageMCPConnect, StageStream, StageTimeToFirstToken,
			StageProviderAttempt, StageToolCall, StageCommit, StageRetryBackoff})
	require.Equal(t, []string{"completed", "interrupted", "error", "abandoned"},
		[]string{OutcomeCompleted, OutcomeInterrupted, OutcomeError, OutcomeAbandoned})
}

// TestNilMetricsRecordNothing: a worker without a registry records nothing
// and does not panic.
func TestNilMetricsRecordNothing(t *testing.T) {
	var m *Metrics
	m.observe(StageCommit, ScopeTurn, KindRoot, 0)
	m.observeModel(StageStream, modelIdentity{}, KindRoot, 0)
	m.outcome(OutcomeCompleted, KindRoot)
	m.toolCall("t", "pure", "ok")
	m.retry("x")
	m.failed("x")
}
