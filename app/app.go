// Package app is chatd's composition root: it opens the configured store,
// migrates it, and wires the HTTP server. It is the only package that names
// a concrete store, and only in OpenStore; the rest asks the store for
// optional capabilities (pubsubProvider, replicated).
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

	"github.com/chatd/chatd/app/admin"
	"github.com/chatd/chatd/app/aisdk"
	"github.com/chatd/chatd/app/api"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/clock"
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
	"github.com/chatd/chatd/app/worker"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/postgres"
	"github.com/chatd/chatd/store/sqlite"
	"github.com/chatd/chatd/web"
)

// App is a running chatd: a migrated store, the state machine and the
// HTTP handler.
type App struct {
	cfg        Config
	log        *slog.Logger
	clock      clock.Clock // the one time source, passed to every part
	api        *api.Server
	store      store.Store
	pubsub     pubsub.Pubsub
	closePub   func()
	machine    *chatstate.Machine
	models     *modelconfig.Service
	buffer     *partbuf.Buffer
	worker     *worker.Worker
	mcp        *mcp.Manager
	mcpServers *mcp.Servers // the stored MCP servers a.mcp follows
	elicit     *elicit.Service
	elicitStop func() // ends the elicitation sweep and waits for it
	cipher     *modelconfig.Cipher
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

// migrator is what both stores offer for schema migrations.
type migrator interface {
	store.Store
	Migrations() (*goose.Provider, error)
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

// OpenStore opens the store db names, without migrating. It is the only
// code that names a concrete store; the rest of the app asks the store for
// optional capabilities (pubsubProvider, replicated).
func OpenStore(ctx context.Context, db string) (migrator, error) {
	if IsPostgres(db) {
		return postgres.Open(ctx, db, postgres.Options{})
	}
	return sqlite.Open(ctx, db, sqlite.Options{})
}

// migrationLocker is a store several processes may migrate at once
// (Postgres): Migrate holds its lock while fn runs.
type migrationLocker interface {
	MigrationLock(ctx context.Context) (unlock func(), err error)
}

// Migrate runs fn on the store's goose provider, under the store's
// migration lock when it has one, so replicas starting together never
// race on the schema.
func Migrate(ctx context.Context, s migrator, fn func(*goose.Provider) error) error {
	if l, ok := s.(migrationLocker); ok {
		unlock, err := l.MigrationLock(ctx)
		if err != nil {
			return err
		}
		defer unlock()
	}
	p, err := s.Migrations()
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	return fn(p)
}

// ErrSchemaNewer is returned when the database holds migrations this
// binary does not know: a newer chatd migrated it, and this one would run
// against a schema it was not written for.
var ErrSchemaNewer = errors.New("the database schema is newer than this chatd binary")

// SchemaVersions returns the database's schema version and the newest
// version this binary's migrations reach.
func SchemaVersions(ctx context.Context, p *goose.Provider) (db, known int64, err error) {
	db, err = p.GetDBVersion(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("read the database's schema version: %w", err)
	}
	if srcs := p.ListSources(); len(srcs) > 0 {
		known = srcs[len(srcs)-1].Version
	}
	return db, known, nil
}

// CheckSchema returns ErrSchemaNewer when the database is at a version
// beyond the binary's newest migration.
func CheckSchema(ctx context.Context, p *goose.Provider) error {
	db, known, err := SchemaVersions(ctx, p)
	if err != nil {
		return err
	}
	if db > known {
		return fmt.Errorf("%w: the database is at version %d, this binary knows up to %d; run the newer chatd (or roll the database back with the newer binary's `chatd migrate down`)", ErrSchemaNewer, db, known)
	}
	return nil
}

// New opens and migrates the store and builds the HTTP handler.
func New(ctx context.Context, cfg Config, logOut io.Writer) (*App, error) {
	cfg = cfg.withDefaults()
	log, err := NewLogger(cfg.LogFormat, logOut)
	if err != nil {
		return nil, fmt.Errorf("CHATD_LOG_FORMAT: %w", err)
	}
	if err := requireSecretKey(cfg); err != nil {
		return nil, err
	}
	// The store first: opening it takes the database's lock, so a start
	// that is refused writes no key file (models.go, loadKeyFile).
	s, err := OpenStore(ctx, cfg.DB)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", describeDB(cfg.DB), err)
	}
	err = Migrate(ctx, s, func(p *goose.Provider) error {
		if err := CheckSchema(ctx, p); err != nil {
			return err
		}
		results, err := p.Up(ctx)
		for _, r := range results {
			log.Info("migrated", "version", r.Source.Version, "path", r.Source.Path, "duration", r.Duration)
		}
		return err
	})
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("migrate %s: %w", describeDB(cfg.DB), err)
	}
	if cfg.SecretKey == "" {
		if cfg.SecretKey, cfg.secretKeyFile, err = loadKeyFile(ctx, cfg.DB, s); err != nil {
			s.Close()
			return nil, err
		}
	}
	a, err := NewWithStore(ctx, cfg, s, logOut)
	if err != nil {
		s.Close()
		return nil, err
	}
	return a, nil
}

