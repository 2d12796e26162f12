// Package worker runs chats (spec: "Chat worker"): an acquisition loop takes
// runnable chats that no live worker owns, a runner manager keeps one runner
// per acquired chat plus database-sync and heartbeat loops, and each runner
// turns state changes into generation, interrupt, action-timeout and
// abandon goroutines that commit through the state machine.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/hooks"
	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/partbuf"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/store"
)

// Defaults for Config's zero values (spec values where it gives them).
const (
	DefaultAcquireInterval         = 30 * time.Second
	DefaultSyncInterval            = 5 * time.Second
	DefaultHeartbeatInterval       = 9 * time.Second
	DefaultLeaseTimeout            = 30 * time.Second
	DefaultMaxRetries              = 25
	DefaultMaxSteps                = 1200
	DefaultRootLimit               = 5
	DefaultSubagentLimit           = 10
	DefaultBackoffBase             = time.Second
	DefaultBackoffMax              = 30 * time.Second
	DefaultCompactThresholdPercent = 80
	DefaultTitleConcurrency        = 2
	// DefaultMCPToolsWait bounds how long a generation step waits for MCP
	// servers that are still connecting before it goes on without them:
	// the MCP client's own connect timeout (mcp.DefaultConnectTimeout), so
	// a server that starts at all is waited for on the first turn.
	DefaultMCPToolsWait = 20 * time.Second
	DefaultAcquirePage  = 100
)

// Config tunes the worker. Zero values take the Defaults.
type Config struct {
	// TraceContent puts message contents on the GenAI spans
	// (gen_ai.input.messages, gen_ai.output.messages); off by default.
	TraceContent      bool
	AcquireInterval   time.Duration
	SyncInterval      time.Duration
	HeartbeatInterval time.Duration
	// LeaseTimeout is when a lease is stale (3 missed heartbeats).
	LeaseTimeout time.Duration
	// Leases selects heartbeat rows in the database (several replicas on
	// Postgres). Without it heartbeats live in memory: one process owns the
	// SQLite file, so any other worker id is a dead process.
	Leases bool
	// MaxRetries: a retryable failure after this many attempts finishes
	// the chat in error (so MaxRetries+1 attempts in all).
	MaxRetries int
	// MaxSteps caps assistant steps per turn.
	MaxSteps int
	// RootLimit and SubagentLimit cap concurrently owned chats.
	RootLimit     int
	SubagentLimit int
	BackoffBase   time.Duration
	BackoffMax    time.Duration
	// CompactThresholdPercent of a model's context limit triggers automatic
	// compaction; 100 disables it.
	CompactThresholdPercent int
	TitleConcurrency        int
	// MCPToolsWait bounds the wait for MCP servers still connecting at the
	// start of a step; their tools are left out of that step.
	MCPToolsWait time.Duration
	// ToolApproval is the approval policy of chatd's built-in server-side
	// tools (never when empty): by effect class, as an MCP server's
	// "approval" in the MCP config.
	ToolApproval string
	// AutoArchiveDays turns on the auto-archive loop: root chat families
	// unused since 00:00 UTC this many days ago are archived. 0 is off.
	AutoArchiveDays int
	// AutoArchiveInterval is the time between auto-archive ticks.
	AutoArchiveInterval time.Duration
	// Subagents offers the agent tools (spawn_agent, ...; app/tools/agents).
	// Off by default like every server-side tool: some OpenAI-compatible
	// models refuse any request that offers tools.
	Subagents bool
	// MaxAgentDepth is how deep a family of subagents may grow: a chat is
	// offered the agent tools while its children would be at most this
	// deep (a root's children are at depth 1, so 1 lets root chats spawn
	// and children not).
	MaxAgentDepth int
	// FileRetentionInterval is the time between passes of the file
	// retention loop (DefaultFileRetentionInterval).
	FileRetentionInterval time.Duration
	// AcquirePage is how many candidates an acquisition pass reads
	// (DefaultAcquirePage); a pass that takes some of a whole page runs
	// again at once.
	AcquirePage int
}

