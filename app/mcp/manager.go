package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/redact"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
)

// Defaults for Options' zero values.
const (
	// DefaultConnectTimeout bounds one connection attempt (start the
	// server, initialize, tools/list), and so how long Tools waits for a
	// server still connecting.
	DefaultConnectTimeout = 20 * time.Second
	// DefaultMinBackoff and DefaultMaxBackoff pace reconnection: the wait
	// doubles after every failed attempt, from the first to the second.
	DefaultMinBackoff = time.Second
	DefaultMaxBackoff = time.Minute
)

// Options are a Manager's collaborators and settings.
type Options struct {
	// Log receives connection failures and the servers' stderr (discarded
	// when nil).
	Log *slog.Logger
	// Registerer, when set, gets the chatd_mcp_server_failures_total
	// counter.
	Registerer prometheus.Registerer
	// Clock paces the connect timeout and the reconnection backoff
	// (clock.Real when nil). A tools/call's timeout is the server's
	// Timeout in real time.
	Clock clock.Clock
	// ConnectTimeout: DefaultConnectTimeout when zero.
	ConnectTimeout time.Duration
	// MinBackoff, MaxBackoff: DefaultMinBackoff, DefaultMaxBackoff when zero.
	MinBackoff, MaxBackoff time.Duration
	// Secrets learns every configured server's env and header values and
	// masks them (and every other secret chatd knows) out of the errors
	// the manager gives back: tool call errors, a server's last error, a
	// connection test's. Nil masks only URL credentials.
	Secrets *redact.Secrets
	// Elicitor, when set, lets servers ask a chat's person questions
	// during a tool call (MCP elicitation, form and URL modes); without
	// it chatd does not offer the capability.
	Elicitor Elicitor
	// OAuthRedirectURL, when set and not empty, is chatd's OAuth callback
	// URL (OAuthCallback serves it): URL servers that ask for
	// authorization then go through the MCP authorization flow.
	OAuthRedirectURL func() string
	// AuthorizationTimeout: DefaultAuthorizationTimeout when zero.
	AuthorizationTimeout time.Duration
	// Tokens, when set, keeps the servers' OAuth tokens across restarts
	// (tokens.go); without it a restart asks for a new authorization.
	Tokens TokenStore
	// UserSessionIdle: DefaultUserSessionIdle when zero.
	UserSessionIdle time.Duration
}

// Manager holds the connections to the configured MCP servers, shared by
// every chat of the process.
type Manager struct {
	log                                    *slog.Logger
	clock                                  clock.Clock
	connectTimeout, minBackoff, maxBackoff time.Duration
	failures                               *prometheus.CounterVec
	secrets                                *redact.Secrets
	elicitor                               Elicitor
	oauthRedirect                          func() string
	authTimeout                            time.Duration
	flows                                  oauthFlows
	tokens                                 TokenStore
	userIdle                               time.Duration

	cfgMu   sync.RWMutex // guards servers and byID, which Apply replaces
	servers []*server    // sorted by name
	byID    map[uuid.UUID]*server

	// dial, when set, replaces the configured transport (tests connect
	// in-memory servers through it).
	dial func(Server) mcp.Transport

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	mu     sync.Mutex // guards closed, every server's started and the WaitGroup's Add
	closed bool
	wg     sync.WaitGroup // one per started server
}

var (
	_ tools.Source = (*Manager)(nil)
	_ tools.Tool   = (*Tool)(nil)
)

