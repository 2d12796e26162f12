package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServeRefusesUnknownLogFormat: a bad --log-format (or
// CHATD_LOG_FORMAT) stops startup before anything is opened.
func TestServeRefusesUnknownLogFormat(t *testing.T) {
	db := filepath.Join(t.TempDir(), "chatd.db")
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"serve", "--db", db, "--addr", "127.0.0.1:0", "--log-format", "yaml"}, &out, &errOut)
	require.ErrorContains(t, err, `log format "yaml"`)

	t.Setenv("CHATD_LOG_FORMAT", "xml")
	err = run(context.Background(), []string{"serve", "--db", db, "--addr", "127.0.0.1:0"}, &out, &errOut)
	require.ErrorContains(t, err, `log format "xml"`)
}
