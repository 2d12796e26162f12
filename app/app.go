// Package app is chatd's composition root: it opens the configured store
// (store/open), migrates it, and wires the HTTP server. It names no
// concrete store; it asks the store for optional capabilities
// (pubsubProvider, replicated).
package app

import (
	"context"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/pressly/goose/v3"

	"github.com/chatd/chatd/app/aisdk"
	"github.com/chatd/chatd/app/api"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/dbcopy"
	"github.com/chatd/chatd/app/elicit"
	"github.com/chatd/chatd/app/files"
	"github.com/chatd/chatd/app/hooks"
	"github.com/chatd/chatd/app/mcp"
	"github.com/chatd/chatd/app/modelconfig"
	"github.com/chatd/chatd/app/openaiapi"
	"github.com/chatd/chatd/app/partbuf"
	"github.com/chatd/chatd/app/projects"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/app/redact"
	"github.com/chatd/chatd/app/stream"
	"github.com/chatd/chatd/app/telemetry"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/app/ui"
	"github.com/chatd/chatd/app/usage"
	"github.com/chatd/chatd/app/worker"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/open"
	"github.com/chatd/chatd/web"
)

// orNone is a Config timeout for http.Server, where 0 is none.
func orNone(d time.Duration) time.Duration { return max(d, 0) }

// App is a running chatd: a migrated store, the state machine and the
// HTTP handler.
type App struct {
	cfg config.Config
	// secretKeyFile is the SQLite key file cfg.SecretKey was read from
	// (New sets it), for errors.
	secretKeyFile string
	log           *slog.Logger
	clock         clock.Clock // the one time source, passed to every part
	api           *api.Server
	store         store.Store
	pubsub        pubsub.Pubsub
	closePub      func()
	machine       *chatstate.Machine
	models        *modelconfig.Service
	buffer        *partbuf.Buffer
	worker        *worker.Worker
	auto          automation // schedules and webhooks (automation.go)
	mcp           *mcp.Manager
	mcpServers    *mcp.Servers // the stored MCP servers a.mcp follows
	elicit        *elicit.Service
	elicitStop    func() // ends the elicitation sweep and waits for it
	cipher        *modelconfig.Cipher
	// secrets are the secrets held in clear (provider keys, MCP env and
	// header values, the hook secret), masked out of every error text on
	// its way out of the provider, MCP and hook layers and out of the log.
	secrets    *redact.Secrets
	poller     *stream.Poller
	streams    *stream.Server
	replicaTok string
	tokens     *auth.Tokens
	projects   *projects.Service // projects and their memory (not chat state)
	handler    http.Handler
	usage      *usage.Service
	authed     func(*http.Request) bool // valid credentials, for the connection cap
	firstToken string                   // printed once on a first start without a bootstrap token

	// metrics is the registry, served to admins on the main address and,
	// on MetricsAddr when set, to anyone (metricsAddr once listening).
	metrics     *api.Metrics
	metricsAddr net.Addr
	// tracing is the OTEL_* tracer provider this app started (flushed by
	// Close); nil when Config.TracerProvider was given.
	tracing *telemetry.Tracing
}

// sharedPubsub is a pubsub that reaches every process sharing the database.
// It is spelled as a type literal so a store can return it without
// importing app/pubsub.
type sharedPubsub = interface {
	Publish(ctx context.Context, channel string, payload []byte) error
	Subscribe(ctx context.Context, channel string, fn func(payload []byte)) (cancel func(), err error)
	Close() error
}

// pubsubProvider is a store that carries notifications between processes
// (Postgres LISTEN/NOTIFY). A store without it gets the in-process pubsub,
// which is enough because only one process may open it.
type pubsubProvider interface {
	OpenPubsub(ctx context.Context, log *slog.Logger) (sharedPubsub, error)
}

// replicated is a store that several replicas may share. They then hold
// chats by leases (heartbeat rows) and publish their addresses for the
// stream relay; a store only one process opens keeps both in memory.
type replicated interface {
	SharedByReplicas() bool
}

// sharedByReplicas reports whether s may be shared by several replicas.
func sharedByReplicas(s store.Store) bool {
	r, ok := s.(replicated)
	return ok && r.SharedByReplicas()
}

// openPubsub returns the pubsub for s: the store's own when it reaches
// other processes, the in-process one otherwise. stop stops it.
func openPubsub(ctx context.Context, s store.Store, log *slog.Logger) (ps pubsub.Pubsub, stop func(), err error) {
	p, ok := s.(pubsubProvider)
	if !ok {
		return pubsub.NewMemory(), func() {}, nil
	}
	shared, err := p.OpenPubsub(ctx, log)
	if err != nil {
		return nil, nil, fmt.Errorf("start the store's pubsub: %w", err)
	}
	return shared, func() { _ = shared.Close() }, nil
}