// NewManager returns a manager for cfg's servers. It connects nothing
// until the first Tools or Status call.
func NewManager(cfg Config, opts Options) *Manager {
	m := &Manager{
		log: opts.Log, clock: opts.Clock, byID: map[uuid.UUID]*server{}, secrets: opts.Secrets, elicitor: opts.Elicitor,
		oauthRedirect: opts.OAuthRedirectURL, authTimeout: opts.AuthorizationTimeout, tokens: opts.Tokens, userIdle: opts.UserSessionIdle,
		connectTimeout: opts.ConnectTimeout, minBackoff: opts.MinBackoff, maxBackoff: opts.MaxBackoff,
	}
	if m.log == nil {
		m.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if m.clock == nil {
		m.clock = clock.Real{}
	}
	if m.authTimeout <= 0 {
		m.authTimeout = DefaultAuthorizationTimeout
	}
	if m.userIdle <= 0 {
		m.userIdle = DefaultUserSessionIdle
	}
	if m.connectTimeout <= 0 {
		m.connectTimeout = DefaultConnectTimeout
	}
	if m.minBackoff <= 0 {
		m.minBackoff = DefaultMinBackoff
	}
	if m.maxBackoff <= 0 {
		m.maxBackoff = DefaultMaxBackoff
	}
	m.maxBackoff = max(m.maxBackoff, m.minBackoff)
	m.failures = registerFailures(opts.Registerer)
	m.ctx, m.cancel = context.WithCancel(context.Background())
	for _, sc := range cfg.Servers {
		s := m.newServer(sc)
		m.servers = append(m.servers, s)
		m.byID[sc.ID] = s
	}
	slices.SortFunc(m.servers, func(a, b *server) int { return strings.Compare(a.cfg.Name, b.cfg.Name) })
	return m
}

// newServer is sc's server, not connected.
func (m *Manager) newServer(sc Server) *server {
	// Values of an earlier config of the server stay masked: a late error
	// may still quote them.
	m.secrets.Add("mcp:"+sc.ID.String(), redact.LabelSecret, sc.secretValues()...)
	s := &server{cfg: sc, secrets: m.secrets, refresh: make(chan struct{}, 1), changed: make(chan struct{}), stopped: make(chan struct{}), state: sdk.MCPStateConnecting}
	s.ctx, s.cancel = context.WithCancel(m.ctx)
	s.access.Store(&sc)
	s.transport = sdk.MCPTransportStreamableHTTP
	if sc.Stdio() {
		s.transport = sdk.MCPTransportStdio
	}
	if sc.Disabled {
		s.state = sdk.MCPStateDisabled
	}
	return s
}

// Apply replaces the configured servers with cfg's, at run time. A new
// server connects lazily, like those given to NewManager; a server whose
// access alone changed keeps its connection, under the new rule at once;
// a server whose other settings changed in any way (enabling or disabling
// it too) is disconnected and connects again with them on its next use;
// a removed or disabled one is disconnected. Tools and Status see the new
// set when Apply returns, which is after the retired connections are
// closed (their stdio children stopped). A call in flight on a retired
// connection ends with an error result ("removed or changed during the
// call"), recorded by the worker's tool journal like any failed call.
func (m *Manager) Apply(cfg Config) {
	m.cfgMu.Lock()
	next := make([]*server, 0, len(cfg.Servers))
	byID := make(map[uuid.UUID]*server, len(cfg.Servers))
	kept := map[*server]bool{}
	for _, sc := range cfg.Servers {
		s, ok := m.byID[sc.ID]
		if ok && sameConnection(s.cfg, sc) {
			kept[s] = true
			s.access.Store(&sc)
		} else {
			s = m.newServer(sc)
		}
		next = append(next, s)
		byID[sc.ID] = s
	}
	slices.SortFunc(next, func(a, b *server) int { return strings.Compare(a.cfg.Name, b.cfg.Name) })
	var retired []*server
	for _, s := range m.servers {
		if !kept[s] {
			retired = append(retired, s)
		}
	}
	m.servers, m.byID = next, byID
	m.cfgMu.Unlock()
	for _, s := range retired {
		m.retire(s)
	}
}

// sameConnection reports whether a and b differ at most in who may use
// the server.
func sameConnection(a, b Server) bool {
	a.Access, a.Users, b.Access, b.Users = "", nil, "", nil
	return reflect.DeepEqual(a, b)
}

// retire stops s's connection loop, closing its session, and waits for it.
func (m *Manager) retire(s *server) {
	m.mu.Lock()
	s.cancel()
	started := s.started
	m.mu.Unlock()
	s.set(sdk.MCPStateDisabled, "", "", nil)
	if started {
		<-s.stopped
	}
	s.closeUsers()
}

// snapshot is the current servers, sorted by name.
func (m *Manager) snapshot() []*server {
	m.cfgMu.RLock()
	defer m.cfgMu.RUnlock()
	return m.servers
}

// registerFailures registers the failure counter on r, reusing one a
// previous manager registered there.
func registerFailures(r prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chatd_mcp_server_failures_total",
		Help: "MCP server connection attempts that failed and connections that were lost, by server.",
	}, []string{"server"})
	if r == nil {
		return c
	}
	if err := r.Register(c); err != nil {
		var already prometheus.AlreadyRegisteredError
		if errors.As(err, &already) {
			if existing, ok := already.ExistingCollector.(*prometheus.CounterVec); ok {
				return existing
			}
		}
	}
	return c
}

// Has reports whether id is a configured server's id (disabled ones
// included).
func (m *Manager) Has(id uuid.UUID) bool {
	m.cfgMu.RLock()
	defer m.cfgMu.RUnlock()
	_, ok := m.byID[id]
	return ok
}