func (c Config) withDefaults() Config {
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	defInt := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.AcquireInterval, DefaultAcquireInterval)
	def(&c.SyncInterval, DefaultSyncInterval)
	def(&c.HeartbeatInterval, DefaultHeartbeatInterval)
	def(&c.LeaseTimeout, DefaultLeaseTimeout)
	def(&c.BackoffBase, DefaultBackoffBase)
	def(&c.BackoffMax, DefaultBackoffMax)
	def(&c.MCPToolsWait, DefaultMCPToolsWait)
	def(&c.AutoArchiveInterval, DefaultAutoArchiveInterval)
	def(&c.FileRetentionInterval, DefaultFileRetentionInterval)
	defInt(&c.MaxRetries, DefaultMaxRetries)
	defInt(&c.MaxSteps, DefaultMaxSteps)
	defInt(&c.RootLimit, DefaultRootLimit)
	defInt(&c.SubagentLimit, DefaultSubagentLimit)
	defInt(&c.CompactThresholdPercent, DefaultCompactThresholdPercent)
	defInt(&c.TitleConcurrency, DefaultTitleConcurrency)
	defInt(&c.MaxAgentDepth, DefaultMaxAgentDepth)
	defInt(&c.AcquirePage, DefaultAcquirePage)
	return c
}

// Model is a resolved model: the provider to call and what the worker
// needs to know about it.
type Model struct {
	ID           uuid.UUID
	Provider     llm.Provider
	Name         string // the provider's model name
	ContextLimit int64  // tokens; 0 = unknown (no automatic compaction)
	// ReasoningEffort maps the effort a chat asks for to the one to send
	// ("" = none); nil sends the requested one as is.
	ReasoningEffort func(requested string) string
	// MaxOutputTokens caps a call's output (0 = the provider's default).
	MaxOutputTokens int
	// CompactThresholdPercent is the model config's compression_threshold:
	// the percent of ContextLimit that triggers automatic compaction (0 =
	// the deployment's CHATD_COMPACT_THRESHOLD_PERCENT).
	CompactThresholdPercent int
	// Price is the model config's price, for the usage ledger's cost.
	Price Price
}

// compactThreshold is the percent of the model's window that triggers
// automatic compaction: the model's own, else the deployment's.
func (m Model) compactThreshold(deployment int) int {
	if m.CompactThresholdPercent > 0 {
		return m.CompactThresholdPercent
	}
	return deployment
}

// effort is the reasoning effort to send for requested.
func (m Model) effort(requested string) string {
	if m.ReasoningEffort == nil {
		return requested
	}
	return m.ReasoningEffort(requested)
}

// Models resolves a chat's model config id (unset = the default).
type Models interface {
	Resolve(id uuid.NullUUID) (Model, error)
}

// Subscriber is the part of pubsub the worker needs.
type Subscriber interface {
	Subscribe(ctx context.Context, channel string, fn func(payload []byte)) (cancel func(), err error)
}

// Deps are the worker's collaborators.
type Deps struct {
	Machine *chatstate.Machine
	// Store is for reads; every write goes through Machine.
	Store  store.ReadStore
	Pubsub Subscriber
	Buffer *partbuf.Buffer
	Models Models
	// Tools are the server-side tools (nil: none).
	Tools *tools.Registry
	// MCP supplies the MCP servers' tools per chat (nil: none).
	MCP tools.Source
	// Hooks dispatches lifecycle hook events (nil: hooks off).
	Hooks *hooks.Dispatcher
	// Metrics records the turn stages and outcomes (nil: none).
	Metrics *Metrics
	// Tracer provides the stage spans (nil: no spans; the metrics stay).
	Tracer trace.TracerProvider
	// Clock is the time source (clock.Real when nil).
	Clock clock.Clock
	Log   *slog.Logger
	// Memory is project memory (app/projects); nil: root chats in a
	// project get no memory tools (their instructions still apply).
	Memory Memory
	// Files removes unreferenced uploads (nil: no retention loop).
	Files FileRemover
	// Meter records the GenAI metrics (gen_ai.client.*; nil: none).
	Meter metric.MeterProvider
	// Budget judges the chat owner's usage budget before each model step
	// (nil: no budgets); app/usage implements it.
	Budget Budget
}

