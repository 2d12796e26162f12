package worker

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// TestMetricNamesAndLabels pins the worker's metric families, their types,
// label names and the stage buckets, so dashboards built on them do not
// break silently. Change this test only together with docs/observability.md.
func TestMetricNamesAndLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.observe(StageCommit, ScopeTurn, KindRoot, 0)
	m.observeModel(StageStream, modelIdentity{providerType: "openai", model: "gpt"}, KindRoot, 0)
	m.outcome(OutcomeCompleted, KindRoot)
	m.toolCall("current_time", "pure", "ok")
	m.retry(sdk.ChatErrorKind("overloaded"))
	m.failed(sdk.ChatErrorKind("config"))
	m.pass(3, 1, 0)
	m.observeTTFT(modelIdentity{providerType: "openai", model: "gpt"}, KindRoot, 0)

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
		"chatd_ttft_seconds":                 {dto.MetricType_HISTOGRAM, []string{"chat_kind", "model", "provider_type"}},
		"chatd_stage_anomalies_total":        {dto.MetricType_COUNTER, []string{"reason"}},
		"chatd_queue_depth":                  {dto.MetricType_GAUGE, nil},
		"chatd_running_chats":                {dto.MetricType_GAUGE, []string{"pool"}},
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
	require.Equal(t, []string{"chat_turn", "queue_wait", "acquisition", "mcp_connect", "stream", "time_to_first_token",
		"provider_attempt", "tool_call", "commit", "retry_backoff"},
		[]string{StageChatTurn, StageQueueWait, StageAcquisition, StageMCPConnect, StageStream, StageTimeToFirstToken,
			StageProviderAttempt, StageToolCall, StageCommit, StageRetryBackoff})
	require.Equal(t, []string{"generation_step", "prepare", "thinking", "compaction"},
		[]string{StageGenerationStep, StagePrepare, StageThinking, StageCompaction})
	for _, s := range []string{StageGenerationStep, StagePrepare, StageThinking, StageCompaction} {
		require.False(t, histogramStages[s], "%s is span-only", s)
	}
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
	m.pass(1, 1, 1)
	m.observeTTFT(modelIdentity{}, KindRoot, 0)
	m.anomaly(AnomalyStaleAnchor)
}

// turnRig is a runner's turn tracker on a fake clock and its own registry.
type turnRig struct {
	t     *testing.T
	clock *clock.Fake
	reg   *prometheus.Registry
	turns *turns
}

func newTurnRig(t *testing.T) *turnRig {
	reg := prometheus.NewRegistry()
	clk := clock.NewFake(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	w := &Worker{clock: clk, deps: Deps{Metrics: NewMetrics(reg)}}
	w.rec = newRecorder(w.deps.Metrics, nil, clk)
	r := &runner{w: w, kind: KindRoot}
	r.turns = &turns{r: r}
	return &turnRig{t: t, clock: clk, reg: reg, turns: r.turns}
}

// task is a task's context with its own hold on a turn.
func (g *turnRig) task() (context.Context, *turnHold) {
	h := &turnHold{}
	return withTurnHold(context.Background(), h), h
}

// sample is the count and sum of the stage histogram's root, turn series.
func (g *turnRig) sample(stage string) (uint64, float64) {
	fams, err := g.reg.Gather()
	require.NoError(g.t, err)
	for _, f := range fams {
		if f.GetName() != "chatd_stage_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "stage" && l.GetValue() == stage {
					return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
				}
			}
		}
	}
	return 0, 0
}

// staleAnchors is chatd_stage_anomalies_total{reason="stale_anchor"}.
func (g *turnRig) staleAnchors() float64 {
	fams, err := g.reg.Gather()
	require.NoError(g.t, err)
	for _, f := range fams {
		if f.GetName() != "chatd_stage_anomalies_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if l := m.GetLabel(); len(l) == 1 && l[0].GetValue() == AnomalyStaleAnchor {
				return m.GetCounter().GetValue()
			}
		}
	}
	g.t.Fatal("no stale_anchor series")
	return 0
}

