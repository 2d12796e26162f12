package config_test

import (
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/api"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/config"
)

var updateDoc = flag.Bool("update", false, "rewrite docs/configuration.md's table from the settings table")

// clearSettingsEnv unsets every setting's variable for the test, so the
// machine's own environment does not leak in.
func clearSettingsEnv(t *testing.T) {
	t.Helper()
	for _, s := range config.Settings() {
		t.Setenv(s.Env, "")
	}
}

// TestSettingsTable: every row is whole and consistent: unique names, the
// flag spelled from the variable, a field that exists with a type a Kind
// parses, a one-line description, and a default that parses.
func TestSettingsTable(t *testing.T) {
	flags, envs, fields := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, s := range config.Settings() {
		require.False(t, flags[s.Flag], "flag %s twice", s.Flag)
		require.False(t, envs[s.Env], "variable %s twice", s.Env)
		require.False(t, fields[s.Field], "field %s twice", s.Field)
		flags[s.Flag], envs[s.Env], fields[s.Field] = true, true, true

		want := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(s.Env, "CHATD_")), "_", "-")
		require.Equal(t, want, s.Flag, "the flag of %s", s.Env)
		require.NotPanics(t, func() { s.Kind() }, "%s: field %s", s.Env, s.Field)
		require.NotEmpty(t, s.Usage, s.Env)
		require.NotContains(t, s.Usage+s.More, "\n", s.Env)
		if s.Default != "" {
			var c config.Config
			require.NoError(t, s.Set(&c, s.Default), "%s: default %q", s.Env, s.Default)
			if s.Kind() != config.KindString {
				require.Equal(t, s.Default, s.Get(c), "%s: the default as Get writes it", s.Env)
			}
		}
		if s.Preset {
			require.NotEmpty(t, s.Default, "%s is preset without a default", s.Env)
		}
	}
}

// TestSettingsDoc: the table in docs/configuration.md is exactly what the
// settings table generates. Regenerate it with
// `go test ./app/config -run TestSettingsDoc -update`.
func TestSettingsDoc(t *testing.T) {
	const path = "../../docs/configuration.md"
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	re := regexp.MustCompile(`(?s)(<!-- settings: [^\n]*-->\n)(.*?)(<!-- end of settings -->)`)
	m := re.FindStringSubmatch(string(raw))
	require.NotNil(t, m, "docs/configuration.md marks its generated table")
	want := config.SettingsMarkdown()
	if *updateDoc {
		out := re.ReplaceAllLiteralString(string(raw), m[1]+want+m[3])
		require.NoError(t, os.WriteFile(path, []byte(out), 0o644))
		return
	}
	require.Equal(t, want, m[2], "docs/configuration.md is stale: go test ./app/config -run TestSettingsDoc -update")
}

