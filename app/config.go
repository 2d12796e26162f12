package app

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"go.opentelemetry.io/otel/trace"

	"github.com/chatd/chatd/app/api"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/files"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/app/worker"
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
// constants; FromEnv fills it from CHATD_* variables.
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

	// Worker tunes the chat worker (limits, retries, intervals).
	Worker worker.Config
	// NoWorker runs the API without a chat worker (tests of the API alone).
	NoWorker bool
	// AdvertiseURL is how other replicas reach this one (Postgres mode);
	// http://<listen address> when empty.
	AdvertiseURL string
	// StreamPollInterval is the stream sync poller's period (default 10 s).
	StreamPollInterval time.Duration
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

// FromEnv returns a Config filled from the environment.
func FromEnv() Config {
	c := Config{
		Addr:           os.Getenv("CHATD_ADDR"),
		DB:             os.Getenv("CHATD_DB"),
		BootstrapToken: os.Getenv("CHATD_BOOTSTRAP_TOKEN"),
		DefaultModel:   os.Getenv("CHATD_DEFAULT_MODEL"),
	}
	if v := os.Getenv("CHATD_MODELS"); v != "" {
		c.Models = strings.Split(v, ",")
	}
	c.QueueLimit, _ = strconv.Atoi(os.Getenv("CHATD_QUEUE_LIMIT"))
	c.MaxBodyBytes, _ = strconv.ParseInt(os.Getenv("CHATD_MAX_BODY_BYTES"), 10, 64)
	c.MaxTextBytes, _ = strconv.Atoi(os.Getenv("CHATD_MAX_TEXT_BYTES"))
	c.RequiresActionTimeout, _ = time.ParseDuration(os.Getenv("CHATD_REQUIRES_ACTION_TIMEOUT"))
	c.AdvertiseURL = os.Getenv("CHATD_ADVERTISE_URL")
	if v := os.Getenv("CHATD_SESSION_TTL"); v != "" {
		// An unparsable value keeps the default rather than disabling expiry.
		if d, err := time.ParseDuration(v); err == nil {
			c.SessionTTL = d
			if d <= 0 {
				c.SessionTTL = auth.NoExpiry // 0 means unlimited
			}
		}
	}
	c.WebhookURL = os.Getenv("CHATD_WEBHOOK_URL")
	c.MCPConfig = os.Getenv("CHATD_MCP_CONFIG")
	c.MCPResyncInterval, _ = time.ParseDuration(os.Getenv("CHATD_MCP_RESYNC_INTERVAL"))
	c.HookURL, c.HookSecret = os.Getenv("CHATD_HOOK_URL"), os.Getenv("CHATD_HOOK_SECRET")
	c.HookMaxConcurrent = envLimit("CHATD_HOOK_MAX_CONCURRENT", 0)
	c.CookieSecure = os.Getenv("CHATD_COOKIE_SECURE")
	c.TrustedProxies = os.Getenv("CHATD_TRUSTED_PROXIES")
	c.MetricsAddr = os.Getenv("CHATD_METRICS_ADDR")
	c.LogFormat = os.Getenv("CHATD_LOG_FORMAT")
	c.Pprof, _ = strconv.ParseBool(os.Getenv("CHATD_PPROF"))
	c.BuiltinTools, _ = strconv.ParseBool(os.Getenv("CHATD_BUILTIN_TOOLS"))
	c.OpenAIAPIKey, c.OpenAIBaseURL = os.Getenv("OPENAI_API_KEY"), os.Getenv("OPENAI_BASE_URL")
	c.AnthropicAPIKey, c.AnthropicBaseURL = os.Getenv("ANTHROPIC_API_KEY"), os.Getenv("ANTHROPIC_BASE_URL")
	c.SecretKey, c.SecretKeyPrevious = os.Getenv("CHATD_SECRET_KEY"), os.Getenv("CHATD_SECRET_KEY_PREVIOUS")
	c.ModelCacheTTL, _ = time.ParseDuration(os.Getenv("CHATD_MODEL_CACHE_TTL"))
	c.Worker.RootLimit, _ = strconv.Atoi(os.Getenv("CHATD_MAX_ROOT_CHATS"))
	c.Worker.SubagentLimit, _ = strconv.Atoi(os.Getenv("CHATD_MAX_SUBAGENT_CHATS"))
	c.Worker.MaxRetries, _ = strconv.Atoi(os.Getenv("CHATD_MAX_GENERATION_RETRIES"))
	c.Worker.MaxSteps, _ = strconv.Atoi(os.Getenv("CHATD_MAX_STEPS_PER_TURN"))
	c.Worker.ToolApproval = os.Getenv("CHATD_TOOL_APPROVAL")
	c.Worker.CompactThresholdPercent, _ = strconv.Atoi(os.Getenv("CHATD_COMPACT_THRESHOLD_PERCENT"))
	c.Worker.AutoArchiveDays = envLimit("CHATD_AUTO_ARCHIVE_DAYS", 0)
	// On unless CHATD_SUBAGENTS says false (a model that refuses any
	// request offering tools needs it off).
	c.Worker.Subagents = true
	if v, err := strconv.ParseBool(os.Getenv("CHATD_SUBAGENTS")); err == nil {
		c.Worker.Subagents = v
	}
	c.Worker.MaxAgentDepth = envLimit("CHATD_MAX_AGENT_DEPTH", 0) // 0: the default
	c.Files.MaxFileBytes, _ = strconv.ParseInt(os.Getenv("CHATD_MAX_FILE_BYTES"), 10, 64)
	c.Files.QuotaBytes, _ = strconv.ParseInt(os.Getenv("CHATD_FILE_QUOTA_BYTES"), 10, 64)
	c.Files.Retention, _ = time.ParseDuration(os.Getenv("CHATD_FILE_RETENTION"))
	c.Files.MaxPerChat, _ = strconv.Atoi(os.Getenv("CHATD_MAX_FILES_PER_CHAT"))
	c.Limits = api.Limits{
		WritesPerMinute:      envLimit("CHATD_WRITES_PER_MINUTE", api.DefaultWritesPerMinute),
		LoginsPerMinute:      envLimit("CHATD_LOGINS_PER_MINUTE", api.DefaultLoginsPerMinute),
		MaxChatsPerUser:      envLimit("CHATD_MAX_CHATS_PER_USER", api.DefaultMaxChatsPerUser),
		MaxStreamsPerUser:    envLimit("CHATD_MAX_STREAMS_PER_USER", api.DefaultMaxStreamsPerUser),
		MaxDynamicTools:      envLimit("CHATD_MAX_DYNAMIC_TOOLS", api.DefaultMaxDynamicTools),
		MaxSystemPromptBytes: envLimit("CHATD_MAX_SYSTEM_PROMPT_BYTES", api.DefaultMaxSystemPromptBytes),
	}
	c.ReadTimeout = envTimeout("CHATD_READ_TIMEOUT")
	c.WriteTimeout = envTimeout("CHATD_WRITE_TIMEOUT")
	c.IdleTimeout = envTimeout("CHATD_IDLE_TIMEOUT")
	// Graceful shutdown (drain): unset, unparsable or not positive keeps
	// the default.
	if d, err := time.ParseDuration(os.Getenv("CHATD_SHUTDOWN_TIMEOUT")); err == nil && d > 0 {
		c.ShutdownTimeout = d
	}
	c.StreamPingInterval, _ = time.ParseDuration(os.Getenv("CHATD_STREAM_PING_INTERVAL"))
	c.StreamPongTimeout, _ = time.ParseDuration(os.Getenv("CHATD_STREAM_PONG_TIMEOUT"))
	if v := os.Getenv("CHATD_MAX_UNAUTH_CONNS_PER_IP"); v != "" {
		c.MaxUnauthConnsPerIP, _ = strconv.Atoi(v)
		if c.MaxUnauthConnsPerIP == 0 {
			c.MaxUnauthConnsPerIP = -1 // 0 in the environment: unlimited
		}
	}
	return c
}

