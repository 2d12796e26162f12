package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// Stage names (spec: "Lifecycle tracing", "Stages").
const (
	StageChatTurn         = "chat_turn"
	StageAcquisition      = "acquisition"
	StageMCPConnect       = "mcp_connect"
	StageStream           = "stream"
	StageTimeToFirstToken = "time_to_first_token"
	StageProviderAttempt  = "provider_attempt"
	StageToolCall         = "tool_call"
	StageCommit           = "commit"
	StageRetryBackoff     = "retry_backoff"
	StageQueueWait        = "queue_wait"
	// Span-only stages.
	StageGenerationStep = "generation_step"
	StagePrepare        = "prepare"
	StageThinking       = "thinking"
	StageCompaction     = "compaction"
)

// Turn outcomes (chatd_turn_outcomes_total{outcome}). A turn that stops in
// requires_action is completed: the chat waits outside any turn, and the
// results open a new one.
const (
	OutcomeCompleted   = "completed"
	OutcomeInterrupted = "interrupted"
	OutcomeError       = "error"
	OutcomeAbandoned   = "abandoned"
)

// AnomalyStaleAnchor is the reason (chatd_stage_anomalies_total{reason})
// of a turn whose trigger was at or before the anchor of the previous
// turn on the same runner (spec: "Stale trigger").
const AnomalyStaleAnchor = "stale_anchor"

// Scopes and chat kinds (metric labels).
const (
	ScopeTurn       = "turn"
	ScopeBackground = "background"
	KindRoot        = "root"
	KindSubagent    = "subagent"
)

// StageBuckets are the stage histograms' buckets in seconds: 1 ms steps at
// the bottom for commits and provider round trips, up to 30 minutes for
// long agent turns.
var StageBuckets = []float64{
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
	1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 1800,
}

// Metrics are the worker's Prometheus instruments. A nil *Metrics records
// nothing, so a worker built without a registry works unchanged.
type Metrics struct {
	stage     *prometheus.HistogramVec
	model     *prometheus.HistogramVec
	outcomes  *prometheus.CounterVec
	toolCalls *prometheus.CounterVec
	retries   *prometheus.CounterVec
	errors    *prometheus.CounterVec
	ttft      *prometheus.HistogramVec
	anomalies *prometheus.CounterVec
	waiting   prometheus.Gauge
	running   *prometheus.GaugeVec
}

// NewMetrics registers the worker's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		stage: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "chatd_stage_duration_seconds",
			Help:    "Duration of each stage of a chat turn (spec: Lifecycle tracing).",
			Buckets: StageBuckets,
		}, []string{"stage", "scope", "chat_kind"}),
		model: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "chatd_model_stage_duration_seconds",
			Help:    "Duration of the turn stages that are a model provider's work, by provider type and model.",
			Buckets: StageBuckets,
		}, []string{"stage", "provider_type", "model", "chat_kind"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_turn_outcomes_total",
			Help: "Closed turns by outcome: completed, interrupted, error, abandoned.",
		}, []string{"outcome", "chat_kind"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_tool_calls_total",
			Help: "Server-side tool calls that ran, by tool, effect class and outcome (ok, error).",
		}, []string{"tool", "effect", "outcome"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_generation_retries_total",
			Help: "Failed model calls that are retried, by error kind.",
		}, []string{"kind"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_generation_errors_total",
			Help: "Model calls that finished a chat in error, by error kind.",
		}, []string{"kind"}),
		ttft: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "chatd_ttft_seconds",
			Help:    "Time to first token by model: the time_to_first_token stage's duration, from opening a provider stream to its first output part.",
			Buckets: StageBuckets,
		}, []string{"provider_type", "model", "chat_kind"}),
		anomalies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_stage_anomalies_total",
			Help: "Stage timings chatd could not record as measured, by reason: stale_anchor, a turn whose trigger was not after the previous turn's on the same runner (it opens at now, with no acquisition stage).",
		}, []string{"reason"}),
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "chatd_queue_depth",
			Help: "Runnable chats no worker holds, as this replica's last acquisition pass left them: the chats waiting for a slot of the concurrent agent limit (or for a dead replica's lease to expire).",
		}),
		running: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "chatd_running_chats",
			Help: "Chats holding a slot of the concurrent agent limit, by pool (root, subagent), as this replica's last acquisition pass counted them.",
		}, []string{"pool"}),
	}
	// Both pools exist from the start, so a dashboard shows 0, not nothing.
	m.running.WithLabelValues(KindRoot)
	m.running.WithLabelValues(KindSubagent)
	m.anomalies.WithLabelValues(AnomalyStaleAnchor)
	reg.MustRegister(m.stage, m.model, m.outcomes, m.toolCalls, m.retries, m.errors, m.ttft, m.anomalies, m.waiting, m.running)
	return m
}

