package main

import (
	"bytes"
	"context"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVersion(t *testing.T) {
	var outs []string
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		var stdout, stderr bytes.Buffer
		require.NoError(t, run(context.Background(), args, &stdout, &stderr), args)
		require.Regexp(t, `^chatd \S+( \([0-9a-f]{1,12}(\+dirty)?\))? `+runtime.Version()+"\n$", stdout.String(), args)
		outs = append(outs, stdout.String())
	}
	require.Equal(t, outs[0], outs[1])
	require.Equal(t, outs[0], outs[2])

	var stdout, stderr bytes.Buffer
	require.ErrorContains(t, run(context.Background(), []string{"version", "x"}, &stdout, &stderr), "no arguments")

	version = "v9.8.7"
	t.Cleanup(func() { version = "" })
	require.Contains(t, buildVersion(), "chatd v9.8.7")
}
