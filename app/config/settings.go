package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/chatd/chatd/app/api"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/elicit"
	"github.com/chatd/chatd/app/files"
	"github.com/chatd/chatd/app/hooks"
	"github.com/chatd/chatd/app/llm/anthropic"
	"github.com/chatd/chatd/app/llm/openai"
	"github.com/chatd/chatd/app/mcp"
	"github.com/chatd/chatd/app/modelconfig"
	"github.com/chatd/chatd/app/projects"
	"github.com/chatd/chatd/app/schedules"
	"github.com/chatd/chatd/app/stream"
	"github.com/chatd/chatd/app/webhooks"
	"github.com/chatd/chatd/app/worker"
)

// Kind is the type of a setting's value, from its Config field.
type Kind string

// The kinds of settings.
const (
	KindString   Kind = "string"
	KindInt      Kind = "int"
	KindInt64    Kind = "int64"
	KindBool     Kind = "bool"
	KindDuration Kind = "duration"
	// KindList is comma-separated strings.
	KindList Kind = "list"
)

// Setting is one operator setting of `chatd serve`: a flag, an environment
// variable, a default, a line of --help and a row of docs/configuration.md's
// Configuration table, all from this one description (the table settings).
type Setting struct {
	// Flag is the flag's name without dashes ("queue-limit"), also the
	// setting's name: Env in lower case without CHATD_, '_' as '-'.
	Flag string
	// Env is the environment variable ("CHATD_QUEUE_LIMIT").
	Env string
	// Field is where the value lands in Config ("Worker.MaxRetries"); the
	// field's type gives the Kind.
	Field string
	// Default is the value in effect when neither the flag nor the
	// variable is given, written as one would give it. Unless Preset,
	// Config's zero value already means it: the component that reads the
	// field applies the same Default constant.
	Default string
	// Shown replaces Default where a default is shown, when the default is
	// not a literal value ("http://<listen address>").
	Shown string
	// Preset: FromEnv stores Default when the variable is unset, as
	// Config's zero value means something else (zero Limits are unlimited).
	Preset bool
	// ZeroOff: a given 0 means none or unlimited, stored as -1 because
	// Config's zero is the default.
	ZeroOff bool
	// Negative: a negative number is accepted (none, like ZeroOff's -1);
	// otherwise it is refused.
	Negative bool
	// Secret: --help prints neither its default nor its value and points
	// to the environment, as flags show in process listings.
	Secret bool
	// Usage is the one-line description (Markdown code spans allowed).
	Usage string
	// More is what docs/configuration.md adds to Usage (Markdown), after a space
	// unless it starts with ';'.
	More string
}

// Settings returns the table of settings, in --help and docs/configuration.md order.
func Settings() []Setting { return append([]Setting(nil), settings...) }