// pass records what an acquisition pass left: the chats still waiting and
// the slots held per pool.
func (m *Metrics) pass(waiting int, roots, subagents int64) {
	if m != nil {
		m.waiting.Set(float64(waiting))
		m.running.WithLabelValues(KindRoot).Set(float64(roots))
		m.running.WithLabelValues(KindSubagent).Set(float64(subagents))
	}
}

func (m *Metrics) observe(stage, scope, kind string, d time.Duration) {
	if m != nil {
		m.stage.WithLabelValues(stage, scope, kind).Observe(d.Seconds())
	}
}

func (m *Metrics) observeModel(stage string, id modelIdentity, kind string, d time.Duration) {
	if m != nil {
		m.model.WithLabelValues(stage, id.providerType, id.model, kind).Observe(d.Seconds())
	}
}

func (m *Metrics) observeTTFT(id modelIdentity, kind string, d time.Duration) {
	if m != nil {
		m.ttft.WithLabelValues(id.providerType, id.model, kind).Observe(d.Seconds())
	}
}

func (m *Metrics) anomaly(reason string) {
	if m != nil {
		m.anomalies.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) outcome(outcome, kind string) {
	if m != nil {
		m.outcomes.WithLabelValues(outcome, kind).Inc()
	}
}

func (m *Metrics) toolCall(tool, effect, outcome string) {
	if m != nil {
		m.toolCalls.WithLabelValues(tool, effect, outcome).Inc()
	}
}

func (m *Metrics) retry(kind sdk.ChatErrorKind) {
	if m != nil {
		m.retries.WithLabelValues(string(kind)).Inc()
	}
}

func (m *Metrics) failed(kind sdk.ChatErrorKind) {
	if m != nil {
		m.errors.WithLabelValues(string(kind)).Inc()
	}
}

// modelIdentity is the model a stage runs on: its provider type (the
// configured provider, e.g. openai), model name and the reasoning effort
// asked for. provider, the wire protocol, is the provider type here: each
// configured provider speaks its own protocol.
type modelIdentity struct{ providerType, model, effort string }

func identityOf(m Model, effort string) modelIdentity {
	return modelIdentity{providerType: m.Provider.Name(), model: m.Name, effort: effort}
}

func actionAttr(action string) attribute.KeyValue {
	return attribute.String("generation_action", action)
}

// stepFailure is the error a step's span ends with: none for the expected
// exits (fenced out, deleted, cancelled).
func stepFailure(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil || errors.Is(err, errStale) || errors.Is(err, errDeleted) {
		return nil
	}
	return err
}

func (id modelIdentity) attrs() []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("provider", id.providerType), attribute.String("provider_type", id.providerType),
		attribute.String("model", id.model), attribute.String("reasoning_effort", id.effort),
	}
}

// histogramStages are the stages observed on chatd_stage_duration_seconds;
// the others (generation_step, prepare, thinking, compaction) are
// span-only. modelStages are also observed on the model family.
var (
	histogramStages = map[string]bool{
		StageChatTurn: true, StageQueueWait: true, StageAcquisition: true, StageMCPConnect: true,
		StageStream: true, StageTimeToFirstToken: true, StageProviderAttempt: true,
		StageToolCall: true, StageCommit: true, StageRetryBackoff: true,
	}
	modelStages = map[string]bool{StageStream: true, StageTimeToFirstToken: true, StageProviderAttempt: true}
)