// New opens and migrates the store and builds the HTTP handler.
func New(ctx context.Context, cfg config.Config, logOut io.Writer) (*App, error) {
	cfg = cfg.WithDefaults()
	log, err := config.NewLogger(cfg.LogFormat, logOut)
	if err != nil {
		return nil, fmt.Errorf("CHATD_LOG_FORMAT: %w", err)
	}
	if err := requireSecretKey(cfg); err != nil {
		return nil, err
	}
	// The store first: opening it takes the database's lock, so a start
	// that is refused writes no key file (models.go, loadKeyFile).
	s, err := open.Store(ctx, cfg.DB)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", open.Describe(cfg.DB), err)
	}
	err = open.Up(ctx, s, func(r goose.MigrationResult) {
		log.Info("migrated", "version", r.Source.Version, "path", r.Source.Path, "duration", r.Duration)
	})
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("migrate %s: %w", open.Describe(cfg.DB), err)
	}
	var keyFile string
	if cfg.SecretKey == "" {
		if cfg.SecretKey, keyFile, err = loadKeyFile(ctx, cfg.DB, s); err != nil {
			s.Close()
			return nil, err
		}
	}
	a, err := newWithStore(ctx, cfg, s, logOut, keyFile)
	if err != nil {
		s.Close()
		return nil, err
	}
	return a, nil
}

// NewWithStore builds the app over an open, migrated store (tests use it
// with isolated stores). Close closes the store.
func NewWithStore(ctx context.Context, cfg config.Config, s store.Store, logOut io.Writer) (*App, error) {
	return newWithStore(ctx, cfg, s, logOut, "")
}

// newWithStore is NewWithStore; keyFile is the SQLite key file New read
// cfg.SecretKey from, for errors.
func newWithStore(ctx context.Context, cfg config.Config, s store.Store, logOut io.Writer, keyFile string) (*App, error) {
	cfg = cfg.WithDefaults()
	log, err := config.NewLogger(cfg.LogFormat, logOut)
	if err != nil {
		return nil, fmt.Errorf("CHATD_LOG_FORMAT: %w", err)
	}
	secrets := redact.New()
	log = slog.New(secrets.Handler(log.Handler()))
	a := &App{cfg: cfg, log: log, clock: cfg.Clock, store: s, secrets: secrets, secretKeyFile: keyFile}
	if err := a.init(ctx); err != nil {
		if a.closePub != nil {
			a.closePub()
		}
		return nil, err
	}
	return a, nil
}

