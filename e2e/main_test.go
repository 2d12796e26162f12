// Package e2e_test holds chatd's end-to-end tests: whole apps (app/apptest)
// over real stores, HTTP and WebSocket, one file per capability.
package e2e_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/chatd/chatd/app/config"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fromEnv is config.FromEnv for a valid environment.
func fromEnv(t *testing.T) config.Config {
	t.Helper()
	c, err := config.FromEnv()
	require.NoError(t, err)
	return c
}