// Budget refuses a model step of a user who is over a usage budget: Over
// returns an error that says which limit and when it resets (nil: not
// over), or err when the budget could not be read.
type Budget interface {
	Over(ctx context.Context, tx store.Reader, userID uuid.UUID) (over, err error)
}

// Worker is one replica's chat worker.
type Worker struct {
	id    uuid.UUID
	cfg   Config
	deps  Deps
	log   *slog.Logger
	clock clock.Clock
	rec   recorder
	genai genAI

	manager *manager
	history historyCache
	locks   keyedLock
	titles  chan uuid.UUID
	wake    chan struct{} // acquisition pass requests, buffered to one
	// noAcquire is closed when the worker stops acquiring (Drain);
	// acquired is closed when its acquisition loop has returned.
	noAcquire     chan struct{}
	stopAcquiring sync.Once
	acquired      chan struct{}

	mu      sync.Mutex
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	started bool

	// Direct admission (Admit). admitMu guards runCtx (the loops'
	// context, set by Start) and admitShut (Stop began); admitting
	// counts the admissions whose bundle has not ended yet, which Drain
	// and Stop wait for. waiting is how many chats the last acquisition
	// pass left waiting for a slot (MaxInt64: no pass yet), plus those an
	// admission refused for room since.
	admitMu   sync.Mutex
	runCtx    context.Context
	admitShut bool
	admitting sync.WaitGroup
	waiting   atomic.Int64
}

// New returns a worker with a fresh worker id (regenerated on every start
// of the process, as the spec says).
func New(cfg Config, deps Deps) *Worker {
	if deps.Clock == nil {
		deps.Clock = clock.Real{}
	}
	if deps.Log == nil {
		deps.Log = slog.Default()
	}
	w := &Worker{id: uuid.New(), cfg: cfg.withDefaults(), deps: deps, clock: deps.Clock}
	w.rec = newRecorder(deps.Metrics, deps.Tracer, deps.Clock)
	w.genai = newGenAI(deps.Tracer, deps.Meter, w.cfg.TraceContent)
	w.log = deps.Log.With("worker_id", w.id)
	w.manager = newManager(w)
	w.titles = make(chan uuid.UUID, 256)
	w.wake = make(chan struct{}, 1)
	w.noAcquire = make(chan struct{})
	// Unknown until the first acquisition pass has run: direct admission
	// waits for it, so chats resumed at the start go first.
	w.waiting.Store(math.MaxInt64)
	return w
}

// wakeAcquire asks for an acquisition pass soon; wakes coalesce.
func (w *Worker) wakeAcquire() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// ID is the worker id written into chats.worker_id.
func (w *Worker) ID() uuid.UUID { return w.id }

// Start launches the acquisition, sync, heartbeat and title loops. The
// first acquisition pass runs at once, so a restarted node resumes its chats.
func (w *Worker) Start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return errors.New("worker already started")
	}
	w.started = true
	ctx, w.cancel = context.WithCancel(ctx)
	wake := w.wake
	cancelSub, err := w.deps.Pubsub.Subscribe(ctx, pubsub.ChannelOwnership, func([]byte) { w.wakeAcquire() })
	if err != nil {
		w.cancel()
		return fmt.Errorf("subscribe to %s: %w", pubsub.ChannelOwnership, err)
	}
	acquired := make(chan struct{})
	w.acquired = acquired
	w.admitMu.Lock()
	w.runCtx = ctx
	w.admitMu.Unlock()
	w.goLoop(ctx, func(ctx context.Context) {
		defer close(acquired)
		defer cancelSub()
		w.acquireLoop(ctx, wake)
	})
	w.goLoop(ctx, w.manager.syncLoop)
	w.goLoop(ctx, w.manager.heartbeatLoop)
	for range w.cfg.TitleConcurrency {
		w.goLoop(ctx, w.titleLoop)
	}
	if w.cfg.AutoArchiveDays > 0 {
		w.goLoop(ctx, w.autoArchiveLoop)
	}
	if w.deps.Files != nil {
		w.goLoop(ctx, w.fileRetentionLoop)
	}
	return nil
}

