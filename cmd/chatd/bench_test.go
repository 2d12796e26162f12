package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBench(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bench := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(ctx, append([]string{"bench"}, args...), &out, &errOut)
		return out.String(), err
	}
	for _, bad := range [][]string{
		{"--concurrency", "0"}, {"--history", "-1"}, {"--seed-chats", "-5"}, {"--duration", "0s"},
		{"--seed-chats", "0", "--seed-messages", "3"}, {"extra"},
		{"--delivery-tokens", "0"}, {"--idle-viewers", "-1"}, {"--delivery-viewers", "1,x"}, {"--delivery-viewers", "0"},
	} {
		_, err := bench(bad...)
		require.Error(t, err, "%v", bad)
	}

	db := filepath.Join(t.TempDir(), "bench.db")
	out, err := bench("--db", db, "--duration", "20ms", "--concurrency", "1", "--seed-chats", "5",
		"--seed-messages", "5", "--history", "3", "--samples", "1", "--list-samples", "1", "--turns", "1",
		"--delivery-tokens", "3", "--delivery-viewers", "1,2", "--idle-viewers", "2")
	require.NoError(t, err)
	require.Contains(t, out, "store: sqlite")
	require.Contains(t, out, "turns/s vs raw commits/s")
	require.Contains(t, out, "bootstrap 3 msgs")
	require.Contains(t, out, "token delivery p99, 2 viewers")
}
