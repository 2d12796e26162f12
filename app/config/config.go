// Package config is chatd's configuration: the Config struct app.New
// takes, its Default constants, and the settings table (settings.go) that
// fills it from CHATD_* variables and `chatd serve` flags and generates
// docs/configuration.md.
package config

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/chatd/chatd/app/api"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/files"
	"github.com/chatd/chatd/app/projects"
	"github.com/chatd/chatd/app/schedules"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/app/webhooks"
	"github.com/chatd/chatd/app/worker"
	"github.com/chatd/chatd/store"
)

// Defaults for Config's zero values.
const (
	DefaultAddr = "127.0.0.1:8080"
	DefaultDB   = "./chatd.db"
	// DefaultShutdownTimeout bounds a graceful shutdown (SIGTERM): the
	// in-flight requests and, on SQLite, the turns still running.
	DefaultShutdownTimeout   = 30 * time.Second
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout bounds reading one request, body included.
	DefaultReadTimeout = 60 * time.Second
	// DefaultWriteTimeout bounds handling one request and writing its
	// answer; the WebSocket streams are exempt.
	DefaultWriteTimeout = 60 * time.Second
	// DefaultIdleTimeout closes a keep-alive connection idle this long.
	DefaultIdleTimeout = 120 * time.Second
	// DefaultMaxUnauthConnsPerIP caps the connections one client address
	// may hold open before authenticating.
	DefaultMaxUnauthConnsPerIP = 32
)