// recorder emits stages (spec: "Lifecycle tracing"): each stage is one
// span and, for the histogram stages, one observation, both from the same
// end call and the same two clock readings, so a trace and the metrics
// never disagree about a duration. A noop tracer (tracing off) leaves the
// metrics as they are; nil metrics leave the spans.
type recorder struct {
	m      *Metrics
	tracer trace.Tracer
	clock  clock.Clock
}

// TracerName names the worker's tracer (the instrumentation scope).
const TracerName = "github.com/chatd/chatd/app/worker"

func newRecorder(m *Metrics, tp trace.TracerProvider, clk clock.Clock) recorder {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return recorder{m: m, tracer: tp.Tracer(TracerName), clock: clk}
}

// stageSpan is one started stage.
type stageSpan struct {
	rec   recorder
	name  string
	scope string
	kind  string
	model *modelIdentity // set: a model's work (observed on the model family when turn-scoped)
	start time.Time
	span  trace.Span
}

// start opens stage name at at (now when zero) under ctx's span; the
// returned context parents the stage's children.
func (rec recorder) start(ctx context.Context, name, scope, kind string, at time.Time, attrs ...attribute.KeyValue) (context.Context, *stageSpan) {
	if at.IsZero() {
		at = rec.clock.Now()
	}
	attrs = append(attrs, attribute.String("scope", scope), attribute.String("chat_kind", kind))
	ctx, span := rec.tracer.Start(ctx, name, trace.WithTimestamp(at), trace.WithAttributes(attrs...))
	return ctx, &stageSpan{rec: rec, name: name, scope: scope, kind: kind, start: at, span: span}
}

// onModel stamps the stage with the model it runs on.
func (s *stageSpan) onModel(id modelIdentity) {
	s.model = &id
	s.span.SetAttributes(id.attrs()...)
}

// set adds span attributes (never message content).
func (s *stageSpan) set(attrs ...attribute.KeyValue) { s.span.SetAttributes(attrs...) }

// end closes the stage now: the span (errored when err is set) and, for a
// histogram stage, its observation.
func (s *stageSpan) end(err error) { s.finish(s.rec.clock.Now(), err, histogramStages[s.name]) }

// finish closes the stage at at; observe says whether the duration goes
// to the histograms too (a failed time_to_first_token, a chat_turn that
// did not complete: span only).
func (s *stageSpan) finish(at time.Time, err error, observe bool) {
	if err != nil {
		s.span.SetStatus(codes.Error, err.Error())
	}
	s.span.End(trace.WithTimestamp(at))
	if !observe {
		return
	}
	d := at.Sub(s.start)
	s.rec.m.observe(s.name, s.scope, s.kind, d)
	if s.model != nil && s.scope == ScopeTurn && modelStages[s.name] {
		s.rec.m.observeModel(s.name, *s.model, s.kind, d)
	}
	if s.model != nil && s.name == StageTimeToFirstToken {
		// The same elapsed time, on the per-model family.
		s.rec.m.observeTTFT(*s.model, s.kind, d)
	}
}

// stageIdentity is what a provider request's context carries so the
// transport can attribute its round trips (ProviderTransport).
type stageIdentity struct {
	rec   recorder
	scope string
	kind  string
	model *modelIdentity // nil: background work, no model labels
	chat  attribute.KeyValue
}

type stageKey struct{}

func withStageIdentity(ctx context.Context, id stageIdentity) context.Context {
	return context.WithValue(ctx, stageKey{}, id)
}

// propagator puts the trace context on outgoing provider requests.
var propagator = propagation.TraceContext{}

// ProviderTransport wraps base (http.DefaultTransport when nil) so that each
// round trip made for a chat's model call is one provider_attempt stage,
// from sending the request to its response headers (errored for a
// transport error or HTTP status 400 and above): a request the provider's
// client retries gives one stage per attempt. The request carries the
// trace context (W3C traceparent) when tracing is on. Requests made
// without a worker stage identity pass through unobserved.
func ProviderTransport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return attemptTransport{base}
}

type attemptTransport struct{ base http.RoundTripper }