func (g *turnRig) outcomes() map[string]float64 {
	fams, err := g.reg.Gather()
	require.NoError(g.t, err)
	out := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "chatd_turn_outcomes_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" {
					out[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// TestTurnLifecycle walks the turn tracker through the spec's cases:
// a turn backdated to its trigger with its acquisition, steps joining it,
// a newer prompt closing it, a late outcome reaching its own turn, a
// stale trigger, and runner exit.
func TestTurnLifecycle(t *testing.T) {
	g := newTurnRig(t)
	now := g.clock.Now()

	// A prompt sent 3 s ago; two steps (tasks) run the turn.
	step1, h1 := g.task()
	g.turns.ensure(step1, now.Add(-3*time.Second))
	n, sum := g.sample(StageAcquisition)
	require.Equal(t, uint64(1), n)
	require.InDelta(t, 3.0, sum, 1e-9, "from the trigger to the pickup")
	g.clock.Advance(time.Second)
	g.turns.release(h1)
	step2, h2 := g.task()
	g.turns.ensure(step2, now.Add(-3*time.Second)) // same trigger: same turn
	g.clock.Advance(time.Second)
	g.turns.finish(step2, OutcomeCompleted)
	require.Empty(t, g.outcomes(), "emitted once the finishing task returns")
	g.turns.release(h2)
	require.Equal(t, map[string]float64{OutcomeCompleted: 1}, g.outcomes())
	n, sum = g.sample(StageChatTurn)
	require.Equal(t, uint64(1), n, "two steps, one turn")
	require.InDelta(t, 5.0, sum, 1e-9, "3 s waiting + 2 s of steps")

	// A late outcome: a newer prompt's task opens its turn while the task
	// that finished the old one still holds it; the old turn still counts
	// as completed, the new one is separate.
	now = g.clock.Now()
	old, hOld := g.task()
	g.turns.ensure(old, now)
	g.clock.Advance(time.Second)
	next, hNext := g.task()
	g.turns.ensure(next, g.clock.Now())
	g.turns.finish(old, OutcomeCompleted)
	g.turns.release(hOld)
	require.Equal(t, map[string]float64{OutcomeCompleted: 2}, g.outcomes())

	// An edit: the newer prompt closes the running turn, which nobody
	// finished: abandoned.
	g.clock.Advance(time.Second)
	g.turns.release(hNext)
	edit, hEdit := g.task()
	g.turns.ensure(edit, g.clock.Now())
	require.Equal(t, map[string]float64{OutcomeCompleted: 2, OutcomeAbandoned: 1}, g.outcomes())

	// Interrupted: the interrupt task joins and records it first.
	stop, hStop := g.task()
	g.turns.join(stop)
	g.turns.finish(stop, OutcomeInterrupted)
	g.turns.finish(edit, OutcomeError) // later outcomes do not change it
	g.turns.release(hStop)
	g.turns.release(hEdit)
	require.Equal(t, map[string]float64{OutcomeCompleted: 2, OutcomeAbandoned: 1, OutcomeInterrupted: 1}, g.outcomes())

	// A stale trigger (not after the last anchor) opens at now without an
	// acquisition; runner exit abandons the open turn.
	acq, _ := g.sample(StageAcquisition)
	require.Zero(t, g.staleAnchors(), "no turn so far had a stale trigger")
	stale, hStale := g.task()
	g.turns.ensure(stale, now.Add(-time.Hour))
	after, _ := g.sample(StageAcquisition)
	require.Equal(t, acq, after)
	require.Equal(t, 1.0, g.staleAnchors(), "the stale trigger is counted")
	g.turns.release(hStale) // the runner's tasks have returned before it exits
	require.Equal(t, float64(1), g.outcomes()[OutcomeAbandoned], "an open turn is not emitted by a release")
	g.turns.exit()
	require.Equal(t, float64(2), g.outcomes()[OutcomeAbandoned])
	n, _ = g.sample(StageChatTurn)
	require.Equal(t, uint64(2), n, "chat_turn only for the two completed turns")

	// A canceled task joins nothing.
	ctx, cancel := context.WithCancel(context.Background())
	h := &turnHold{}
	cancel()
	g.turns.ensure(withTurnHold(ctx, h), g.clock.Now())
	require.Nil(t, h.t)
}

// TestTurnTakeoverSkipsAcquisition: a runner that took its chat over from
// a dead owner does not report the previous owner's time as pickup delay.
func TestTurnTakeoverSkipsAcquisition(t *testing.T) {
	g := newTurnRig(t)
	g.turns.takenOver = true
	ctx, h := g.task()
	g.turns.ensure(ctx, g.clock.Now().Add(-time.Minute))
	n, _ := g.sample(StageAcquisition)
	require.Zero(t, n)
	g.turns.finish(ctx, OutcomeCompleted)
	g.turns.release(h)
	_, sum := g.sample(StageChatTurn)
	require.Zero(t, sum, "the turn opens at the takeover, not at the trigger")
}

// TestStaleAnchorThroughTheWorker: a prompt promoted from the queue at the
// same instant as the turn before it (here the rig's clock stands still;
// in production, a replica whose clock is behind) is not after the
// runner's last anchor: its turn opens at now, records no acquisition,
// and counts one stale_anchor anomaly.
func TestStaleAnchorThroughTheWorker(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		reg := prometheus.NewRegistry()
		g := setupWith(t, newStore(t), Config{}, func(d *Deps) { d.Metrics = NewMetrics(reg) })
		anomalies := func() float64 {
			fams, err := reg.Gather()
			require.NoError(t, err)
			for _, f := range fams {
				if f.GetName() == "chatd_stage_anomalies_total" {
					return f.GetMetric()[0].GetCounter().GetValue()
				}
			}
			return -1
		}
		id := g.create("first")
		require.Equal(t, 1, g.w.AcquirePass(g.ctx))
		g.provider.next(t)
		g.do(func(t *chatstate.Tx) error {
			_, err := t.SendMessage(id, chatstate.UserInput{Content: sdk.Text("second")}, chatstate.BusyQueue)
			return err
		})
		require.Zero(t, anomalies())
		g.provider.answer("one")
		second := g.provider.next(t)
		require.Equal(t, "second", lastUserText(second.req), "the queued prompt's turn runs")
		require.Equal(t, 1.0, anomalies(), "its trigger is not after the first turn's")
		g.provider.answer("two")
		eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting }, "the turn finishes")
		require.Equal(t, 1.0, anomalies())
	})
}
