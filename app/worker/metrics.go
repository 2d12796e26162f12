package worker

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// Stage names (spec: "Lifecycle tracing", "Stages"). Only the stages the
// spec observes on the histograms are listed; the span-only ones
// (generation_step, prepare, thinking, compaction) wait for tracing.
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
	}
	reg.MustRegister(m.stage, m.model, m.outcomes, m.toolCalls, m.retries, m.errors)
	return m
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
// configured provider, e.g. openai) and model name.
type modelIdentity struct{ providerType, model string }

// stageIdentity is what a provider request's context carries so the
// transport can attribute its round trips (ProviderTransport).
type stageIdentity struct {
	m     *Metrics
	clock clock.Clock
	scope string
	kind  string
	model modelIdentity
}

type stageKey struct{}

func withStageIdentity(ctx context.Context, id stageIdentity) context.Context {
	return context.WithValue(ctx, stageKey{}, id)
}

// ProviderTransport wraps base (http.DefaultTransport when nil) so that each
// round trip made for a chat's model call is observed as one
// provider_attempt, from sending the request to its response headers: a
// request the provider's client retries gives one stage per attempt.
// Requests made without a worker stage identity pass through unobserved.
func ProviderTransport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return attemptTransport{base}
}

type attemptTransport struct{ base http.RoundTripper }

func (t attemptTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	id, ok := req.Context().Value(stageKey{}).(stageIdentity)
	if !ok || id.m == nil {
		return t.base.RoundTrip(req)
	}
	start := id.clock.Now()
	resp, err := t.base.RoundTrip(req)
	d := id.clock.Now().Sub(start)
	id.m.observe(StageProviderAttempt, id.scope, id.kind, d)
	if id.scope == ScopeTurn {
		id.m.observeModel(StageProviderAttempt, id.model, id.kind, d)
	}
	return resp, err
}

// stage starts a turn-scoped stage of this runner's chat; calling the
// returned func ends and observes it.
func (r *runner) stage(name string) func() {
	start := r.w.clock.Now()
	return func() { r.w.deps.Metrics.observe(name, ScopeTurn, r.kind, r.w.clock.Now().Sub(start)) }
}

// modelStage is stage for a stage that is the model's work: it is also
// observed on the model family.
func (r *runner) modelStage(name string, id modelIdentity) func() {
	start := r.w.clock.Now()
	return func() {
		d := r.w.clock.Now().Sub(start)
		r.w.deps.Metrics.observe(name, ScopeTurn, r.kind, d)
		r.w.deps.Metrics.observeModel(name, id, r.kind, d)
	}
}

// firstToken returns a func to call on every streamed part: the first
// output part closes the time_to_first_token window opened now (warnings
// and finish markers do not). A stream that fails before any output part
// observes nothing.
func (r *runner) firstToken(id modelIdentity) func(sdk.ChatMessagePart) {
	start := r.w.clock.Now()
	var once sync.Once
	return func(p sdk.ChatMessagePart) {
		switch p.Type {
		case sdk.PartText, sdk.PartReasoning, sdk.PartToolCall, sdk.PartSource, sdk.PartFile:
		default:
			return
		}
		once.Do(func() {
			d := r.w.clock.Now().Sub(start)
			r.w.deps.Metrics.observe(StageTimeToFirstToken, ScopeTurn, r.kind, d)
			r.w.deps.Metrics.observeModel(StageTimeToFirstToken, id, r.kind, d)
		})
	}
}

// identity is what a model call on this runner's turn puts on its context.
func (r *runner) identity(id modelIdentity) stageIdentity {
	return stageIdentity{m: r.w.deps.Metrics, clock: r.w.clock, scope: ScopeTurn, kind: r.kind, model: id}
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
// the trigger to a worker picking the chat up.
func (ts *turns) ensure(ctx context.Context, trigger time.Time) {
	h := holdOf(ctx)
	if h == nil || ctx.Err() != nil {
		return
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	now := ts.r.w.clock.Now()
	if c := ts.cur; c != nil {
		if c.closed || !trigger.IsZero() && trigger.After(ts.anchor) {
			ts.closeLocked(c, now)
		} else {
			ts.holdLocked(h, c)
			return
		}
	}
	t := &turn{start: now}
	if !trigger.IsZero() && trigger.After(ts.anchor) {
		t.trigger = trigger
		ts.anchor = trigger
		if !ts.takenOver && trigger.Before(now) {
			t.start = trigger
			ts.r.w.deps.Metrics.observe(StageAcquisition, ScopeTurn, ts.r.kind, now.Sub(trigger))
		}
	}
	ts.takenOver = false
	ts.cur = t
	ts.holdLocked(h, t)
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
func (ts *turns) finish(ctx context.Context, outcome string) {
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
		t.outcome = outcome
	}
	ts.closeLocked(t, ts.r.w.clock.Now())
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

// emitLocked counts the turn's outcome once, and observes chat_turn for a
// completed turn only (the histogram measures how long a reply takes).
func (ts *turns) emitLocked(t *turn) {
	if t.emitted {
		return
	}
	t.emitted = true
	outcome := t.outcome
	if outcome == "" {
		outcome = OutcomeAbandoned
	}
	m := ts.r.w.deps.Metrics
	m.outcome(outcome, ts.r.kind)
	if outcome == OutcomeCompleted {
		m.observe(StageChatTurn, ScopeTurn, ts.r.kind, t.end.Sub(t.start))
	}
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