func (t attemptTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	id, ok := req.Context().Value(stageKey{}).(stageIdentity)
	if !ok {
		return t.base.RoundTrip(inject(req.Context(), req))
	}
	ctx, st := id.rec.start(req.Context(), StageProviderAttempt, id.scope, id.kind, time.Time{}, id.chat)
	if id.model != nil {
		st.onModel(*id.model)
	}
	resp, err := t.base.RoundTrip(inject(ctx, req))
	failure := err
	if err == nil && resp.StatusCode >= 400 {
		failure = fmt.Errorf("HTTP %d", resp.StatusCode)
		st.set(attribute.Int("http.response.status_code", resp.StatusCode))
	}
	st.end(failure)
	return resp, err
}

// inject returns req carrying ctx's trace context, a copy when there is
// one to carry (a RoundTripper must not change its request).
func inject(ctx context.Context, req *http.Request) *http.Request {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return req
	}
	req = req.Clone(ctx)
	propagator.Inject(ctx, propagation.HeaderCarrier(req.Header))
	return req
}

// stage starts a turn-scoped stage of this runner's chat under ctx's span.
func (r *runner) stage(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, *stageSpan) {
	return r.stageAt(ctx, name, time.Time{}, attrs...)
}

// stageAt is stage opened at a time already past (zero: now).
func (r *runner) stageAt(ctx context.Context, name string, at time.Time, attrs ...attribute.KeyValue) (context.Context, *stageSpan) {
	return r.w.rec.start(ctx, name, ScopeTurn, r.kind, at, append(attrs, r.chatAttr())...)
}

func (r *runner) chatAttr() attribute.KeyValue { return attribute.String("chat_id", r.chatID.String()) }

// firstTokenWindow is one attempt's time_to_first_token stage, nested in
// its stream: the first output part closes and observes it (warnings and
// finish markers do not); an attempt that ends before one ends the span
// only, with the attempt's error if it failed.
type firstTokenWindow struct {
	st   *stageSpan
	once sync.Once
}

func (r *runner) firstToken(ctx context.Context, id modelIdentity) *firstTokenWindow {
	_, st := r.stage(ctx, StageTimeToFirstToken)
	st.onModel(id)
	return &firstTokenWindow{st: st}
}

// part is called on every streamed part.
func (w *firstTokenWindow) part(p sdk.ChatMessagePart) {
	switch p.Type {
	case sdk.PartText, sdk.PartReasoning, sdk.PartToolCall, sdk.PartSource, sdk.PartFile:
	default:
		return
	}
	w.once.Do(func() { w.st.end(nil) })
}

// done closes a window no output part closed: span only.
func (w *firstTokenWindow) done(err error) {
	w.once.Do(func() { w.st.finish(w.st.rec.clock.Now(), err, false) })
}

// identity is what a model call on this runner's turn puts on its context.
func (r *runner) identity(id modelIdentity) stageIdentity {
	return stageIdentity{rec: r.w.rec, scope: ScopeTurn, kind: r.kind, model: &id, chat: r.chatAttr()}
}

// thinkingWindows records a thinking stage per reasoning block of a
// model call: from its first reasoning part to the first part that is not
// reasoning (or the stream's end). Span only.
type thinkingWindows struct {
	r    *runner
	ctx  context.Context
	id   modelIdentity
	mu   sync.Mutex
	open *stageSpan
}

func (r *runner) thinking(ctx context.Context, id modelIdentity) *thinkingWindows {
	return &thinkingWindows{r: r, ctx: ctx, id: id}
}

// part is called on every streamed part.
func (w *thinkingWindows) part(p sdk.ChatMessagePart) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case p.Type == sdk.PartReasoning && w.open == nil:
		_, w.open = w.r.stage(w.ctx, StageThinking)
		w.open.onModel(w.id)
	case p.Type != sdk.PartReasoning && w.open != nil:
		w.open.end(nil)
		w.open = nil
	}
}

// done closes a block still open when the stream ends.
func (w *thinkingWindows) done() {
	w.part(sdk.ChatMessagePart{})
}

