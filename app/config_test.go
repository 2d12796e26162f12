package app_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
)

// TestAutoArchiveDaysFromEnv: CHATD_AUTO_ARCHIVE_DAYS reaches the worker;
// unset or not a non-negative number leaves auto-archive off.
func TestAutoArchiveDaysFromEnv(t *testing.T) {
	for env, want := range map[string]int{"30": 30, "": 0, "0": 0, "-1": 0, "soon": 0} {
		t.Setenv("CHATD_AUTO_ARCHIVE_DAYS", env)
		require.Equal(t, want, app.FromEnv().Worker.AutoArchiveDays, "%q", env)
	}
}