// Allows reports whether id is a configured server's id (disabled ones
// included) that u may use.
func (m *Manager) Allows(id uuid.UUID, u tools.User) bool {
	m.cfgMu.RLock()
	defer m.cfgMu.RUnlock()
	s, ok := m.byID[id]
	return ok && s.allows(u)
}

// Tools lists the tools of the servers named by ids (nil: every
// configured server; empty: none; unknown ids are ignored) that owner may
// use, sorted by name. It starts connecting servers not yet used and
// waits for those still connecting, at most the connect timeout and while
// ctx lasts. Servers that are failed or disabled are left out.
func (m *Manager) Tools(ctx context.Context, owner tools.User, ids []uuid.UUID) []tools.Tool {
	if ids != nil && len(ids) == 0 || m.ctx.Err() != nil {
		return nil // none asked for, or closed
	}
	var selected, perUser []*server
	for _, s := range m.snapshot() {
		if s.cfg.Disabled || ids != nil && !slices.Contains(ids, s.cfg.ID) || !s.allows(owner) {
			continue
		}
		if s.perUser() {
			perUser = append(perUser, s)
			continue
		}
		m.start(s)
		selected = append(selected, s)
	}
	m.awaitSettled(ctx, selected)
	var out []tools.Tool
	for _, s := range perUser {
		for _, t := range m.userTools(ctx, s, owner) {
			out = append(out, t)
		}
	}
	for _, s := range selected {
		s.mu.Lock()
		if s.state == sdk.MCPStateConnected {
			for _, t := range s.tools {
				out = append(out, t)
			}
		}
		s.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b tools.Tool) int { return strings.Compare(a.Name(), b.Name()) })
	return out
}

// awaitSettled waits until none of servers is connecting, at most the
// connect timeout and while ctx lasts. A server whose connection waits
// for a person's OAuth consent is not waited for: the consent may take
// hours, and the turn goes on without it.
func (m *Manager) awaitSettled(ctx context.Context, servers []*server) {
	var timer clock.Timer
	for _, s := range servers {
		for {
			s.mu.Lock()
			state, changed := s.state, s.changed
			s.mu.Unlock()
			if state != sdk.MCPStateConnecting || s.awaitsConsent() {
				break
			}
			if timer == nil {
				timer = m.clock.NewTimer(m.connectTimeout)
				defer timer.Stop()
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			case <-timer.C():
				return
			case <-s.ctx.Done():
				return
			}
		}
	}
}

// Status lists every configured server u may use, sorted by name, with
// its state and tools. It starts connecting servers not yet used and does
// not wait for them. It never shows a server's env, headers or args.
func (m *Manager) Status(_ context.Context, u tools.User) []sdk.MCPServer {
	servers := m.snapshot()
	out := make([]sdk.MCPServer, 0, len(servers))
	for _, s := range servers {
		if !s.allows(u) {
			continue
		}
		if s.perUser() {
			out = append(out, m.userStatus(s, u))
			continue
		}
		if !s.cfg.Disabled {
			m.start(s)
		}
		st := s.status()
		if u.Admin {
			s.authMu.Lock()
			st.Auth = s.auth.get()
			s.authMu.Unlock()
		}
		out = append(out, st)
	}
	return out
}

// statusOf is the status of the server with id, without connecting it.
func (m *Manager) statusOf(id uuid.UUID) (sdk.MCPServer, bool) {
	m.cfgMu.RLock()
	s, ok := m.byID[id]
	m.cfgMu.RUnlock()
	if !ok {
		return sdk.MCPServer{}, false
	}
	return s.status(), true
}

// status is s's state and tools.
func (s *server) status() sdk.MCPServer {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := sdk.MCPServer{ID: s.cfg.ID, Name: s.cfg.Name, Transport: s.transport, State: s.state, Tools: []sdk.MCPTool{}}
	if s.lastErr != "" {
		e := s.lastErr
		st.LastError = &e
	}
	if s.state == sdk.MCPStateConnected {
		st.Tools = mcpTools(s.tools)
	}
	return st
}

func mcpTools(list []*Tool) []sdk.MCPTool {
	out := []sdk.MCPTool{}
	for _, t := range list {
		out = append(out, sdk.MCPTool{
			Name: t.name, MCPName: t.mcpName, Description: t.desc, Effect: t.effect, EffectSource: t.effectSource,
		})
	}
	return out
}