func (w *Worker) goLoop(ctx context.Context, fn func(context.Context)) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		fn(ctx)
	}()
}

// Stop cancels every loop and runner and waits for them. Chats stay owned
// by this worker id; the next process (or replica) takes them over.
func (w *Worker) Stop() {
	w.mu.Lock()
	cancel := w.cancel
	w.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	w.closeAdmission(true)
	w.wg.Wait()
	w.manager.wait()
}

// Drain is the graceful stop (SIGTERM): the worker stops acquiring chats
// at once, then gives up the ones it runs, and stops like Stop. ctx bounds
// the wait (the app's CHATD_SHUTDOWN_TIMEOUT).
//
// With leases (several replicas on Postgres) the chats are handed over at
// once: the runners are cancelled and, once every one has returned, every
// chat this worker owns is released (chatstate.Machine.ReleaseWorker), so
// another replica acquires it on the chat:ownership notification rather
// than at lease expiry. A step in flight is not committed; the new owner
// runs it again, and the tool journal keeps a tool call from running twice
// where that is not safe.
//
// Without leases (one process owns the SQLite file) nobody else could take
// the chats: the runners keep going until every chat is done (a finished
// turn gives its chat up; a chat waiting on a person in requires_action
// counts as done) or ctx ends. Whatever is still running then stays owned
// by this worker id, like after a crash, and the next start resumes it;
// nothing is marked failed.
func (w *Worker) Drain(ctx context.Context) error {
	w.stopAcquiring.Do(func() { close(w.noAcquire) })
	w.mu.Lock()
	acquired := w.acquired
	w.mu.Unlock()
	if acquired != nil {
		<-acquired // no acquisition is in flight, and none starts
	}
	w.closeAdmission(false)
	if !w.cfg.Leases {
		if busy := w.manager.drain(ctx); busy > 0 {
			w.log.Info("shutdown: turns still running are left for the next start", "chats", busy)
		}
		w.Stop()
		return nil
	}
	w.Stop() // every runner cancelled and returned: none commits after the release
	released, err := w.deps.Machine.ReleaseWorker(ctx, w.id)
	if len(released) > 0 {
		w.log.Info("shutdown: handed chats over to the other replicas", "chats", len(released))
	}
	if err != nil {
		return fmt.Errorf("hand chats over: %w (they are taken over when their leases go stale)", err)
	}
	return nil
}

// Draining is closed once Drain has begun: from then on the worker
// acquires no chat.
func (w *Worker) Draining() <-chan struct{} { return w.noAcquire }

// acquiring reports whether the worker still acquires chats (not
// draining).
func (w *Worker) acquiring() bool {
	select {
	case <-w.noAcquire:
		return false
	default:
		return true
	}
}

// acquireParams says which owners count as alive right now.
func (w *Worker) acquireParams() store.AcquirableParams {
	p := store.AcquirableParams{Self: w.id, Limit: w.cfg.AcquirePage}
	if w.cfg.Leases {
		lw := w.leaseWindow()
		p.Leases = &lw
	}
	return p
}

// backoff is the bounded exponential delay before retry attempt n (n >= 1).
func (w *Worker) backoff(n int64) time.Duration {
	d := w.cfg.BackoffBase
	for i := int64(1); i < n && d < w.cfg.BackoffMax; i++ {
		d *= 2
	}
	return min(d, w.cfg.BackoffMax)
}
