package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/config"
)

// clearSettingsEnv unsets every setting's variable for the test.
func clearSettingsEnv(t *testing.T) {
	t.Helper()
	for _, s := range config.Settings() {
		t.Setenv(s.Env, "")
	}
}

// TestServeHelpListsEverySetting: `chatd serve --help` lists every setting
// with its flag, variable and default, exits 0, and prints no value: a
// secret in the environment stays out of it.
func TestServeHelpListsEverySetting(t *testing.T) {
	clearSettingsEnv(t)
	t.Setenv("CHATD_SECRET_KEY", "s3cret-from-env")
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("CHATD_QUEUE_LIMIT", "987654")
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"serve", "--help"}, &out, &errOut)
	require.ErrorIs(t, err, flag.ErrHelp)
	require.Equal(t, 0, exitCode(err))
	help := out.String()
	for _, s := range config.Settings() {
		require.Regexp(t, `(?m)^  --`+s.Flag+`( |\[=true\|false\])`, help, s.Env)
		require.Contains(t, help, "("+s.Env, s.Flag)
		def := strings.ReplaceAll(strings.ReplaceAll(s.Shown, "`", ""), "**", "")
		if def == "" {
			def = s.Default
		}
		if def != "" && !s.Secret {
			require.Contains(t, help, "(default "+def+")", s.Env)
		}
		if s.Secret {
			require.Contains(t, help, s.Env+", secret: prefer the environment")
		}
	}
	require.Contains(t, help, "Give secrets in the environment")
	require.NotContains(t, help, "s3cret-from-env")
	require.NotContains(t, help, "sk-from-env")
	require.NotContains(t, help, "987654", "--help shows defaults, not the environment's values")
	require.Empty(t, errOut.String())
}

// TestServeFlagBeatsEnv: a flag beats its variable, which beats the
// default, for every kind of setting; the old flag names still work.
func TestServeFlagBeatsEnv(t *testing.T) {
	clearSettingsEnv(t)
	cfg, err := serveConfig(nil, nil)
	require.NoError(t, err)
	require.Zero(t, cfg.QueueLimit, "unset: Config's zero, the default")
	require.True(t, cfg.Worker.Subagents, "the preset default")

	t.Setenv("CHATD_QUEUE_LIMIT", "7")
	t.Setenv("CHATD_DB", "/env/chatd.db")
	t.Setenv("CHATD_SUBAGENTS", "true")
	t.Setenv("CHATD_READ_TIMEOUT", "5s")
	t.Setenv("CHATD_MODELS", "openai/a")
	t.Setenv("CHATD_LOG_FORMAT", "json")
	cfg, err = serveConfig(nil, nil)
	require.NoError(t, err)
	require.Equal(t, 7, cfg.QueueLimit)
	require.Equal(t, "/env/chatd.db", cfg.DB)
	require.Equal(t, 5*time.Second, cfg.ReadTimeout)

	cfg, err = serveConfig([]string{
		"--queue-limit", "9", "--db", "/flag/chatd.db", "--subagents=false", "--read-timeout", "0",
		"--models", "anthropic/b,openai/c", "--log-format", "text", "--pprof", "--lease-timeout=1m",
	}, nil)
	require.NoError(t, err)
	require.Equal(t, 9, cfg.QueueLimit)
	require.Equal(t, "/flag/chatd.db", cfg.DB)
	require.False(t, cfg.Worker.Subagents)
	require.Negative(t, cfg.ReadTimeout, "0: no read timeout")
	require.Equal(t, []string{"anthropic/b", "openai/c"}, cfg.Models)
	require.Equal(t, "text", cfg.LogFormat)
	require.True(t, cfg.Pprof, "a bool flag stands alone")
	require.Equal(t, time.Minute, cfg.Worker.LeaseTimeout)
}

// TestServeBadSettings: a bad variable or flag stops `chatd serve` before
// anything opens, naming it, with exit status 2.
func TestServeBadSettings(t *testing.T) {
	clearSettingsEnv(t)
	ctx := context.Background()
	var out, errOut bytes.Buffer
	t.Setenv("CHATD_QUEUE_LIMIT", "abc")
	err := run(ctx, []string{"serve", "--db", t.TempDir() + "/chatd.db"}, &out, &errOut)
	require.EqualError(t, err, `CHATD_QUEUE_LIMIT: invalid integer "abc"`)
	require.Equal(t, 2, exitCode(err))

	t.Setenv("CHATD_QUEUE_LIMIT", "")
	for args, want := range map[string]string{
		"--queue-limit=abc":   `invalid value "abc" for flag -queue-limit: invalid integer "abc"`,
		"--pprof=yes":         `invalid boolean "yes"`,
		"--idle-timeout=5":    `invalid duration "5"`,
		"--no-such-setting":   "flag provided but not defined: -no-such-setting",
		"--max-root-chats=-1": `invalid value "-1": must not be negative`,
	} {
		err := run(ctx, []string{"serve", args}, &out, &errOut)
		require.ErrorContains(t, err, want, args)
		require.Equal(t, 2, exitCode(err), args)
	}
	require.Equal(t, 1, exitCode(errors.New("the database is locked")))
	require.Equal(t, 0, exitCode(nil))
}
