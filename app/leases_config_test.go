package app_test

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/worker"
)

// TestLeaseSettingsFromEnv: CHATD_HEARTBEAT_INTERVAL, CHATD_LEASE_TIMEOUT
// and CHATD_ACQUIRE_INTERVAL reach the worker; unset keeps its defaults,
// and a value that is not a positive duration, or a lease that does not
// outlive the heartbeat, stops startup with an error naming the setting.
func TestLeaseSettingsFromEnv(t *testing.T) {
	t.Setenv("CHATD_HEARTBEAT_INTERVAL", "200ms")
	t.Setenv("CHATD_LEASE_TIMEOUT", "1s")
	t.Setenv("CHATD_ACQUIRE_INTERVAL", "2s")
	w := app.FromEnv().Worker
	require.Equal(t, 200*time.Millisecond, w.HeartbeatInterval)
	require.Equal(t, time.Second, w.LeaseTimeout)
	require.Equal(t, 2*time.Second, w.AcquireInterval)
	for _, name := range []string{"CHATD_HEARTBEAT_INTERVAL", "CHATD_LEASE_TIMEOUT", "CHATD_ACQUIRE_INTERVAL"} {
		t.Setenv(name, "")
	}
	require.Equal(t, worker.Config{}.HeartbeatInterval, app.FromEnv().Worker.HeartbeatInterval, "unset: the default")

	start := func(w worker.Config) error {
		a, err := app.New(context.Background(), app.Config{DB: filepath.Join(t.TempDir(), "chatd.db"), Worker: w, NoWorker: true}, io.Discard)
		if err == nil {
			require.NoError(t, a.Close())
		}
		return err
	}
	require.NoError(t, start(worker.Config{HeartbeatInterval: 200 * time.Millisecond, LeaseTimeout: time.Second}))
	require.NoError(t, start(worker.Config{}), "the defaults")
	for env, want := range map[[2]string]string{
		{"CHATD_LEASE_TIMEOUT", "9s"}:       "CHATD_LEASE_TIMEOUT (9s) must exceed CHATD_HEARTBEAT_INTERVAL (9s)",
		{"CHATD_HEARTBEAT_INTERVAL", "45s"}: "CHATD_LEASE_TIMEOUT (30s) must exceed CHATD_HEARTBEAT_INTERVAL (45s)",
		{"CHATD_LEASE_TIMEOUT", "soon"}:     "CHATD_LEASE_TIMEOUT: want a positive Go duration",
		{"CHATD_HEARTBEAT_INTERVAL", "-1s"}: "CHATD_HEARTBEAT_INTERVAL: want a positive Go duration",
		{"CHATD_ACQUIRE_INTERVAL", "0s"}:    "CHATD_ACQUIRE_INTERVAL: want a positive Go duration",
	} {
		t.Setenv(env[0], env[1])
		require.ErrorContains(t, start(app.FromEnv().Worker), want, "%s=%s", env[0], env[1])
		t.Setenv(env[0], "")
	}
}