// Config is everything chatd needs to start. Zero values take the Default
// constants; FromEnv fills it from CHATD_* variables, and `chatd serve`
// from its flags, both as the settings table (settings.go) says.
type Config struct {
	// Addr is the HTTP listen address.
	Addr string
	// DB is a SQLite file path, or a postgres:// (postgresql://) URL.
	DB string
	// ShutdownTimeout bounds a graceful shutdown (Run after its context
	// ends; App.Shutdown): in-flight HTTP requests finish, and on SQLite
	// running turns may finish, within it (default DefaultShutdownTimeout;
	// CHATD_SHUTDOWN_TIMEOUT).
	ShutdownTimeout time.Duration
	// ReadTimeout, WriteTimeout and IdleTimeout are the HTTP server's
	// (defaults DefaultReadTimeout, DefaultWriteTimeout, DefaultIdleTimeout;
	// negative: none). The WebSocket streams are exempt from the first two.
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxUnauthConnsPerIP caps the connections per client IP that have not
	// yet carried an authenticated request; more are answered 429
	// TOO_MANY_CONNECTIONS and closed (default DefaultMaxUnauthConnsPerIP;
	// negative: unlimited). Behind a reverse proxy every client has the
	// proxy's address: raise it or turn it off there.
	MaxUnauthConnsPerIP int
	// StreamPingInterval and StreamPongTimeout pace the pings of every
	// WebSocket (viewer streams, relay and parts connections); zero takes
	// stream.PingInterval and stream.WriteTimeout.
	StreamPingInterval, StreamPongTimeout time.Duration
	// BootstrapToken, when set, is the admin user's token (automation,
	// tests); a start with a different one revokes the previous one.
	BootstrapToken string
	// FirstTokenOut receives, once and outside the log, the admin's API
	// token that a first start without BootstrapToken creates (`chatd
	// serve` passes its stderr when that is a terminal). Nil: the token is
	// written nowhere; `chatd token create --user admin` makes another.
	FirstTokenOut io.Writer
	// SessionTTL: a web session ends when unused this long (sliding;
	// default auth.DefaultSessionTTL, 7 days; auth.NoExpiry: never).
	SessionTTL time.Duration
	// Models are extra "provider/model" names; the demo model is always there.
	Models []string
	// DefaultModel is the default model ("demo" or "provider/model").
	DefaultModel string
	// QueueLimit caps queued messages per chat (default 20).
	QueueLimit int
	// MaxBodyBytes caps request bodies (default 1 MiB).
	MaxBodyBytes int64
	// MaxTextBytes caps the text of one message (default 64 KiB).
	MaxTextBytes int
	// RequiresActionTimeout is how long dynamic tool calls wait (default 5m).
	RequiresActionTimeout time.Duration
	// Limits are the per-user rates and quotas. Unlike the other fields,
	// zero means unlimited here (tests, benchmarks); FromEnv fills in the
	// api.Default... values for variables that are unset.
	Limits api.Limits
	// Clock is the app's one time source; clock.Real when nil (tests pass
	// a clock.Fake).
	Clock clock.Clock

	// Providers. OpenAI-compatible servers (Ollama, vLLM, llama.cpp, LM
	// Studio) take OpenAIBaseURL.
	OpenAIAPIKey     string
	OpenAIBaseURL    string
	AnthropicAPIKey  string
	AnthropicBaseURL string
	// SecretKey seals provider API keys at rest (AES-256-GCM with its
	// SHA-256); New reads a key file next to the SQLite database when it
	// is empty and refuses PostgreSQL without one. SecretKeyPrevious, during
	// a rotation, opens keys sealed before; they are sealed again at start.
	SecretKey, SecretKeyPrevious string
	// ModelCacheTTL bounds how long a replica serves its cached model
	// configuration without a change hint (modelconfig.DefaultCacheTTL).
	ModelCacheTTL time.Duration
	// DemoTokenDelay paces the demo model's tokens (0 = its default).
	DemoTokenDelay time.Duration

	// Files are the attachment limits (zero fields: files.Default...).
	Files files.Config
	// Projects are the per-user caps of projects and memories (zero
	// fields: projects.Default...; negative: unlimited).
	Projects projects.Limits
	// Schedules and Webhooks tune scheduled prompts and completion
	// webhooks (zero fields: their Defaults).
	Schedules schedules.Config
	Webhooks  webhooks.Config

	// Worker tunes the chat worker (limits, retries, intervals).
	Worker worker.Config
	// NoWorker runs the API without a chat worker (tests of the API alone).
	NoWorker bool
	// AdvertiseURL is how other replicas reach this one (Postgres mode);
	// http://<listen address> when empty.
	AdvertiseURL string
	// StreamPollInterval is the stream sync poller's period (default 10 s).
	StreamPollInterval time.Duration
	// StreamAuthInterval is how often an open stream re-checks its
	// credential (api.DefaultStreamAuthInterval when zero).
	StreamAuthInterval time.Duration
	// BuiltinTools offers the pure built-in tool current_time.
	BuiltinTools bool
	// WebhookURL enables the effectful built-in tool send_webhook.
	WebhookURL string
	// Tools adds server-side tools (tests register their own).
	Tools []tools.Tool
	// HookURL, when set, turns lifecycle hooks on: events are POSTed there,
	// signed with HookSecret (required with it).
	HookURL    string
	HookSecret string
	// HookMaxConcurrent caps concurrent hook dispatches of this replica
	// (hooks.DefaultMaxConcurrent when zero); half is reserved for work
	// chats already admitted.
	HookMaxConcurrent int
	// MCPConfig is the path of an mcpServers JSON file whose MCP servers'
	// tools the chats may use (none when empty). A bad file stops startup.
	MCPConfig string
	// MCPResyncInterval is how often the stored MCP servers are read again
	// without a change notification (mcp.DefaultResyncInterval, 30 s, when
	// zero): with several replicas, a lost hint delays an edit at most this.
	MCPResyncInterval time.Duration
	// MCPElicitationTimeout is how long an MCP server's question to a
	// chat's person waits for an answer before it is answered "cancel"
	// (elicit.DefaultTimeout, 10 min, when zero).
	MCPElicitationTimeout time.Duration

	// CookieSecure is when the session cookie is Secure: auto (default:
	// behind HTTPS), true or false.
	CookieSecure string
	// TrustedProxies lists the proxies (CIDRs or addresses, comma-separated)
	// whose X-Forwarded-Proto is believed; none by default.
	TrustedProxies string
	// MetricsAddr, when set, serves /metrics there without auth (for
	// scrapers); the main address serves it to admins only.
	MetricsAddr string
	// LogFormat is the log line format: text (default) or json. Any
	// other value stops startup.
	LogFormat string
	// Pprof serves the runtime profiles under /debug/pprof/ to admins on
	// the main address; off by default.
	Pprof bool
	// TracerProvider receives the worker's stage spans. Nil: tracing is
	// set up from the standard OTEL_* variables (off unless
	// OTEL_EXPORTER_OTLP_ENDPOINT or its _TRACES_ variant is set; see
	// app/telemetry). Tests pass an SDK provider with an in-memory exporter.
	TracerProvider trace.TracerProvider
	// MeterProvider receives the GenAI metrics (gen_ai.client.*). With
	// TracerProvider nil too, both come from the OTEL_* variables.
	MeterProvider metric.MeterProvider

	// Budget defaults: every user's limits unless an admin set their own
	// (0 or "": no limit of that kind). Costs are decimals in the currency
	// of the model configs' prices.
	BudgetTokensPerDay   int64
	BudgetTokensPerMonth int64
	BudgetCostPerDay     string
	BudgetCostPerMonth   string
}