func (a *App) init(ctx context.Context) error {
	var err error
	if p := a.cfg.Worker.ToolApproval; p != "" && !slices.Contains(store.AllApprovalPolicies, p) {
		return fmt.Errorf("CHATD_TOOL_APPROVAL: %q is not never, effectful or always", p)
	}
	if err := config.CheckLeases(a.cfg.Worker); err != nil {
		return err
	}
	if a.pubsub, a.closePub, err = openPubsub(ctx, a.store, a.log); err != nil {
		return err
	}
	// Observability: the registry, and the store and pubsub every part
	// uses, measured in one place (after the capabilities are asked for).
	a.metrics = api.NewMetrics()
	a.store = telemetry.MeasureStore(a.store, a.metrics.Registry, a.clock)
	a.pubsub = pubsub.Instrument(a.pubsub, a.metrics.Registry)
	if err := a.initModels(ctx); err != nil {
		return err
	}
	leases := sharedByReplicas(a.store)
	mcfg := machineConfig(a.cfg, leases, a.log, a.clock)
	// The API server reports storage-full writes on /healthz; the worker's
	// go through the machine too. a.api is set below, before anything runs.
	mcfg.OnStorageFull = func(err error) { a.api.NoteStorageFull(err) }
	mcfg.OnOutbox = a.wakeDeliverer
	wcfg := a.cfg.Worker
	wcfg.Leases = leases
	a.machine = chatstate.New(a.store, a.pubsub, mcfg)
	a.buffer = partbuf.New(partbuf.Config{Clock: a.clock, Registerer: a.metrics.Registry})
	// Server-side tools are opt-in: some OpenAI-compatible models refuse
	// any request that offers tools.
	reg := tools.NewRegistry()
	if a.cfg.BuiltinTools {
		reg.Add(tools.Clock(a.clock.Now))
	}
	if a.cfg.WebhookURL != "" {
		reg.Add(tools.Webhook(a.cfg.WebhookURL, nil))
	}
	for _, t := range a.cfg.Tools {
		reg.Add(t)
	}
	tp, mp := a.cfg.TracerProvider, a.cfg.MeterProvider
	if tp == nil && mp == nil {
		if a.tracing, err = telemetry.FromEnv(ctx, os.Getenv); err != nil {
			return fmt.Errorf("tracing (OTEL_*): %w", err)
		}
		tp, mp = a.tracing.Provider, a.tracing.Meter
	}
	budget, err := a.cfg.Budget()
	if err != nil {
		return err
	}
	a.usage = usage.New(a.store, a.clock, budget)
	a.projects = projects.New(a.store, a.clock, a.cfg.Projects)
	wdeps := worker.Deps{
		Tracer:  tp,
		Machine: a.machine, Store: a.store, Pubsub: a.pubsub, Buffer: a.buffer, Models: workerModels{a.models},
		Tools: reg, Clock: a.clock, Log: a.log, Metrics: worker.NewMetrics(a.metrics.Registry),
		Memory: a.projects, Meter: mp, Budget: a.usage,
	}
	fileStore := files.New(a.store, a.clock, a.cfg.Files)
	wdeps.Files = fileStore
	if err := a.openMCP(ctx); err != nil { // mcpservers.go
		return err
	}
	wdeps.MCP = a.mcp
	if a.cfg.HookURL != "" {
		if wdeps.Hooks, err = hooks.New(hooks.Config{
			URL: a.cfg.HookURL, Secret: a.cfg.HookSecret, MaxConcurrent: a.cfg.HookMaxConcurrent, Clock: a.clock,
			Secrets: a.secrets,
		}); err != nil {
			return fmt.Errorf("lifecycle hooks (CHATD_HOOK_URL, CHATD_HOOK_SECRET): %w", err)
		}
	}
	a.worker = worker.New(wcfg, wdeps)
	a.initAutomation(wdeps.Hooks)
	// A bundle that leaves a chat runnable acquires it for this worker in
	// the same transaction once the worker runs (worker/admit.go).
	a.machine.SetAdmitter(a.worker)
	// A question's chat waits without a slot; the worker admits it back.
	a.elicit.UseSlots(a.worker)
	a.firstToken, err = auth.Bootstrap(ctx, a.store, a.cfg.BootstrapToken, a.clock.Now())
	if errors.Is(err, store.ErrConflict) {
		// Another replica starting on the same fresh database created the
		// admin (or its token) first; the second pass finds it.
		a.firstToken, err = auth.Bootstrap(ctx, a.store, a.cfg.BootstrapToken, a.clock.Now())
	}
	if err != nil {
		return fmt.Errorf("bootstrap admin: %w", err)
	}
	a.tokens = auth.New(a.store, a.clock, a.log, auth.Config{SessionTTL: a.cfg.SessionTTL})
	if err := a.tokens.DeleteExpired(ctx); err != nil {
		return fmt.Errorf("delete expired tokens: %w", err)
	}
	acfg := api.Config{MaxBodyBytes: a.cfg.MaxBodyBytes, MaxTextBytes: a.cfg.MaxTextBytes, Limits: a.cfg.Limits, Pprof: a.cfg.Pprof,
		StreamAuthInterval: a.cfg.StreamAuthInterval}
	if err := a.webConfig(&acfg); err != nil {
		return err
	}
	srv := api.New(acfg, api.Deps{
		Machine: a.machine, Store: a.store, Models: a.models, Titles: a.titles(), Log: a.log, Metrics: a.metrics,
		Clock: a.clock, Tokens: a.tokens, MCP: a.mcp, MCPAdmin: mcpAdmin{a.mcpServers},
		Projects:     a.projects,
		ModelConfigs: a.models,
		Files:        fileStore,
		Hooks:        wdeps.Hooks, // one dispatcher: admission and admitted work share the cap
		Backup:       a.backup(),
		Schedules:    a.auto.schedules,
		Webhooks:     a.auto.webhooks,
		Elicitations: a.elicit,
		MCPCatalog:   mcpCatalog{a.mcp},
		MCPOAuth:     a.mcp,
		Usage:        a.usage,
	})
	a.api = srv
	a.poller = stream.NewPoller(a.store, a.cfg.StreamPollInterval, a.clock, a.log)
	a.replicaTok = auth.NewToken()
	a.streams = stream.NewServer(stream.Config{
		Store: a.store, Pubsub: a.pubsub, Poller: a.poller, Buffer: a.buffer,
		Locator: locator{a}, Log: a.log, Clock: a.clock,
		PingInterval: a.cfg.StreamPingInterval, PongTimeout: a.cfg.StreamPongTimeout,
		Registerer: a.metrics.Registry,
	})
	srv.HandleChatStream("/chats/{chat}/stream", a.streams.HandleStream, nil)
	srv.HandleChatStream("/chats/{chat}/stream/parts", a.streams.HandleParts, a.isReplica)
	srv.HandleUserStream("/chats/watch", a.streams.HandleWatch)
	aisdk.New(aisdk.Deps{API: srv, Store: a.store, Streams: a.streams, Clock: a.clock, Log: a.log}).Register(srv)
	a.authed = func(r *http.Request) bool {
		if a.isReplica(r) {
			return true
		}
		_, err := srv.Authenticate(r)
		return err == nil
	}
	webUI, err := ui.New(web.Files())
	if err != nil {
		return err
	}
	srv.Handle("/v1/", openaiapi.New(openaiapi.Deps{ // the OpenAI-compatible surface, a translator onto srv
		Native: srv, Watch: a.streams.Watch, Log: a.log, MaxBodyBytes: a.cfg.MaxBodyBytes, ModelName: modelconfig.EnvModelName,
		Authenticate: func(r *http.Request) (uuid.UUID, error) { u, err := srv.Authenticate(r); return u.ID, err },
	}))
	srv.Handle("/", webUI) // API routes are more specific and keep precedence
	a.handler = srv
	return nil
}

