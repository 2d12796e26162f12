package config_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/store/dbtest"
)

// fromEnv is config.FromEnv for a valid environment.
func fromEnv(t *testing.T) config.Config {
	t.Helper()
	c, err := config.FromEnv()
	require.NoError(t, err)
	return c
}

// requireEnvError: FromEnv refuses the variable's value, naming both.
func requireEnvError(t *testing.T, name, value string) {
	t.Helper()
	t.Setenv(name, value)
	_, err := config.FromEnv()
	require.ErrorContains(t, err, name+": ")
	require.ErrorContains(t, err, fmt.Sprintf("%q", value))
}

// TestAutoArchiveDaysFromEnv: CHATD_AUTO_ARCHIVE_DAYS reaches the worker;
// unset leaves auto-archive off; not a non-negative number is refused.
func TestAutoArchiveDaysFromEnv(t *testing.T) {
	for env, want := range map[string]int{"30": 30, "": 0, "0": 0} {
		t.Setenv("CHATD_AUTO_ARCHIVE_DAYS", env)
		require.Equal(t, want, fromEnv(t).Worker.AutoArchiveDays, "%q", env)
	}
	for _, env := range []string{"-1", "soon"} {
		requireEnvError(t, "CHATD_AUTO_ARCHIVE_DAYS", env)
	}
}

// TestShutdownTimeoutFromEnv: CHATD_SHUTDOWN_TIMEOUT bounds the drain;
// unset keeps the default (0 in Config); a bad value stops startup.
func TestShutdownTimeoutFromEnv(t *testing.T) {
	for env, want := range map[string]time.Duration{"45s": 45 * time.Second, "2m": 2 * time.Minute, "": 0} {
		t.Setenv("CHATD_SHUTDOWN_TIMEOUT", env)
		require.Equal(t, want, fromEnv(t).ShutdownTimeout, "%q", env)
	}
	for _, env := range []string{"-5s", "soon"} {
		requireEnvError(t, "CHATD_SHUTDOWN_TIMEOUT", env)
	}
}

// TestSubagentSettingsFromEnv: CHATD_SUBAGENTS (on unless it says false)
// and CHATD_MAX_AGENT_DEPTH reach the worker; unset keeps the default
// depth (0 in worker.Config); other values are refused.
func TestSubagentSettingsFromEnv(t *testing.T) {
	for env, want := range map[string]bool{"true": true, "1": true, "": true, "false": false, "0": false} {
		t.Setenv("CHATD_SUBAGENTS", env)
		require.Equal(t, want, fromEnv(t).Worker.Subagents, "%q", env)
	}
	requireEnvError(t, "CHATD_SUBAGENTS", "no")
	t.Setenv("CHATD_SUBAGENTS", "")
	for env, want := range map[string]int{"2": 2, "": 0, "0": 0} {
		t.Setenv("CHATD_MAX_AGENT_DEPTH", env)
		require.Equal(t, want, fromEnv(t).Worker.MaxAgentDepth, "%q", env)
	}
	for _, env := range []string{"-3", "deep"} {
		requireEnvError(t, "CHATD_MAX_AGENT_DEPTH", env)
	}
}

// TestLogFormat: CHATD_LOG_FORMAT picks text (the default) or JSON lines;
// any other value stops startup with an error naming the setting.
func TestLogFormat(t *testing.T) {
	for env, want := range map[string]string{"": "", "text": "text", "json": "json"} {
		t.Setenv("CHATD_LOG_FORMAT", env)
		require.Equal(t, want, fromEnv(t).LogFormat, "%q", env)
	}

	var text, js bytes.Buffer
	l, err := config.NewLogger("", &text)
	require.NoError(t, err)
	l.Info("hello", "chat_id", "c1")
	require.Contains(t, text.String(), "msg=hello chat_id=c1")
	l, err = config.NewLogger(config.LogFormatJSON, &js)
	require.NoError(t, err)
	l.Info("hello", "chat_id", "c1")
	var line map[string]any
	require.NoError(t, json.Unmarshal(js.Bytes(), &line), "one JSON object per line: %s", js.String())
	require.Equal(t, "hello", line["msg"])
	require.Equal(t, "c1", line["chat_id"])

	_, err = config.NewLogger("yaml", io.Discard)
	require.ErrorContains(t, err, `"yaml"`)
	_, err = app.NewWithStore(context.Background(), config.Config{LogFormat: "yaml"}, dbtest.NewSQLite(t), io.Discard)
	require.ErrorContains(t, err, "CHATD_LOG_FORMAT")
}

// TestPprofFromEnv: CHATD_PPROF=true turns the profiles on; unset or
// false leaves them off; another value is refused.
func TestPprofFromEnv(t *testing.T) {
	for env, want := range map[string]bool{"true": true, "": false, "false": false} {
		t.Setenv("CHATD_PPROF", env)
		require.Equal(t, want, fromEnv(t).Pprof, "%q", env)
	}
	requireEnvError(t, "CHATD_PPROF", "yes")
}