// Budget is the default budget of the Budget settings.
func (c Config) Budget() (store.Budget, error) {
	var b store.Budget
	if c.BudgetTokensPerDay > 0 {
		b.TokensPerDay = &c.BudgetTokensPerDay
	}
	if c.BudgetTokensPerMonth > 0 {
		b.TokensPerMonth = &c.BudgetTokensPerMonth
	}
	for _, f := range []struct {
		env, v string
		dst    **float64
	}{{"CHATD_BUDGET_COST_PER_DAY", c.BudgetCostPerDay, &b.CostPerDay}, {"CHATD_BUDGET_COST_PER_MONTH", c.BudgetCostPerMonth, &b.CostPerMonth}} {
		if strings.TrimSpace(f.v) == "" {
			continue
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(f.v), 64)
		if err != nil || n < 0 || math.IsInf(n, 0) {
			return b, fmt.Errorf("%s=%q: want a decimal number, not negative", f.env, f.v)
		}
		if n > 0 {
			*f.dst = &n
		}
	}
	return b, nil
}

// Log formats (Config.LogFormat).
const (
	LogFormatText = "text"
	LogFormatJSON = "json"
)

// NewLogger returns the app's logger writing to out in format (text when
// empty); an unknown format is an error.
func NewLogger(format string, out io.Writer) (*slog.Logger, error) {
	switch format {
	case "", LogFormatText:
		return slog.New(slog.NewTextHandler(out, nil)), nil
	case LogFormatJSON:
		return slog.New(slog.NewJSONHandler(out, nil)), nil
	}
	return nil, fmt.Errorf("log format %q: want %s or %s", format, LogFormatText, LogFormatJSON)
}

// CheckLeases refuses lease settings that cannot work: each must be
// positive, and a lease must outlive the heartbeat that renews it, or
// every chat would look abandoned between two renewals and replicas would
// take it from each other.
func CheckLeases(w worker.Config) error {
	orDefault := func(d, def time.Duration) time.Duration {
		if d == 0 {
			return def
		}
		return d
	}
	heartbeat := orDefault(w.HeartbeatInterval, worker.DefaultHeartbeatInterval)
	lease := orDefault(w.LeaseTimeout, worker.DefaultLeaseTimeout)
	for _, s := range []struct {
		name string
		d    time.Duration
	}{
		{"CHATD_HEARTBEAT_INTERVAL", heartbeat},
		{"CHATD_LEASE_TIMEOUT", lease},
		{"CHATD_ACQUIRE_INTERVAL", orDefault(w.AcquireInterval, worker.DefaultAcquireInterval)},
	} {
		if s.d < 0 {
			return fmt.Errorf("%s: want a positive Go duration such as 9s", s.name)
		}
	}
	if lease <= heartbeat {
		return fmt.Errorf("CHATD_LEASE_TIMEOUT (%s) must exceed CHATD_HEARTBEAT_INTERVAL (%s): a lease renewed less often than it lasts goes stale while its replica is alive (the defaults are %s and %s)",
			lease, heartbeat, worker.DefaultLeaseTimeout, worker.DefaultHeartbeatInterval)
	}
	return nil
}

// WithDefaults is c with its zero values replaced by the Default
// constants (Limits excepted: zero is unlimited there).
func (c Config) WithDefaults() Config {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.DB == "" {
		c.DB = DefaultDB
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.MaxUnauthConnsPerIP == 0 {
		c.MaxUnauthConnsPerIP = DefaultMaxUnauthConnsPerIP
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	return c
}