// recordQueueWait records the promoted message's queue_wait: a standalone,
// turn-scoped stage (its own trace root) from its queueing to now.
func (r *runner) recordQueueWait(ctx context.Context, queuedAt *time.Time) {
	if queuedAt == nil {
		return
	}
	ctx = trace.ContextWithSpanContext(ctx, trace.SpanContext{})
	_, st := r.stageAt(ctx, StageQueueWait, *queuedAt)
	st.end(nil)
}

// chatFailure is the error an errored chat reports (its last_error).
func chatFailure(c store.Chat) error {
	var e sdk.ChatError
	if err := json.Unmarshal(c.LastError, &e); err != nil || e.Message == "" {
		return errors.New("the chat ended in error")
	}
	return fmt.Errorf("%s: %s", e.Kind, e.Message)
}

func chatKind(c store.Chat) string {
	if c.ParentChatID.Valid {
		return KindSubagent
	}
	return KindRoot
}

// --- turns ---

// turn is one prompt's chat_turn: from its trigger (backdated) to the
// transition that finished it.
type turn struct {
	trigger time.Time // zero: none known
	start   time.Time
	end     time.Time
	outcome string // the first outcome recorded; empty: abandoned
	failure error  // what stopped an error turn
	st      *stageSpan
	ctx     context.Context // parents the turn's stages to its span
	closed  bool
	holders int // tasks that joined it and have not returned
	emitted bool
}

// turnHold is one task's hold on the turn it joined (the spec's turn
// token); it rides on the task's context.
type turnHold struct{ t *turn }

type holdKey struct{}

func withTurnHold(ctx context.Context, h *turnHold) context.Context {
	return context.WithValue(ctx, holdKey{}, h)
}

func holdOf(ctx context.Context) *turnHold {
	h, _ := ctx.Value(holdKey{}).(*turnHold)
	return h
}

// turns tracks a runner's turns (spec: "Turn span lifecycle", without the
// spans): tasks of a generation join the current turn, the transitions
// that end a turn record its outcome, and a closed turn is emitted once
// every task that joined it has returned.
type turns struct {
	r  *runner
	mu sync.Mutex
	// cur is the open turn; anchor the trigger of the last turn opened, so
	// a stale trigger cannot reopen an old prompt's acquisition.
	cur       *turn
	anchor    time.Time
	takenOver bool // the first turn records no acquisition
}