// TestFromEnvSetsEveryField: each variable FromEnv read by hand before the
// table (and the ones added with it) still lands in its field, and every
// setting has a case here.
func TestFromEnvSetsEveryField(t *testing.T) {
	cases := []struct {
		env, value string
		got        func(config.Config) any
		want       any
	}{
		{"CHATD_ADDR", "0.0.0.0:9000", func(c config.Config) any { return c.Addr }, "0.0.0.0:9000"},
		{"CHATD_DB", "postgres://db/chatd", func(c config.Config) any { return c.DB }, "postgres://db/chatd"},
		{"CHATD_BOOTSTRAP_TOKEN", "boot", func(c config.Config) any { return c.BootstrapToken }, "boot"},
		{"CHATD_DEFAULT_MODEL", "openai/gpt", func(c config.Config) any { return c.DefaultModel }, "openai/gpt"},
		{"CHATD_MODELS", "openai/a,anthropic/b", func(c config.Config) any { return c.Models }, []string{"openai/a", "anthropic/b"}},
		{"CHATD_QUEUE_LIMIT", "7", func(c config.Config) any { return c.QueueLimit }, 7},
		{"CHATD_MAX_BODY_BYTES", "2048", func(c config.Config) any { return c.MaxBodyBytes }, int64(2048)},
		{"CHATD_MAX_TEXT_BYTES", "1024", func(c config.Config) any { return c.MaxTextBytes }, 1024},
		{"CHATD_REQUIRES_ACTION_TIMEOUT", "2m", func(c config.Config) any { return c.RequiresActionTimeout }, 2 * time.Minute},
		{"CHATD_ADVERTISE_URL", "http://10.0.0.2:8080", func(c config.Config) any { return c.AdvertiseURL }, "http://10.0.0.2:8080"},
		{"CHATD_SESSION_TTL", "1h", func(c config.Config) any { return c.SessionTTL }, time.Hour},
		{"CHATD_SESSION_TTL", "0", func(c config.Config) any { return c.SessionTTL }, auth.NoExpiry},
		{"CHATD_WEBHOOK_URL", "http://hook", func(c config.Config) any { return c.WebhookURL }, "http://hook"},
		{"CHATD_MCP_CONFIG", "/etc/mcp.json", func(c config.Config) any { return c.MCPConfig }, "/etc/mcp.json"},
		{"CHATD_MCP_RESYNC_INTERVAL", "5s", func(c config.Config) any { return c.MCPResyncInterval }, 5 * time.Second},
		{"CHATD_HOOK_URL", "http://hooks", func(c config.Config) any { return c.HookURL }, "http://hooks"},
		{"CHATD_HOOK_SECRET", "whsec_x", func(c config.Config) any { return c.HookSecret }, "whsec_x"},
		{"CHATD_HOOK_MAX_CONCURRENT", "4", func(c config.Config) any { return c.HookMaxConcurrent }, 4},
		{"CHATD_COOKIE_SECURE", "true", func(c config.Config) any { return c.CookieSecure }, "true"},
		{"CHATD_TRUSTED_PROXIES", "10.0.0.0/8", func(c config.Config) any { return c.TrustedProxies }, "10.0.0.0/8"},
		{"CHATD_METRICS_ADDR", ":9090", func(c config.Config) any { return c.MetricsAddr }, ":9090"},
		{"CHATD_LOG_FORMAT", "json", func(c config.Config) any { return c.LogFormat }, "json"},
		{"CHATD_PPROF", "true", func(c config.Config) any { return c.Pprof }, true},
		{"CHATD_BUILTIN_TOOLS", "1", func(c config.Config) any { return c.BuiltinTools }, true},
		{"OPENAI_API_KEY", "sk-1", func(c config.Config) any { return c.OpenAIAPIKey }, "sk-1"},
		{"OPENAI_BASE_URL", "http://ollama:11434/v1", func(c config.Config) any { return c.OpenAIBaseURL }, "http://ollama:11434/v1"},
		{"ANTHROPIC_API_KEY", "sk-2", func(c config.Config) any { return c.AnthropicAPIKey }, "sk-2"},
		{"ANTHROPIC_BASE_URL", "http://claude", func(c config.Config) any { return c.AnthropicBaseURL }, "http://claude"},
		{"CHATD_SECRET_KEY", "k1", func(c config.Config) any { return c.SecretKey }, "k1"},
		{"CHATD_SECRET_KEY_PREVIOUS", "k0", func(c config.Config) any { return c.SecretKeyPrevious }, "k0"},
		{"CHATD_MODEL_CACHE_TTL", "1m", func(c config.Config) any { return c.ModelCacheTTL }, time.Minute},
		{"CHATD_MAX_ROOT_CHATS", "3", func(c config.Config) any { return c.Worker.RootLimit }, 3},
		{"CHATD_MAX_SUBAGENT_CHATS", "4", func(c config.Config) any { return c.Worker.SubagentLimit }, 4},
		{"CHATD_MAX_GENERATION_RETRIES", "2", func(c config.Config) any { return c.Worker.MaxRetries }, 2},
		{"CHATD_MAX_STEPS_PER_TURN", "9", func(c config.Config) any { return c.Worker.MaxSteps }, 9},
		{"CHATD_TOOL_APPROVAL", "always", func(c config.Config) any { return c.Worker.ToolApproval }, "always"},
		{"CHATD_COMPACT_THRESHOLD_PERCENT", "90", func(c config.Config) any { return c.Worker.CompactThresholdPercent }, 90},
		{"CHATD_AUTO_ARCHIVE_DAYS", "30", func(c config.Config) any { return c.Worker.AutoArchiveDays }, 30},
		{"CHATD_SUBAGENTS", "false", func(c config.Config) any { return c.Worker.Subagents }, false},
		{"CHATD_MAX_AGENT_DEPTH", "2", func(c config.Config) any { return c.Worker.MaxAgentDepth }, 2},
		{"CHATD_MAX_FILE_BYTES", "100", func(c config.Config) any { return c.Files.MaxFileBytes }, int64(100)},
		{"CHATD_FILE_QUOTA_BYTES", "1000", func(c config.Config) any { return c.Files.QuotaBytes }, int64(1000)},
		{"CHATD_FILE_RETENTION", "1h", func(c config.Config) any { return c.Files.Retention }, time.Hour},
		{"CHATD_MAX_FILES_PER_CHAT", "5", func(c config.Config) any { return c.Files.MaxPerChat }, 5},
		{"CHATD_WRITES_PER_MINUTE", "1", func(c config.Config) any { return c.Limits.WritesPerMinute }, 1},
		{"CHATD_WRITES_PER_MINUTE", "0", func(c config.Config) any { return c.Limits.WritesPerMinute }, 0},
		{"CHATD_LOGINS_PER_MINUTE", "2", func(c config.Config) any { return c.Limits.LoginsPerMinute }, 2},
		{"CHATD_MAX_CHATS_PER_USER", "3", func(c config.Config) any { return c.Limits.MaxChatsPerUser }, 3},
		{"CHATD_MAX_PROJECTS_PER_USER", "4", func(c config.Config) any { return c.Projects.MaxProjectsPerUser }, 4},
		{"CHATD_MAX_PROJECTS_PER_USER", "0", func(c config.Config) any { return c.Projects.MaxProjectsPerUser }, -1},
		{"CHATD_MAX_MEMORIES_PER_USER", "5", func(c config.Config) any { return c.Projects.MaxMemoriesPerUser }, 5},
		{"CHATD_MAX_MEMORIES_PER_USER", "0", func(c config.Config) any { return c.Projects.MaxMemoriesPerUser }, -1},
		{"CHATD_MAX_FILES_PER_USER", "6", func(c config.Config) any { return c.Files.MaxPerUser }, 6},
		{"CHATD_MAX_FILES_PER_USER", "0", func(c config.Config) any { return c.Files.MaxPerUser }, -1},
		{"CHATD_MAX_STREAMS_PER_USER", "4", func(c config.Config) any { return c.Limits.MaxStreamsPerUser }, 4},
		{"CHATD_MAX_DYNAMIC_TOOLS", "5", func(c config.Config) any { return c.Limits.MaxDynamicTools }, 5},
		{"CHATD_MAX_SYSTEM_PROMPT_BYTES", "6", func(c config.Config) any { return c.Limits.MaxSystemPromptBytes }, 6},
		{"CHATD_READ_TIMEOUT", "5s", func(c config.Config) any { return c.ReadTimeout }, 5 * time.Second},
		{"CHATD_READ_TIMEOUT", "0", func(c config.Config) any { return c.ReadTimeout }, time.Duration(-1)},
		{"CHATD_WRITE_TIMEOUT", "6s", func(c config.Config) any { return c.WriteTimeout }, 6 * time.Second},
		{"CHATD_IDLE_TIMEOUT", "7s", func(c config.Config) any { return c.IdleTimeout }, 7 * time.Second},
		{"CHATD_STREAM_PING_INTERVAL", "2s", func(c config.Config) any { return c.StreamPingInterval }, 2 * time.Second},
		{"CHATD_STREAM_PONG_TIMEOUT", "3s", func(c config.Config) any { return c.StreamPongTimeout }, 3 * time.Second},
		{"CHATD_MAX_UNAUTH_CONNS_PER_IP", "8", func(c config.Config) any { return c.MaxUnauthConnsPerIP }, 8},
		{"CHATD_MAX_UNAUTH_CONNS_PER_IP", "0", func(c config.Config) any { return c.MaxUnauthConnsPerIP }, -1},
		// Added with the table.
		{"CHATD_SHUTDOWN_TIMEOUT", "45s", func(c config.Config) any { return c.ShutdownTimeout }, 45 * time.Second},
		{"CHATD_HEARTBEAT_INTERVAL", "2s", func(c config.Config) any { return c.Worker.HeartbeatInterval }, 2 * time.Second},
		{"CHATD_LEASE_TIMEOUT", "6s", func(c config.Config) any { return c.Worker.LeaseTimeout }, 6 * time.Second},
		{"CHATD_ACQUIRE_INTERVAL", "1s", func(c config.Config) any { return c.Worker.AcquireInterval }, time.Second},
		{"CHATD_BUDGET_TOKENS_PER_DAY", "1000", func(c config.Config) any { return c.BudgetTokensPerDay }, int64(1000)},
		{"CHATD_BUDGET_TOKENS_PER_MONTH", "9000", func(c config.Config) any { return c.BudgetTokensPerMonth }, int64(9000)},
		{"CHATD_BUDGET_COST_PER_DAY", "1.5", func(c config.Config) any { return c.BudgetCostPerDay }, "1.5"},
		{"CHATD_BUDGET_COST_PER_MONTH", "20", func(c config.Config) any { return c.BudgetCostPerMonth }, "20"},
		{"CHATD_TRACE_CONTENT", "true", func(c config.Config) any { return c.Worker.TraceContent }, true},
		{"CHATD_MCP_ELICITATION_TIMEOUT", "3m", func(c config.Config) any { return c.MCPElicitationTimeout }, 3 * time.Minute},
		{"CHATD_MAX_SCHEDULES_PER_USER", "7", func(c config.Config) any { return c.Schedules.MaxPerUser }, 7},
		{"CHATD_MIN_SCHEDULE_INTERVAL", "5m", func(c config.Config) any { return c.Schedules.MinInterval }, 5 * time.Minute},
		{"CHATD_MAX_WEBHOOKS_PER_USER", "3", func(c config.Config) any { return c.Webhooks.MaxPerUser }, 3},
		{"CHATD_WEBHOOK_ALLOW_PRIVATE", "true", func(c config.Config) any { return c.Webhooks.AllowPrivate }, true},
	}
	covered := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.env+"="+tc.value, func(t *testing.T) {
			clearSettingsEnv(t)
			before := tc.got(fromEnv(t))
			t.Setenv(tc.env, tc.value)
			got := tc.got(fromEnv(t))
			require.Equal(t, tc.want, got)
			require.NotEqual(t, before, got, "the variable changed nothing")
		})
		covered[tc.env] = true
	}
	for _, s := range config.Settings() {
		require.True(t, covered[s.Env], "no case for %s", s.Env)
	}
}