// Test connects to sc afresh, lists its tools and disconnects, within the
// connect timeout and while ctx lasts. It shares nothing with the
// manager's connections.
func (m *Manager) Test(ctx context.Context, sc Server) sdk.MCPServerTest {
	s := m.newServer(sc)
	defer s.cancel()
	stop := context.AfterFunc(ctx, s.cancel)
	defer stop()
	c, err := m.connect(s, nil)
	if err != nil {
		msg := s.redact(err.Error())
		if ctx.Err() != nil {
			msg = "test cancelled: " + msg
		}
		return sdk.MCPServerTest{Error: &msg, Tools: []sdk.MCPTool{}}
	}
	defer c.close()
	return sdk.MCPServerTest{OK: true, Transport: c.transport, Tools: mcpTools(c.tools)}
}

// Close disconnects every server, stopping the stdio children, and waits
// for every goroutine the manager started.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
	m.cfgMu.RLock()
	servers := m.servers
	m.cfgMu.RUnlock()
	for _, s := range servers {
		s.closeUsers()
	}
	return nil
}

// start launches s's connection loop once. A per-user server has none:
// its connections are its users' (peruser.go).
func (m *Manager) start(s *server) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || s.ctx.Err() != nil || s.perUser() {
		return // closed, s was retired, or no shared connection
	}
	s.once.Do(func() {
		s.started = true
		m.wg.Add(1)
		go m.run(s)
	})
}

// run keeps s connected until Close or s is retired: it connects, serves
// the session until it ends, and reconnects with backoff.
func (m *Manager) run(s *server) {
	defer m.wg.Done()
	defer close(s.stopped)
	log := m.log.With("mcp_server", s.cfg.Name)
	failures := 0
	for s.ctx.Err() == nil {
		c, err := m.connect(s, nil)
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			m.failures.WithLabelValues(s.cfg.Name).Inc()
			log.Warn("MCP server failed to connect; its tools are left out", "err", err, "retry_in", m.backoff(failures))
			s.set(sdk.MCPStateFailed, s.redact(err.Error()), "", nil)
			if !m.sleep(s, m.backoff(failures)) {
				return
			}
			failures++
			continue
		}
		log.Info("MCP server connected", "transport", c.transport, "tools", len(c.tools))
		s.set(sdk.MCPStateConnected, "", c.transport, c)
		began := m.clock.Now()
		err = m.serve(s, c, log)
		if s.ctx.Err() != nil {
			c.close()
			return
		}
		if m.clock.Now().Sub(began) >= m.maxBackoff {
			failures = 0 // it had been up a while: this is not a crash loop
		}
		m.failures.WithLabelValues(s.cfg.Name).Inc()
		msg := "connection lost"
		if err != nil {
			msg += ": " + err.Error()
		}
		log.Warn("MCP server connection lost; reconnecting", "err", err, "retry_in", m.backoff(failures))
		// Tools waits for a server that is connecting: worth it after a
		// first loss, not for one that keeps dying.
		state := sdk.MCPStateConnecting
		if failures > 0 {
			state = sdk.MCPStateFailed
		}
		s.set(state, s.redact(msg), "", nil)
		c.close() // after set: no call picks the dead session up meanwhile
		if !m.sleep(s, m.backoff(failures)) {
			return
		}
		failures++
	}
}

// serve waits for the session to end or Close, and refreshes the tools
// on notifications/tools/list_changed.
func (m *Manager) serve(s *server, c *session, log *slog.Logger) error {
	for {
		select {
		case <-s.ctx.Done():
			return nil
		case <-c.done:
			return c.waitErr
		case <-s.refresh:
			ctx, cancel := m.bounded(s)
			list, err := m.listTools(ctx, s, c.cs)
			cancel()
			if err != nil {
				log.Warn("MCP server's tools/list failed after list_changed; keeping the previous tools", "err", err)
				continue
			}
			log.Info("MCP server's tools changed", "tools", len(list))
			s.mu.Lock()
			if s.session == c {
				s.tools = list
				s.notifyLocked()
			}
			s.mu.Unlock()
		}
	}
}

// bounded is a context of s's lifetime that ends after the connect
// timeout on the manager's clock.
func (m *Manager) bounded(s *server) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(s.ctx)
	stop := m.after(m.connectTimeout, func() { cancel(fmt.Errorf("no answer within %s", m.connectTimeout)) })
	return ctx, func() {
		stop()
		cancel(context.Canceled)
	}
}

// backoff is the wait before the attempt after n failures.
func (m *Manager) backoff(n int) time.Duration {
	d := m.minBackoff
	for range min(n, 30) {
		d *= 2
		if d >= m.maxBackoff {
			return m.maxBackoff
		}
	}
	return d
}