// NewWithStore builds the app over an open, migrated store (tests use it
// with isolated stores). Close closes the store.
func NewWithStore(ctx context.Context, cfg Config, s store.Store, logOut io.Writer) (*App, error) {
	cfg = cfg.withDefaults()
	log, err := NewLogger(cfg.LogFormat, logOut)
	if err != nil {
		return nil, fmt.Errorf("CHATD_LOG_FORMAT: %w", err)
	}
	secrets := redact.New()
	log = slog.New(secrets.Handler(log.Handler()))
	a := &App{cfg: cfg, log: log, clock: cfg.Clock, store: s, secrets: secrets}
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
	if err := checkLeases(a.cfg.Worker); err != nil {
		return err
	}
	if a.pubsub, a.closePub, err = openPubsub(ctx, a.store, a.log); err != nil {
		return err
	}
	// Observability: the registry, and the store and pubsub every part
	// uses, measured in one place (after the capabilities are asked for).
	a.metrics = api.NewMetrics()
	a.store = measureStore(a.store, a.metrics.Registry, a.clock)
	a.pubsub = pubsub.Instrument(a.pubsub, a.metrics.Registry)
	if err := a.initModels(ctx); err != nil {
		return err
	}
	leases := sharedByReplicas(a.store)
	mcfg := machineConfig(a.cfg, leases, a.log, a.clock)
	// The API server reports storage-full writes on /healthz; the worker's
	// go through the machine too. a.api is set below, before anything runs.
	mcfg.OnStorageFull = func(err error) { a.api.NoteStorageFull(err) }
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
	tp := a.cfg.TracerProvider
	if tp == nil {
		if a.tracing, err = telemetry.FromEnv(ctx, os.Getenv); err != nil {
			return fmt.Errorf("tracing (OTEL_*): %w", err)
		}
		tp = a.tracing.Provider
	}
	a.projects = projects.New(a.store, a.clock, a.cfg.Projects)
	wdeps := worker.Deps{
		Tracer:  tp,
		Machine: a.machine, Store: a.store, Pubsub: a.pubsub, Buffer: a.buffer, Models: workerModels{a.models},
		Tools: reg, Clock: a.clock, Log: a.log, Metrics: worker.NewMetrics(a.metrics.Registry),
		Memory: a.projects,
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
	// A bundle that leaves a chat runnable acquires it for this worker in
	// the same transaction once the worker runs (worker/admit.go).
	a.machine.SetAdmitter(a.worker)
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
		Elicitations: a.elicit,
		MCPOAuth:     a.mcp,
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
		Native: srv, Watch: a.streams.Watch, Log: a.log, MaxBodyBytes: a.cfg.MaxBodyBytes, ModelName: ModelName,
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

// Routes returns the patterns registered on the HTTP mux (the OpenAPI
// test compares them with the document).
func (a *App) Routes() []string { return a.api.Routes() }

// Store is the app's store.
func (a *App) Store() store.Store { return a.store }

// Handler is the app's HTTP handler.
func (a *App) Handler() http.Handler { return a.handler }

// Machine is the app's state machine.
func (a *App) Machine() *chatstate.Machine { return a.machine }

// Worker is the app's chat worker.
func (a *App) Worker() *worker.Worker { return a.worker }

// MCP is the app's MCP servers.
func (a *App) MCP() *mcp.Manager { return a.mcp }

// Buffer is the app's message-part buffer.
func (a *App) Buffer() *partbuf.Buffer { return a.buffer }

// Start runs the background parts (part buffer GC, chat worker) until ctx
// ends or Stop. Run calls it; tests that serve the handler themselves call
// it directly.
func (a *App) Start(ctx context.Context) error {
	if err := a.buffer.Start(ctx); err != nil {
		return err
	}
	if err := a.poller.Start(ctx); err != nil {
		return fmt.Errorf("start stream poller: %w", err)
	}
	if sharedByReplicas(a.store) {
		err := a.store.InTx(ctx, func(tx store.Tx) error {
			return tx.ReplicaUpsert(ctx, store.Replica{
				WorkerID: a.worker.ID(), Address: a.cfg.AdvertiseURL, TokenHash: replicaTokenHash(a.replicaTok), UpdatedAt: a.clock.Now(),
			})
		})
		if err != nil {
			return fmt.Errorf("publish replica address: %w", err)
		}
	}
	if err := a.mcpServers.Start(ctx); err != nil {
		return err
	}
	a.startElicit(ctx) // elicitations.go
	if a.cfg.NoWorker {
		return nil
	}
	return a.worker.Start(ctx)
}

// Stop ends the streams and stops the worker, the MCP servers, the
// poller and the buffer, waiting for each.
func (a *App) Stop() {
	a.streams.Close()
	a.worker.Stop()
	a.mcpServers.Stop()
	a.closeMCP() // after the worker: its tool calls are over
	a.stopElicit()
	a.poller.Stop()
	if sharedByReplicas(a.store) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = a.store.InTx(ctx, func(tx store.Tx) error { return tx.ReplicaDelete(ctx, a.worker.ID()) })
		cancel()
	}
	a.buffer.Stop()
}

// closeMCP disconnects the MCP servers (stopping their child processes),
// if any are configured.
func (a *App) closeMCP() {
	if a.mcp != nil {
		_ = a.mcp.Close()
	}
}

// Close stops the MCP servers and the pubsub and releases the store.
func (a *App) Close() error {
	a.closeMCP() // an app never started may have connected some for a status
	if a.closePub != nil {
		a.closePub()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return errors.Join(a.tracing.Shutdown(ctx), a.store.Close())
}

// Run serves HTTP on cfg.Addr until ctx is cancelled, then shuts down
// gracefully. ready, when non-nil, receives the bound address.
func (a *App) Run(ctx context.Context, ready func(addr net.Addr)) error {
	ln, err := net.Listen("tcp", a.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", a.cfg.Addr, err)
	}
	if a.cfg.AdvertiseURL == "" {
		a.cfg.AdvertiseURL = "http://" + ln.Addr().String()
	}
	// The background parts outlive ctx: its end starts the drain below,
	// which stops them in order (Shutdown).
	if err := a.Start(context.WithoutCancel(ctx)); err != nil {
		a.Stop()
		ln.Close()
		return fmt.Errorf("start worker: %w", err)
	}
	defer a.Stop() // after Shutdown, a no-op
	sock := a.startAdmin("http://" + ln.Addr().String())
	defer sock.stop(a.cfg.ShutdownTimeout)
	// Timeouts bound every request; the stream handlers lift them from
	// their own connections (pings and per-frame deadlines bound those).
	srv := &http.Server{
		Handler: a.handler, ReadHeaderTimeout: DefaultReadHeaderTimeout,
		ReadTimeout: orNone(a.cfg.ReadTimeout), WriteTimeout: orNone(a.cfg.WriteTimeout), IdleTimeout: orNone(a.cfg.IdleTimeout),
	}
	if a.cfg.MaxUnauthConnsPerIP > 0 {
		limits := newConnLimiter(a.cfg.MaxUnauthConnsPerIP)
		ln = limits.listener(ln)
		srv.Handler = limits.handler(a.handler, a.authed)
		srv.ConnContext = connContext
	}
	a.log.Info("chatd serving", "addr", "http://"+ln.Addr().String(), "database", describeDB(a.cfg.DB))
	for _, m := range a.models.List() {
		a.log.Info("model", "id", m.ID, "provider", m.Provider, "model", m.Model, "default", m.Default)
	}
	if a.firstToken != "" {
		// Shown once: only hashes are stored. The link carries a one-time
		// code that expires, not the long-lived token.
		code, exp, err := a.tokens.CreateLoginCode(ctx, auth.AdminName)
		if err != nil {
			ln.Close()
			return fmt.Errorf("first start: login code: %w", err)
		}
		a.log.Info("first start: created user admin; open the login link (single use, expires in 15 minutes)",
			"login_url", admin.LoginURL("http://"+ln.Addr().String(), code), "expires_at", exp.UTC().Format(time.RFC3339))
		// The long-lived token never goes to the log, which outlives the
		// terminal (journald, docker logs, a log shipper).
		if a.cfg.FirstTokenOut != nil {
			fmt.Fprintf(a.cfg.FirstTokenOut, "\nThe admin's API token (shown only this once, and not logged):\n\n    %s\n\n", a.firstToken)
		} else {
			a.log.Info("first start: the admin's API token is shown only on a terminal and never logged; run `chatd token create --user admin` for one")
		}
		a.firstToken = ""
	} else {
		a.log.Info("to log in to the web UI, run `chatd login-link` (with this server's --db) for a one-time login link")
	}
	stopMetrics, err := a.serveMetrics()
	if err != nil {
		ln.Close()
		return err
	}
	defer stopMetrics()
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	a.log.Info("shutting down: draining", "timeout", a.cfg.ShutdownTimeout)
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.ShutdownTimeout)
	defer cancel()
	// The listener closes at once and the requests in flight finish while
	// the worker drains; the streams (hijacked connections, which
	// http.Server.Shutdown does not wait for) close after it.
	httpDone := make(chan error, 1)
	go func() { httpDone <- srv.Shutdown(shutdownCtx) }()
	drainErr := a.Shutdown(shutdownCtx)
	shutdownErr := <-httpDone
	// Serve returns as soon as Shutdown starts: wait for it either way.
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	if shutdownErr != nil {
		return fmt.Errorf("shutdown: %w", shutdownErr)
	}
	if drainErr != nil {
		// The chats not handed over are taken over at lease expiry.
		a.log.Warn("shutdown: drain", "err", drainErr)
	}
	a.log.Info("shut down")
	return nil
}

// Shutdown is the graceful stop (Run calls it when its context ends, as
// on SIGTERM): this replica stops acquiring chats at once; with several
// replicas (Postgres) it hands the chats it runs to the others, and on
// SQLite it lets the running turns finish until ctx ends, leaving the rest
// for the next start (worker.Worker.Drain). Then everything stops as in
// Stop, and the streams end with WebSocket status 1012 (Service Restart)
// so clients reconnect, to another replica if there is one. Stop alone is
// what a crash does to the chats: they stay owned until their leases go
// stale (or, on SQLite, until the next start).
func (a *App) Shutdown(ctx context.Context) error {
	var err error
	if !a.cfg.NoWorker {
		err = a.worker.Drain(ctx)
	}
	a.Stop()
	return err
}

// backup snapshots a SQLite database for GET /admin/backup (nil with
// PostgreSQL: pg_dump backs it up).
func (a *App) backup() func(ctx context.Context) (*os.File, error) {
	if sharedByReplicas(a.store) {
		return nil
	}
	return func(ctx context.Context) (*os.File, error) { return dbcopy.SnapshotFile(ctx, a.cfg.DB) }
}