// dur writes a default duration the short way: 5m, not 5m0s.
func dur(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func itoa[T ~int | ~int64](n T) string { return strconv.FormatInt(int64(n), 10) }

// settings is the one table. Add a setting here and everything else (the
// environment, the flags, --help, the docs table) follows.
var settings = []Setting{
	{Flag: "addr", Env: "CHATD_ADDR", Field: "Addr", Default: DefaultAddr,
		Usage: "HTTP listen address"},
	{Flag: "db", Env: "CHATD_DB", Field: "DB", Default: DefaultDB,
		Usage: "a SQLite file, or a `postgres://` URL / `host=… dbname=…` DSN"},
	{Flag: "bootstrap-token", Env: "CHATD_BOOTSTRAP_TOKEN", Field: "BootstrapToken", Secret: true,
		Usage: "ensure an admin user named `admin` whose token is exactly this (automation, tests); starting with a different one revokes the previous one",
		More:  "(unsetting it revokes nothing)"},
	{Flag: "session-ttl", Env: "CHATD_SESSION_TTL", Field: "SessionTTL", Default: dur(auth.DefaultSessionTTL), ZeroOff: true, Negative: true,
		Usage: "a web session (login cookie) ends when unused this long, each use sliding it; `0`: sessions never expire",
		More:  "(last use is written at most once a minute, or a tenth of the TTL if shorter); API tokens do not expire unless created with `--expires`"},
	{Flag: "openai-api-key", Env: "OPENAI_API_KEY", Field: "OpenAIAPIKey", Secret: true,
		Usage: "enable the OpenAI-compatible provider (`openai/<model>`) with this key"},
	{Flag: "openai-base-url", Env: "OPENAI_BASE_URL", Field: "OpenAIBaseURL", Default: openai.DefaultBaseURL,
		Usage: "the OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio); set, it enables the provider without a key"},
	{Flag: "anthropic-api-key", Env: "ANTHROPIC_API_KEY", Field: "AnthropicAPIKey", Secret: true,
		Usage: "enable the Anthropic provider (`anthropic/<model>`) with this key"},
	{Flag: "anthropic-base-url", Env: "ANTHROPIC_BASE_URL", Field: "AnthropicBaseURL", Default: anthropic.DefaultBaseURL,
		Usage: "the Anthropic API's address; set, it enables the provider without a key"},
	{Flag: "default-model", Env: "CHATD_DEFAULT_MODEL", Field: "DefaultModel", Shown: "`demo` (or the first configured)",
		Usage: "the model of chats that name none, e.g. `openai/gpt-4.1-mini`, `anthropic/claude-sonnet-4-5`, `demo`"},
	{Flag: "models", Env: "CHATD_MODELS", Field: "Models",
		Usage: "more models, comma-separated `provider/model`"},
	{Flag: "secret-key", Env: "CHATD_SECRET_KEY", Field: "SecretKey", Secret: true,
		Shown: "a key file `<CHATD_DB>.secret-key` next to the database's real path (mode 0600, created on first start) on SQLite; **required** on PostgreSQL",
		Usage: "the key that seals provider API keys and MCP servers' env and header values in the database (AES-256-GCM with its SHA-256); every replica needs the same one; a key that opens none of the sealed secrets stops startup",
		More:  "(e.g. `openssl rand -base64 32`); see [rotation](API.md#secret-key-rotation)"},
	{Flag: "secret-key-previous", Env: "CHATD_SECRET_KEY_PREVIOUS", Field: "SecretKeyPrevious", Secret: true,
		Usage: "during a rotation, the old key: keys sealed with it still open, and the start seals them again with `CHATD_SECRET_KEY`"},
	{Flag: "model-cache-ttl", Env: "CHATD_MODEL_CACHE_TTL", Field: "ModelCacheTTL", Default: dur(modelconfig.DefaultCacheTTL),
		Usage: "how long a replica serves its cached model configuration without a change hint from another replica",
		More:  "(hints travel over pubsub; this bounds a lost one)"},
	{Flag: "queue-limit", Env: "CHATD_QUEUE_LIMIT", Field: "QueueLimit", Default: itoa(chatstate.DefaultQueueLimit),
		Usage: "queued messages per chat (429 `QUEUE_FULL` beyond)"},
	{Flag: "max-body-bytes", Env: "CHATD_MAX_BODY_BYTES", Field: "MaxBodyBytes", Default: itoa(api.DefaultMaxBodyBytes),
		Usage: "request body limit (413 `TOO_LARGE`)"},
	{Flag: "max-text-bytes", Env: "CHATD_MAX_TEXT_BYTES", Field: "MaxTextBytes", Default: itoa(api.DefaultMaxTextBytes),
		Usage: "text per message (413 `TOO_LARGE`)"},
	{Flag: "max-file-bytes", Env: "CHATD_MAX_FILE_BYTES", Field: "Files.MaxFileBytes", Default: itoa(files.DefaultMaxFileBytes),
		Usage: "one uploaded file (413 `TOO_LARGE`); the upload routes take bodies this large, the others keep `CHATD_MAX_BODY_BYTES`",
		More:  "(see [Files](API.md#files))"},
	{Flag: "file-quota-bytes", Env: "CHATD_FILE_QUOTA_BYTES", Field: "Files.QuotaBytes", Default: itoa(files.DefaultQuotaBytes),
		Usage: "all of a user's uploaded files together (409 `FILE_QUOTA_EXCEEDED`)"},
	{Flag: "file-retention", Env: "CHATD_FILE_RETENTION", Field: "Files.Retention", Default: dur(files.DefaultRetention),
		Usage: "an uploaded file no chat references is removed this long after its upload",
		More:  "(the worker checks every " + dur(worker.DefaultFileRetentionInterval) + ")"},
	{Flag: "max-files-per-chat", Env: "CHATD_MAX_FILES_PER_CHAT", Field: "Files.MaxPerChat", Default: itoa(files.DefaultMaxPerChat),
		Usage: "files a chat holds; a new message's files evict the chat's earliest uploads beyond it"},
	{Flag: "requires-action-timeout", Env: "CHATD_REQUIRES_ACTION_TIMEOUT", Field: "RequiresActionTimeout", Default: dur(chatstate.DefaultRequiresActionTimeout),
		Usage: "how long a dynamic tool call waits for its result"},
	{Flag: "max-root-chats", Env: "CHATD_MAX_ROOT_CHATS", Field: "Worker.RootLimit", Default: itoa(worker.DefaultRootLimit),
		Usage: "concurrently running root chats in the whole deployment, every replica together on PostgreSQL (the rest wait for a slot)"},
	{Flag: "max-subagent-chats", Env: "CHATD_MAX_SUBAGENT_CHATS", Field: "Worker.SubagentLimit", Default: itoa(worker.DefaultSubagentLimit),
		Usage: "concurrently running subagent chats in the whole deployment, every replica together on PostgreSQL (the rest wait for a slot)"},
	{Flag: "subagents", Env: "CHATD_SUBAGENTS", Field: "Worker.Subagents", Default: "true", Preset: true,
		Usage: "offer root chats the subagent tools (`spawn_agent`, `wait_agent`, …); `false` for a model that refuses any request offering tools",
		More:  "(see API.md \"Subagent tools\")"},
	{Flag: "max-agent-depth", Env: "CHATD_MAX_AGENT_DEPTH", Field: "Worker.MaxAgentDepth", Default: itoa(worker.DefaultMaxAgentDepth),
		Usage: "how deep subagent families grow: a chat is offered the agent tools while its children would be at most this deep",
		More:  "(1 lets root chats spawn and their children not)"},
	{Flag: "max-generation-retries", Env: "CHATD_MAX_GENERATION_RETRIES", Field: "Worker.MaxRetries", Default: itoa(worker.DefaultMaxRetries),
		Usage: "retryable provider failures before the chat stops in error"},
	{Flag: "max-steps-per-turn", Env: "CHATD_MAX_STEPS_PER_TURN", Field: "Worker.MaxSteps", Default: itoa(worker.DefaultMaxSteps),
		Usage: "assistant steps per turn"},
	{Flag: "compact-threshold-percent", Env: "CHATD_COMPACT_THRESHOLD_PERCENT", Field: "Worker.CompactThresholdPercent", Default: itoa(worker.DefaultCompactThresholdPercent),
		Usage: "automatic compaction when usage reaches this % of the model's window (100 disables)"},
	{Flag: "auto-archive-days", Env: "CHATD_AUTO_ARCHIVE_DAYS", Field: "Worker.AutoArchiveDays", Default: "0",
		Usage: "archive, once an hour, every unpinned idle root chat family unused for this many days; `0`: off",
		More: "(the root and its subagent chats: not running, interrupting or requires_action, created before 00:00 UTC this many days ago and without a message since); " +
			"unarchiving a chat does not count as use, so it is archived again on the next tick unless it gets a message"},
	{Flag: "builtin-tools", Env: "CHATD_BUILTIN_TOOLS", Field: "BuiltinTools", Default: "false",
		Usage: "offer the pure server-side tool `current_time`"},
	{Flag: "webhook-url", Env: "CHATD_WEBHOOK_URL", Field: "WebhookURL",
		Usage: "offer the effectful server-side tool `send_webhook`, which POSTs to this URL"},
	{Flag: "tool-approval", Env: "CHATD_TOOL_APPROVAL", Field: "Worker.ToolApproval", Default: "never",
		Usage: "approval policy of the built-in server tools: `never`, `effectful` (`send_webhook` waits for a person's approval) or `always`; another value stops startup",
		More:  "; MCP tools take theirs from the MCP config (see [Tools](tools.md))"},
	{Flag: "hook-url", Env: "CHATD_HOOK_URL", Field: "HookURL",
		Usage: "turn lifecycle hooks on: POST the events to this URL, signed with `CHATD_HOOK_SECRET` (required with it); off when empty",
		More: "; the events: `session_start`, `user_prompt_submit`, `pre_tool_use`, `post_tool_use`, `pre_compact`, `post_compact`, `stop`, signed per Standard Webhooks; " +
			"the consumer may deny a prompt or a tool call, replace the prompt or the call's input, or add context; a consumer that is down or answers garbage " +
			"refuses the prompt (503/502, nothing written) or stops the chat in error (fail closed); see [API.md](API.md#lifecycle-hooks)"},
	{Flag: "hook-secret", Env: "CHATD_HOOK_SECRET", Field: "HookSecret", Secret: true,
		Usage: "the hooks' signing secret (base64, optionally `whsec_`-prefixed)"},
	{Flag: "hook-max-concurrent", Env: "CHATD_HOOK_MAX_CONCURRENT", Field: "HookMaxConcurrent", Default: itoa(hooks.DefaultMaxConcurrent),
		Usage: "hook dispatches in flight per replica; half are reserved for work chats already admitted (at least 2)"},
	{Flag: "budget-tokens-per-day", Env: "CHATD_BUDGET_TOKENS_PER_DAY", Field: "BudgetTokensPerDay", Shown: "none",
		Usage: "every user's default budget of input and output tokens per UTC day (`0`: none); admins override it per user (`PATCH /users/{user}` `budget`)",
		More:  "; over budget, a turn is refused with 429 `BUDGET_EXCEEDED` and a running one stops after its step (see [Usage and budgets](API.md#usage-and-budgets))"},
	{Flag: "budget-tokens-per-month", Env: "CHATD_BUDGET_TOKENS_PER_MONTH", Field: "BudgetTokensPerMonth", Shown: "none",
		Usage: "the default budget of tokens per UTC calendar month (`0`: none)"},
	{Flag: "budget-cost-per-day", Env: "CHATD_BUDGET_COST_PER_DAY", Field: "BudgetCostPerDay", Shown: "none",
		Usage: "the default budget of cost per UTC day, a decimal in the currency of the model configs' `price` (empty or `0`: none)"},
	{Flag: "budget-cost-per-month", Env: "CHATD_BUDGET_COST_PER_MONTH", Field: "BudgetCostPerMonth", Shown: "none",
		Usage: "the default budget of cost per UTC calendar month (empty or `0`: none)"},
	{Flag: "trace-content", Env: "CHATD_TRACE_CONTENT", Field: "Worker.TraceContent", Default: "false",
		Usage: "put message contents on the GenAI spans (`gen_ai.input.messages`, `gen_ai.output.messages`); off, spans carry no content",
		More:  "(an admin's opt-in: traces then hold what users wrote)"},
	{Flag: "mcp-config", Env: "CHATD_MCP_CONFIG", Field: "MCPConfig",
		Usage: "an `mcpServers` JSON file: its MCP servers are stored at start if not stored yet, and their tools offered to chats; none when empty",
		More:  "(see [Tools](tools.md)); a bad file stops startup with a message naming the server and the field"},
	{Flag: "mcp-resync-interval", Env: "CHATD_MCP_RESYNC_INTERVAL", Field: "MCPResyncInterval", Default: dur(mcp.DefaultResyncInterval),
		Usage: "how often each replica reads the stored MCP servers again without a change notification"},
	{Flag: "mcp-elicitation-timeout", Env: "CHATD_MCP_ELICITATION_TIMEOUT", Field: "MCPElicitationTimeout", Default: dur(elicit.DefaultTimeout),
		Usage: "how long an MCP server's question to a chat's person (elicitation) waits for an answer before it is answered cancel"},
	{Flag: "advertise-url", Env: "CHATD_ADVERTISE_URL", Field: "AdvertiseURL", Shown: "`http://<listen address>`",
		Usage: "how other replicas reach this one (Postgres)"},
	{Flag: "cookie-secure", Env: "CHATD_COOKIE_SECURE", Field: "CookieSecure", Default: string(api.CookieSecureAuto),
		Usage: "session cookie `Secure`: `auto` (over TLS, or `X-Forwarded-Proto: https` from a trusted proxy), `true` or `false`"},
	{Flag: "trusted-proxies", Env: "CHATD_TRUSTED_PROXIES", Field: "TrustedProxies",
		Usage: "comma-separated CIDRs or addresses of reverse proxies whose `X-Forwarded-Proto` and `X-Forwarded-For` are believed; none when empty",
		More:  "(Secure cookie, the server's own origin for the cross-site check, the client IP of the login limit)"},
	{Flag: "metrics-addr", Env: "CHATD_METRICS_ADDR", Field: "MetricsAddr",
		Usage: "serve `GET /metrics` on this address without auth, for scrapers; off when empty (on the main address it needs an admin token)"},
	{Flag: "log-format", Env: "CHATD_LOG_FORMAT", Field: "LogFormat", Default: LogFormatText,
		Usage: "log line format: `text` (logfmt-style) or `json` (one object per line); another value stops startup",
		More:  "; lines about a chat carry `chat_id` (and `runner_id`, `history_version`, `request_id` where known); see [observability](observability.md)"},
	{Flag: "pprof", Env: "CHATD_PPROF", Field: "Pprof", Default: "false",
		Usage: "serve the Go runtime profiles under `GET /debug/pprof/` on the main address, to admins only",
		More:  "(401 without a token, 403 for other users); off, the path answers 404"},
	{Flag: "writes-per-minute", Env: "CHATD_WRITES_PER_MINUTE", Field: "Limits.WritesPerMinute", Default: itoa(api.DefaultWritesPerMinute), Preset: true,
		Usage: "state-changing API requests (POST, PATCH, DELETE) per user, a token bucket holding a minute's worth (429 `RATE_LIMITED` beyond); `0`: unlimited"},
	{Flag: "logins-per-minute", Env: "CHATD_LOGINS_PER_MINUTE", Field: "Limits.LoginsPerMinute", Default: itoa(api.DefaultLoginsPerMinute), Preset: true,
		Usage: "`POST /auth/login` attempts per client IP, same bucket; `0`: unlimited",
		More:  "(the client IP is the connection's peer, or behind a trusted proxy the client it names in `X-Forwarded-For`)"},
	{Flag: "max-chats-per-user", Env: "CHATD_MAX_CHATS_PER_USER", Field: "Limits.MaxChatsPerUser", Default: itoa(api.DefaultMaxChatsPerUser), Preset: true,
		Usage: "chats a user owns, archived and subagent chats included (429 `LIMIT_REACHED` on create); `0`: unlimited"},
	{Flag: "max-projects-per-user", Env: "CHATD_MAX_PROJECTS_PER_USER", Field: "Projects.MaxProjectsPerUser", Default: itoa(projects.DefaultMaxProjectsPerUser), ZeroOff: true,
		Usage: "projects a user owns (429 `LIMIT_REACHED` on create; delete one to free a place); `0`: unlimited"},
	{Flag: "max-memories-per-user", Env: "CHATD_MAX_MEMORIES_PER_USER", Field: "Projects.MaxMemoriesPerUser", Default: itoa(projects.DefaultMaxMemoriesPerUser), ZeroOff: true,
		Usage: "project memories of all a user's projects together (429 `LIMIT_REACHED` on saving a new name; the agent's `save_memory` gets an error result); `0`: unlimited",
		More:  "(each project also holds at most " + itoa(projects.MaxMemories) + ")"},
	{Flag: "max-schedules-per-user", Env: "CHATD_MAX_SCHEDULES_PER_USER", Field: "Schedules.MaxPerUser", Default: itoa(schedules.DefaultMaxPerUser), ZeroOff: true,
		Usage: "scheduled prompts a user owns (429 `LIMIT_REACHED` on create); `0`: unlimited"},
	{Flag: "min-schedule-interval", Env: "CHATD_MIN_SCHEDULE_INTERVAL", Field: "Schedules.MinInterval", Default: dur(schedules.DefaultMinInterval),
		Usage: "the shortest `every` of a schedule (400 `VALIDATION` below it)"},
	{Flag: "max-webhooks-per-user", Env: "CHATD_MAX_WEBHOOKS_PER_USER", Field: "Webhooks.MaxPerUser", Default: itoa(webhooks.DefaultMaxPerUser), ZeroOff: true,
		Usage: "completion webhooks a user registers (429 `LIMIT_REACHED` on create); `0`: unlimited"},
	{Flag: "webhook-allow-private", Env: "CHATD_WEBHOOK_ALLOW_PRIVATE", Field: "Webhooks.AllowPrivate", Default: "false",
		Usage: "let webhooks reach private, loopback and link-local addresses; off, they are refused when registered and when dialled (after DNS)"},
	{Flag: "max-files-per-user", Env: "CHATD_MAX_FILES_PER_USER", Field: "Files.MaxPerUser", Default: itoa(files.DefaultMaxPerUser), ZeroOff: true,
		Usage: "uploaded files a user holds, used by a chat or not (429 `LIMIT_REACHED` on upload); `0`: unlimited",
		More:  "(unused files go after `CHATD_FILE_RETENTION`, a chat's with the chat; `CHATD_FILE_QUOTA_BYTES` bounds their bytes)"},
	{Flag: "max-streams-per-user", Env: "CHATD_MAX_STREAMS_PER_USER", Field: "Limits.MaxStreamsPerUser", Default: itoa(api.DefaultMaxStreamsPerUser), Preset: true,
		Usage: "open chat streams (WebSockets) per user on each replica (429 `LIMIT_REACHED`); `0`: unlimited"},
	{Flag: "max-dynamic-tools", Env: "CHATD_MAX_DYNAMIC_TOOLS", Field: "Limits.MaxDynamicTools", Default: itoa(api.DefaultMaxDynamicTools), Preset: true,
		Usage: "`unsafe_dynamic_tools` of one create (400 `VALIDATION`); `0`: unlimited"},
	{Flag: "max-system-prompt-bytes", Env: "CHATD_MAX_SYSTEM_PROMPT_BYTES", Field: "Limits.MaxSystemPromptBytes", Default: itoa(api.DefaultMaxSystemPromptBytes), Preset: true,
		Usage: "`system_prompt` of one create (413 `TOO_LARGE`); `0`: unlimited (the body cap still applies)"},
	{Flag: "read-timeout", Env: "CHATD_READ_TIMEOUT", Field: "ReadTimeout", Default: dur(DefaultReadTimeout), ZeroOff: true, Negative: true,
		Usage: "time to read one request, body included; a slower client is cut off (`0`: none)"},
	{Flag: "write-timeout", Env: "CHATD_WRITE_TIMEOUT", Field: "WriteTimeout", Default: dur(DefaultWriteTimeout), ZeroOff: true, Negative: true,
		Usage: "time to handle one request and write its answer; WebSocket streams are exempt (`0`: none)"},
	{Flag: "idle-timeout", Env: "CHATD_IDLE_TIMEOUT", Field: "IdleTimeout", Default: dur(DefaultIdleTimeout), ZeroOff: true, Negative: true,
		Usage: "an idle keep-alive connection is closed after this (`0`: none)"},
	{Flag: "max-unauth-conns-per-ip", Env: "CHATD_MAX_UNAUTH_CONNS_PER_IP", Field: "MaxUnauthConnsPerIP", Default: itoa(DefaultMaxUnauthConnsPerIP), ZeroOff: true, Negative: true,
		Usage: "connections one client IP may hold open before one of their requests authenticates; more are answered 429 `TOO_MANY_CONNECTIONS` and closed (`0`: unlimited)",
		More:  "; behind a reverse proxy every client has the proxy's address"},
	{Flag: "stream-ping-interval", Env: "CHATD_STREAM_PING_INTERVAL", Field: "StreamPingInterval", Default: dur(stream.PingInterval),
		Usage: "every WebSocket (viewer streams, the relay and parts connections between replicas) pings its peer this often"},
	{Flag: "stream-pong-timeout", Env: "CHATD_STREAM_PONG_TIMEOUT", Field: "StreamPongTimeout", Default: dur(stream.WriteTimeout),
		Usage: "a WebSocket peer whose pong is later than this is dropped"},

	// Shutdown and the worker's leases.
	{Flag: "shutdown-timeout", Env: "CHATD_SHUTDOWN_TIMEOUT", Field: "ShutdownTimeout", Default: dur(DefaultShutdownTimeout),
		Usage: "bound of the graceful drain on SIGTERM (or Ctrl-C): requests in flight finish, and on SQLite running turns may finish, within it; a second signal stops at once"},
	{Flag: "heartbeat-interval", Env: "CHATD_HEARTBEAT_INTERVAL", Field: "Worker.HeartbeatInterval", Default: dur(worker.DefaultHeartbeatInterval),
		Usage: "how often a replica renews the leases of the chats it runs and its replica record (Postgres)"},
	{Flag: "lease-timeout", Env: "CHATD_LEASE_TIMEOUT", Field: "Worker.LeaseTimeout", Default: dur(worker.DefaultLeaseTimeout),
		Usage: "a lease (or replica record) not renewed this long is stale: another replica takes the chat over; must exceed the heartbeat interval, or startup stops"},
	{Flag: "acquire-interval", Env: "CHATD_ACQUIRE_INTERVAL", Field: "Worker.AcquireInterval", Default: dur(worker.DefaultAcquireInterval),
		Usage: "the longest a replica waits between two acquisition passes without a notification; a dead replica's chats are looked at when its oldest lease goes stale, not a whole interval later"},
}

// FromEnv returns a Config filled from the environment, as the settings
// table says: an unset (or empty) variable leaves its default. A value
// that does not parse is an error naming the variable and the value
// (`CHATD_QUEUE_LIMIT: invalid integer "abc"`), all of them joined.
func FromEnv() (Config, error) {
	var c Config
	var errs []error
	for _, s := range settings {
		v := os.Getenv(s.Env)
		if v == "" && s.Preset {
			v = s.Default
		}
		if v == "" {
			continue
		}
		if err := s.Set(&c, v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Env, err))
		}
	}
	return c, errors.Join(errs...)
}

