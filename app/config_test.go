package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/store/dbtest"
)

// TestAutoArchiveDaysFromEnv: CHATD_AUTO_ARCHIVE_DAYS reaches the worker;
// unset or not a non-negative number leaves auto-archive off.
func TestAutoArchiveDaysFromEnv(t *testing.T) {
	for env, want := range map[string]int{"30": 30, "": 0, "0": 0, "-1": 0, "soon": 0} {
		t.Setenv("CHATD_AUTO_ARCHIVE_DAYS", env)
		require.Equal(t, want, app.FromEnv().Worker.AutoArchiveDays, "%q", env)
	}
}

// TestShutdownTimeoutFromEnv: CHATD_SHUTDOWN_TIMEOUT bounds the drain;
// unset, unparsable or not positive keeps the default (0 in Config).
func TestShutdownTimeoutFromEnv(t *testing.T) {
	for env, want := range map[string]time.Duration{"45s": 45 * time.Second, "2m": 2 * time.Minute, "": 0, "0": 0, "-5s": 0, "soon": 0} {
		t.Setenv("CHATD_SHUTDOWN_TIMEOUT", env)
		require.Equal(t, want, app.FromEnv().ShutdownTimeout, "%q", env)
	}
}

// TestSubagentSettingsFromEnv: CHATD_SUBAGENTS (on unless it says false)
// and CHATD_MAX_AGENT_DEPTH reach the worker; unset (or not a positive
// number) keeps the default depth (0 in worker.Config).
func TestSubagentSettingsFromEnv(t *testing.T) {
	for env, want := range map[string]bool{"true": true, "1": true, "": true, "no": true, "false": false, "0": false} {
		t.Setenv("CHATD_SUBAGENTS", env)
		require.Equal(t, want, app.FromEnv().Worker.Subagents, "%q", env)
	}
	for env, want := range map[string]int{"2": 2, "": 0, "0": 0, "-3": 0, "deep": 0} {
		t.Setenv("CHATD_MAX_AGENT_DEPTH", env)
		require.Equal(t, want, app.FromEnv().Worker.MaxAgentDepth, "%q", env)
	}
}

// TestLogFormat: CHATD_LOG_FORMAT picks text (the default) or JSON lines;
// any other value stops startup with an error naming the setting.
func TestLogFormat(t *testing.T) {
	for env, want := range map[string]string{"": "", "text": "text", "json": "json"} {
		t.Setenv("CHATD_LOG_FORMAT", env)
		require.Equal(t, want, app.FromEnv().LogFormat, "%q", env)
	}

	var text, js bytes.Buffer
	l, err := app.NewLogger("", &text)
	require.NoError(t, err)
	l.Info("hello", "chat_id", "c1")
	require.Contains(t, text.String(), "msg=hello chat_id=c1")
	l, err = app.NewLogger(app.LogFormatJSON, &js)
	require.NoError(t, err)
	l.Info("hello", "chat_id", "c1")
	var line map[string]any
	require.NoError(t, json.Unmarshal(js.Bytes(), &line), "one JSON object per line: %s", js.String())
	require.Equal(t, "hello", line["msg"])
	require.Equal(t, "c1", line["chat_id"])

	_, err = app.NewLogger("yaml", io.Discard)
	require.ErrorContains(t, err, `"yaml"`)
	_, err = app.NewWithStore(context.Background(), app.Config{LogFormat: "yaml"}, dbtest.NewSQLite(t), io.Discard)
	require.ErrorContains(t, err, "CHATD_LOG_FORMAT")
}

// TestPprofFromEnv: CHATD_PPROF=true turns the profiles on; off otherwise.
func TestPprofFromEnv(t *testing.T) {
	for env, want := range map[string]bool{"true": true, "": false, "false": false, "yes": false} {
		t.Setenv("CHATD_PPROF", env)
		require.Equal(t, want, app.FromEnv().Pprof, "%q", env)
	}
}