// TestFromEnvDefaults: with nothing set, the fields are Config's zero
// values (each component's default), except the preset ones: the limits
// (whose zero is unlimited) and subagents (on).
func TestFromEnvDefaults(t *testing.T) {
	clearSettingsEnv(t)
	c := fromEnv(t)
	require.True(t, c.Worker.Subagents)
	require.Equal(t, api.Limits{
		WritesPerMinute: api.DefaultWritesPerMinute, LoginsPerMinute: api.DefaultLoginsPerMinute,
		MaxChatsPerUser: api.DefaultMaxChatsPerUser, MaxStreamsPerUser: api.DefaultMaxStreamsPerUser,
		MaxDynamicTools: api.DefaultMaxDynamicTools, MaxSystemPromptBytes: api.DefaultMaxSystemPromptBytes,
	}, c.Limits)
	c.Worker.Subagents, c.Limits = false, api.Limits{}
	require.Equal(t, config.Config{}, c)
}

// TestFromEnvBadValues: a value that does not parse stops FromEnv with an
// error naming the variable and the value; every bad variable is named.
func TestFromEnvBadValues(t *testing.T) {
	for _, tc := range []struct{ env, value, want string }{
		{"CHATD_QUEUE_LIMIT", "abc", `CHATD_QUEUE_LIMIT: invalid integer "abc"`},
		{"CHATD_MAX_BODY_BYTES", "1MiB", `CHATD_MAX_BODY_BYTES: invalid integer "1MiB"`},
		{"CHATD_MAX_FILE_BYTES", "99999999999999999999", `CHATD_MAX_FILE_BYTES: invalid integer "99999999999999999999"`},
		{"CHATD_REQUIRES_ACTION_TIMEOUT", "5", `CHATD_REQUIRES_ACTION_TIMEOUT: invalid duration "5" (want a number with a unit: 30s, 5m, 1h)`},
		{"CHATD_SESSION_TTL", "a week", `CHATD_SESSION_TTL: invalid duration "a week" (want a number with a unit: 30s, 5m, 1h)`},
		{"CHATD_PPROF", "yes", `CHATD_PPROF: invalid boolean "yes" (want true or false)`},
		{"CHATD_WRITES_PER_MINUTE", "-1", `CHATD_WRITES_PER_MINUTE: invalid value "-1": must not be negative`},
		{"CHATD_HEARTBEAT_INTERVAL", "-1s", `CHATD_HEARTBEAT_INTERVAL: invalid value "-1s": must not be negative`},
	} {
		t.Run(tc.env, func(t *testing.T) {
			clearSettingsEnv(t)
			t.Setenv(tc.env, tc.value)
			_, err := config.FromEnv()
			require.EqualError(t, err, tc.want)
		})
	}

	clearSettingsEnv(t)
	t.Setenv("CHATD_QUEUE_LIMIT", "abc")
	t.Setenv("CHATD_SUBAGENTS", "maybe")
	_, err := config.FromEnv()
	require.ErrorContains(t, err, `CHATD_QUEUE_LIMIT: invalid integer "abc"`)
	require.ErrorContains(t, err, `CHATD_SUBAGENTS: invalid boolean "maybe"`)
}