var durationType = reflect.TypeFor[time.Duration]()

// field is the setting's field of c (settable when c is a pointer's).
func (s Setting) field(c reflect.Value) reflect.Value {
	for name := range strings.SplitSeq(s.Field, ".") {
		c = c.FieldByName(name)
		if !c.IsValid() {
			panic(fmt.Sprintf("setting %s: Config has no field %s", s.Env, s.Field))
		}
	}
	return c
}

// Kind is the type of the setting's value, from its Config field.
func (s Setting) Kind() Kind {
	t := s.field(reflect.ValueOf(Config{})).Type()
	switch {
	case t == durationType:
		return KindDuration
	case t.Kind() == reflect.String:
		return KindString
	case t.Kind() == reflect.Int:
		return KindInt
	case t.Kind() == reflect.Int64:
		return KindInt64
	case t.Kind() == reflect.Bool:
		return KindBool
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		return KindList
	}
	panic(fmt.Sprintf("setting %s: field %s has type %s, which no Kind parses", s.Env, s.Field, t))
}

// Get is the setting's value in c, written as one would give it.
func (s Setting) Get(c Config) string {
	f := s.field(reflect.ValueOf(c))
	switch s.Kind() {
	case KindDuration:
		return dur(time.Duration(f.Int()))
	case KindInt, KindInt64:
		return strconv.FormatInt(f.Int(), 10)
	case KindBool:
		return strconv.FormatBool(f.Bool())
	case KindList:
		return strings.Join(f.Interface().([]string), ",")
	}
	return f.String()
}