// envLimit reads a limit: def when the variable is unset (or not a
// non-negative number), and 0, unlimited, when it says so.
func envLimit(name string, def int) int {
	n, err := strconv.Atoi(os.Getenv(name))
	if err != nil || n < 0 {
		return def
	}
	return n
}

// envTimeout reads a duration variable: unset or unparsable is 0 (the
// default), and "0" means no timeout (negative in Config).
func envTimeout(name string) time.Duration {
	d, err := time.ParseDuration(os.Getenv(name))
	if err != nil {
		return 0
	}
	if d == 0 {
		return -1
	}
	return d
}

// orNone is a Config timeout for http.Server, where 0 is none.
func orNone(d time.Duration) time.Duration { return max(d, 0) }

func (c Config) withDefaults() Config {
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

// IsPostgres reports whether db names a PostgreSQL database.
func IsPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://") ||
		strings.Contains(db, "dbname=") // a keyword/value DSN: host=... dbname=...
}

// describeDB is the DB for logs, without credentials.
func describeDB(db string) string {
	if !IsPostgres(db) {
		return "sqlite " + db
	}
	cfg, err := pgconn.ParseConfig(db)
	if err != nil {
		return "postgres (unparsable DSN)"
	}
	return fmt.Sprintf("postgres host=%s port=%d dbname=%s user=%s", cfg.Host, cfg.Port, cfg.Database, cfg.User)
}