// sleep waits d on the manager's clock; false when Close or s's
// retirement came first.
func (m *Manager) sleep(s *server, d time.Duration) bool {
	t := m.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-s.ctx.Done():
		return false
	}
}

// server is one configured server and its connection state.
type server struct {
	// cfg is what the connection was made with; its access fields are
	// not read (access is).
	cfg Server
	// access holds the config whose access rule is in force: Apply
	// changes it without a reconnection.
	access  atomic.Pointer[Server]
	secrets *redact.Secrets
	once    sync.Once
	refresh chan struct{} // notifications/tools/list_changed, coalesced
	// ctx ends when the server is retired (Apply) or at Close; its
	// connection loop then ends and closes stopped, if it was started.
	ctx     context.Context
	cancel  context.CancelFunc
	started bool // under Manager.mu
	stopped chan struct{}

	calls inflight // chat tool calls running on the server

	authMu sync.Mutex
	auth   *serverAuth // a URL server's OAuth, made on first connect

	// usersMu guards users: the users' connections of a per-user server.
	usersMu sync.Mutex
	users   map[uuid.UUID]*userConn

	mu        sync.Mutex
	state     string
	transport string
	lastErr   string
	session   *session      // while connected
	tools     []*Tool       // while connected, sorted by name
	known     []*Tool       // a per-user server's tools as a user's session last listed them
	changed   chan struct{} // closed and replaced on every change
}

// allows reports whether u may use s's tools now.
func (s *server) allows(u tools.User) bool { return s.access.Load().Allows(u) }

// set records a state change and wakes the waiters. transport is kept
// when empty.
func (s *server) set(state, lastErr, transport string, c *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state, s.lastErr, s.session = state, lastErr, c
	s.tools = nil
	if c != nil {
		s.tools = c.tools
	}
	if transport != "" {
		s.transport = transport
	}
	s.notifyLocked()
}

// notifyLocked wakes everyone waiting for a change of s.
func (s *server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// poke asks for a tools/list refresh.
func (s *server) poke() {
	select {
	case s.refresh <- struct{}{}:
	default:
	}
}

// current returns the live session, waiting while the server is
// connecting (at most the connect timeout, while ctx lasts).
func (m *Manager) current(ctx context.Context, s *server) (*session, error) {
	m.start(s)
	m.awaitSettled(ctx, []*server{s})
	if m.ctx.Err() != nil {
		return nil, fmt.Errorf("MCP server %s: chatd is shutting down", s.cfg.Name)
	}
	if s.ctx.Err() != nil {
		return nil, fmt.Errorf("MCP server %s was removed or changed", s.cfg.Name)
	}
	consent := s.awaitsConsent()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session != nil {
		return s.session, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if consent {
		return nil, fmt.Errorf("MCP server %s needs authorization: an admin connects it in Settings, MCP servers", s.cfg.Name)
	}
	msg := s.state
	if s.lastErr != "" {
		msg += ": " + s.lastErr
	}
	return nil, fmt.Errorf("MCP server %s is not connected (%s)", s.cfg.Name, msg)
}

// awaitsConsent reports whether the server's connection waits for a
// person to complete its OAuth authorization (status needs_authorization).
func (s *server) awaitsConsent() bool {
	s.authMu.Lock()
	a := s.auth
	s.authMu.Unlock()
	return a != nil && a.waiting.Load()
}

// redact removes the configured URL's credentials and query from a
// message that is shown to users, in whatever form the message spells
// the URL, and every secret chatd knows (the env and header values).
func (s *server) redact(msg string) string {
	return s.secrets.Text(s.redactURL(msg))
}

// redactURL is redact for the configured URL alone.
func (s *server) redactURL(msg string) string {
	if s.cfg.URL == "" {
		return msg
	}
	clean := redactURL(s.cfg.URL)
	msg = strings.ReplaceAll(msg, s.cfg.URL, clean)
	p, err := url.Parse(s.cfg.URL)
	if err != nil {
		return msg
	}
	msg = strings.ReplaceAll(msg, p.Redacted(), clean)
	if p.RawQuery != "" {
		msg = strings.ReplaceAll(msg, "?"+p.RawQuery, "")
		msg = strings.ReplaceAll(msg, p.RawQuery, "")
	}
	if pw, ok := p.User.Password(); ok && pw != "" {
		msg = strings.ReplaceAll(msg, pw, "***")
	}
	return msg
}