// Set parses v as the setting's Kind and stores it in c. The error names
// the value, not the setting: FromEnv and the flags add the name.
func (s Setting) Set(c *Config, v string) error {
	f := s.field(reflect.ValueOf(c).Elem())
	kind := s.Kind()
	if kind != KindString && kind != KindList {
		v = strings.TrimSpace(v)
	}
	var n int64
	switch kind {
	case KindString:
		f.SetString(v)
		return nil
	case KindList:
		var list []string
		if v != "" {
			list = strings.Split(v, ",")
		}
		f.Set(reflect.ValueOf(list))
		return nil
	case KindBool:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("invalid boolean %q (want true or false)", v)
		}
		f.SetBool(b)
		return nil
	case KindDuration:
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("invalid duration %q (want a number with a unit: 30s, 5m, 1h)", v)
		}
		n = int64(d)
	case KindInt, KindInt64:
		var err error
		if n, err = strconv.ParseInt(v, 10, f.Type().Bits()); err != nil {
			return fmt.Errorf("invalid integer %q", v)
		}
	}
	if n < 0 && !s.Negative {
		return fmt.Errorf("invalid value %q: must not be negative", v)
	}
	if n == 0 && s.ZeroOff {
		n = -1
	}
	f.SetInt(n)
	return nil
}

