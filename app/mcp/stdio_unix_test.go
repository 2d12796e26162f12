//go:build unix

package mcp

import (
	"encoding/json"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCloseStopsTheChild(t *testing.T) {
	t.Parallel()
	m := NewManager(Config{Servers: []Server{helperServer(t, nil)}}, Options{})
	out, err := find(t, m.Tools(t.Context(), anAdmin, nil), "child__pid").Run(t.Context(), nil)
	require.NoError(t, err)
	var text string
	require.NoError(t, json.Unmarshal(out, &text))
	pid, err := strconv.Atoi(text)
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(pid, 0), "the child runs")

	require.NoError(t, m.Close())
	require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "Close ended and reaped the child")
}

func TestApplyStopsARemovedChild(t *testing.T) {
	t.Parallel()
	m := NewManager(Config{Servers: []Server{helperServer(t, nil)}}, Options{})
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	out, err := find(t, m.Tools(t.Context(), anAdmin, nil), "child__pid").Run(t.Context(), nil)
	require.NoError(t, err)
	var text string
	require.NoError(t, json.Unmarshal(out, &text))
	pid, err := strconv.Atoi(text)
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(pid, 0), "the child runs")

	m.Apply(Config{})
	require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "Apply ended and reaped the removed child")
	require.Empty(t, m.Tools(t.Context(), anAdmin, nil))
}