// ensure joins the task to the current turn, opening one for trigger when
// there is none, and closing the current one when trigger is a newer
// prompt. A turn opened for a trigger records acquisition: the time from
// the trigger to a worker picking the chat up. The returned context
// parents the task's stages to the turn's chat_turn span.
func (ts *turns) ensure(ctx context.Context, trigger time.Time) context.Context {
	h := holdOf(ctx)
	if h == nil || ctx.Err() != nil {
		return ctx
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	now := ts.r.w.clock.Now()
	if c := ts.cur; c != nil {
		if c.closed || !trigger.IsZero() && trigger.After(ts.anchor) {
			ts.closeLocked(c, now)
		} else {
			ts.holdLocked(h, c)
			return trace.ContextWithSpan(ctx, c.st.span)
		}
	}
	t := &turn{start: now}
	acquired := false
	if !trigger.IsZero() && !trigger.After(ts.anchor) {
		// A stale trigger: the turn opens at now, without acquisition.
		ts.r.w.deps.Metrics.anomaly(AnomalyStaleAnchor)
	}
	if !trigger.IsZero() && trigger.After(ts.anchor) {
		t.trigger = trigger
		ts.anchor = trigger
		if !ts.takenOver && trigger.Before(now) {
			t.start = trigger
			acquired = true
		}
	}
	// chat_turn is a trace root: the request that triggered it ran
	// elsewhere, and no trace context is stored with the message.
	root := trace.ContextWithSpanContext(ctx, trace.SpanContext{})
	t.ctx, t.st = ts.r.w.rec.start(root, StageChatTurn, ScopeTurn, ts.r.kind, t.start, ts.r.chatAttr())
	if acquired {
		_, acq := ts.r.w.rec.start(t.ctx, StageAcquisition, ScopeTurn, ts.r.kind, trigger, ts.r.chatAttr())
		acq.finish(now, nil, true)
	}
	ts.takenOver = false
	ts.cur = t
	ts.holdLocked(h, t)
	return trace.ContextWithSpan(ctx, t.st.span)
}

// join makes the task hold the current turn, if any (the interrupt task).
func (ts *turns) join(ctx context.Context) {
	h := holdOf(ctx)
	if h == nil || ctx.Err() != nil {
		return
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.cur != nil {
		ts.holdLocked(h, ts.cur)
	}
}

func (ts *turns) holdLocked(h *turnHold, t *turn) {
	if h.t == t {
		return
	}
	if h.t != nil {
		ts.releaseLocked(h)
	}
	h.t = t
	t.holders++
}

// finish records the outcome of the task's turn (the first one counts)
// and closes it. It follows a committed transition.
func (ts *turns) finish(ctx context.Context, outcome string) { ts.finishErr(ctx, outcome, nil) }

// fail is finish for an error turn, with the failure that stopped it.
func (ts *turns) fail(ctx context.Context, failure error) {
	ts.finishErr(ctx, OutcomeError, failure)
}

func (ts *turns) finishErr(ctx context.Context, outcome string, failure error) {
	h := holdOf(ctx)
	if h == nil {
		return
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := h.t
	if t == nil || t.emitted {
		return
	}
	if t.outcome == "" {
		t.outcome, t.failure = outcome, failure
	}
	// The turn ends when it is emitted, after the finishing task's stages
	// (its generation_step) have ended, so they count inside it.
	ts.closeLocked(t, time.Time{})
}

// release drops the task's hold; a closed turn nobody holds is emitted.
func (ts *turns) release(h *turnHold) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.releaseLocked(h)
}

func (ts *turns) releaseLocked(h *turnHold) {
	t := h.t
	if t == nil {
		return
	}
	h.t = nil
	t.holders--
	if t.closed && t.holders == 0 {
		ts.emitLocked(t)
	}
}

func (ts *turns) closeLocked(t *turn, now time.Time) {
	if !t.closed {
		t.closed, t.end = true, now
	}
	if ts.cur == t {
		ts.cur = nil
	}
	if t.holders == 0 {
		ts.emitLocked(t)
	}
}

// exit closes the open turn when the runner stops (its tasks have
// returned): abandoned unless an outcome was recorded.
func (ts *turns) exit() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.cur != nil {
		ts.closeLocked(ts.cur, ts.r.w.clock.Now())
	}
}

// emitLocked counts the turn's outcome once and ends its span at the
// turn's end with exactly one turn_outcome; only an error turn's span ends
// in error. chat_turn is observed for a completed turn only (the histogram
// measures how long a reply takes).
func (ts *turns) emitLocked(t *turn) {
	if t.emitted {
		return
	}
	t.emitted = true
	if t.end.IsZero() {
		t.end = ts.r.w.clock.Now()
	}
	outcome := t.outcome
	if outcome == "" {
		outcome = OutcomeAbandoned
	}
	t.st.set(attribute.String("turn_outcome", outcome))
	var failure error
	if outcome == OutcomeError {
		failure = t.failure
		if failure == nil {
			failure = errors.New("the turn ended in error")
		}
	}
	t.st.finish(t.end, failure, outcome == OutcomeCompleted)
	// Counted last: once the count shows, the span has ended.
	ts.r.w.deps.Metrics.outcome(outcome, ts.r.kind)
}

// trigger is the time the turn this view belongs to was asked for: the
// latest of the last user prompt, a client's tool result after it, and a
// compaction request. Zero when there is none (history after a compaction
// replays the prompt as a model-only row: the turn goes on).
func (v view) trigger() time.Time {
	var t time.Time
	for i := len(v.active) - 1; i >= 0; i-- {
		m := v.active[i]
		prompt := m.Role == store.RoleUser && m.Visibility != store.VisibilityModel
		clientResult := m.Role == store.RoleTool && m.CreatedBy.Valid
		if prompt || clientResult {
			t = m.CreatedAt
			break
		}
	}
	if c := v.chat.CompactionRequestedAt; c != nil && c.After(t) {
		t = *c
	}
	return t
}
