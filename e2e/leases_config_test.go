package e2e_test

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/config"
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
	c, err := config.FromEnv()
	require.NoError(t, err)
	w := c.Worker
	require.Equal(t, 200*time.Millisecond, w.HeartbeatInterval)
	require.Equal(t, time.Second, w.LeaseTimeout)
	require.Equal(t, 2*time.Second, w.AcquireInterval)
	for _, name := range []string{"CHATD_HEARTBEAT_INTERVAL", "CHATD_LEASE_TIMEOUT", "CHATD_ACQUIRE_INTERVAL"} {
		t.Setenv(name, "")
	}
	c, err = config.FromEnv()
	require.NoError(t, err)
	require.Equal(t, worker.Config{}.HeartbeatInterval, c.Worker.HeartbeatInterval, "unset: the default")

	// app.New itself (a construction test): does it take or refuse w?
	start := func(w worker.Config) error {
		a, err := app.New(context.Background(), config.Config{DB: filepath.Join(t.TempDir(), "chatd.db"), Worker: w, NoWorker: true}, io.Discard)
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
	} {
		t.Setenv(env[0], env[1])
		c, err := config.FromEnv()
		require.NoError(t, err)
		require.ErrorContains(t, start(c.Worker), want, "%s=%s", env[0], env[1])
		t.Setenv(env[0], "")
	}
	// Values that are not durations stop startup while the environment is read.
	for _, name := range []string{"CHATD_HEARTBEAT_INTERVAL", "CHATD_LEASE_TIMEOUT", "CHATD_ACQUIRE_INTERVAL"} {
		for _, v := range []string{"soon", "-1s"} {
			t.Setenv(name, v)
			_, err := config.FromEnv()
			require.ErrorContains(t, err, name, "%s=%s", name, v)
			t.Setenv(name, "")
		}
	}
}