// replicaTokenHash is the stored form of a replica token.
func replicaTokenHash(token string) string { return hex.EncodeToString(auth.Hash(token)) }

// isReplica reports whether r comes from a registered replica: it names its
// worker and presents the token whose hash that worker published.
func (a *App) isReplica(r *http.Request) bool {
	worker, err := uuid.Parse(r.Header.Get(stream.ReplicaWorkerHeader))
	tok := r.Header.Get(stream.ReplicaTokenHeader)
	if err != nil || tok == "" || len(tok) > 512 || !sharedByReplicas(a.store) {
		return false
	}
	var rep store.Replica
	err = a.store.ReadTx(r.Context(), func(tx store.Reader) error {
		var err error
		rep, err = tx.ReplicaGet(r.Context(), worker)
		return err
	})
	if err != nil {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(replicaTokenHash(tok)), []byte(rep.TokenHash)) == 1
}

// titles is the title generator, none without a worker.
func (a *App) titles() api.TitleGenerator {
	if a.cfg.NoWorker {
		return nil
	}
	return a.worker
}

// locator resolves workers to replicas for the stream relay.
type locator struct{ a *App }

func (l locator) Local() uuid.UUID { return l.a.worker.ID() }

func (l locator) Token() string { return l.a.replicaTok }

func (l locator) Replica(ctx context.Context, workerID uuid.UUID) (store.Replica, error) {
	var r store.Replica
	err := l.a.store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		r, err = tx.ReplicaGet(ctx, workerID)
		return err
	})
	return r, err
}

// SetAdvertiseURL sets the base URL other replicas use to reach this one
// (tests serving the handler themselves call it before Start).
func (a *App) SetAdvertiseURL(u string) { a.cfg.AdvertiseURL = u }

// Handler is the app's HTTP handler.
func (a *App) Handler() http.Handler { return a.handler }

// Internals are the parts of a built app that test kits (app/apptest)
// reach into; serving needs none of them.
type Internals struct {
	Store   store.Store
	Machine *chatstate.Machine
	Worker  *worker.Worker
	MCP     *mcp.Manager
	Buffer  *partbuf.Buffer
	// Metrics is the Prometheus registry: HTTP, worker stages and turn
	// outcomes, MCP, store, process.
	Metrics *api.Metrics
	// Routes are the patterns registered on the HTTP mux (the OpenAPI
	// test compares them with the document).
	Routes []string
	// MetricsAddr is where the metrics listener is, nil when it is off
	// (valid once Run called ready).
	MetricsAddr net.Addr
}

// Internals returns the app's parts for test kits.
func (a *App) Internals() Internals {
	return Internals{Store: a.store, Machine: a.machine, Worker: a.worker, MCP: a.mcp, Buffer: a.buffer,
		Metrics: a.metrics, Routes: a.api.Routes(), MetricsAddr: a.metricsAddr}
}

// backup snapshots a SQLite database for GET /admin/backup (nil with
// PostgreSQL: pg_dump backs it up).
func (a *App) backup() func(ctx context.Context) (*os.File, error) {
	if sharedByReplicas(a.store) {
		return nil
	}
	return func(ctx context.Context) (*os.File, error) { return dbcopy.SnapshotFile(ctx, a.cfg.DB) }
}

// webConfig fills the API's web-security settings from the app's config:
// the session cookie's Secure mode and the trusted proxies.
func (a *App) webConfig(c *api.Config) error {
	var err error
	if c.CookieSecure, err = api.ParseCookieSecure(a.cfg.CookieSecure); err != nil {
		return fmt.Errorf("CHATD_COOKIE_SECURE: %w", err)
	}
	if c.TrustedProxies, err = api.ParseTrustedProxies(a.cfg.TrustedProxies); err != nil {
		return fmt.Errorf("CHATD_TRUSTED_PROXIES: %w", err)
	}
	return nil
}