// shownDefault is the default as --help and docs/configuration.md show it: Shown,
// or Default as a code span, or "" for none.
func (s Setting) shownDefault() string {
	switch {
	case s.Shown != "":
		return s.Shown
	case s.Default != "":
		return "`" + s.Default + "`"
	}
	return ""
}

// plain drops Markdown's code-span backticks and bold stars for a terminal.
func plain(s string) string { return strings.NewReplacer("`", "", "**", "").Replace(s) }

// WriteSettingsHelp writes every setting for `chatd serve --help`: flag,
// environment variable, default and description. It never prints a
// value, and no default of a secret.
func WriteSettingsHelp(w io.Writer) {
	fmt.Fprint(w, `Every setting is a flag and an environment variable; a flag beats the
environment, which beats the default. Give secrets in the environment:
a flag's value shows in process listings (--help never prints them).

`)
	for _, s := range settings {
		arg := " " + string(s.Kind())
		if s.Kind() == KindBool {
			arg = "[=true|false]"
		}
		env := s.Env
		if s.Secret {
			env += ", secret: prefer the environment"
		}
		fmt.Fprintf(w, "  --%s%s  (%s)\n", s.Flag, arg, env)
		line := plain(s.Usage)
		if def := s.shownDefault(); def != "" && !s.Secret {
			line += " (default " + plain(def) + ")"
		}
		fmt.Fprintf(w, "        %s\n", line)
	}
}

// SettingsMarkdown is the table of docs/configuration.md.
func SettingsMarkdown() string {
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	var b strings.Builder
	b.WriteString("| flag / environment | default | meaning |\n|---|---|---|\n")
	for _, s := range settings {
		meaning := s.Usage
		if s.More != "" {
			if !strings.HasPrefix(s.More, ";") {
				meaning += " "
			}
			meaning += s.More
		}
		fmt.Fprintf(&b, "| `--%s`, `%s` | %s | %s |\n", s.Flag, s.Env, cell(s.shownDefault()), cell(meaning))
	}
	return b.String()
}
