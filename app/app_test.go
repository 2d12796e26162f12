package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

func TestHealthzOnSQLite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, err := app.New(ctx, config.Config{DB: filepath.Join(t.TempDir(), "chatd.db")}, io.Discard)
	require.NoError(t, err)
	defer a.Close()

	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/healthz")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var body map[string]string
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, map[string]string{"status": "ok", "database": "sqlite"}, body)
}

func TestSecondServeOnSameFileRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "chatd.db")
	a, err := app.New(ctx, config.Config{DB: db}, io.Discard)
	require.NoError(t, err)
	defer a.Close()

	_, err = app.New(ctx, config.Config{DB: db}, io.Discard)
	require.ErrorIs(t, err, store.ErrLocked)
	require.Contains(t, err.Error(), "another chatd holds")
}

func TestRunServesUntilCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, config.Config{Addr: "127.0.0.1:0", DB: filepath.Join(t.TempDir(), "chatd.db")}, io.Discard)
	require.NoError(t, err)
	defer a.Close()

	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, func(addr net.Addr) { addrc <- addr }) }()
	addr := <-addrc
	resp, err := http.Get("http://" + addr.String() + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	cancel()
	require.NoError(t, <-done, "graceful shutdown returns nil")
}

// The first start writes the admin's API token to FirstTokenOut (a
// terminal, for `chatd serve`) and never to the log; the token works.
func TestFirstTokenShownOutsideTheLog(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var logs, shown strings.Builder
	a, err := app.New(ctx, config.Config{Addr: "127.0.0.1:0", DB: filepath.Join(t.TempDir(), "chatd.db"), NoWorker: true,
		FirstTokenOut: &shown}, &logs)
	require.NoError(t, err)
	defer a.Close()
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, func(addr net.Addr) { addrc <- addr }) }()
	addr := <-addrc

	_, after, ok := strings.Cut(shown.String(), auth.TokenPrefix)
	require.True(t, ok, "the token was shown: %q", shown.String())
	token := auth.TokenPrefix + strings.Fields(after)[0]
	me, err := sdk.New("http://"+addr.String(), token).Me(ctx)
	require.NoError(t, err)
	require.Equal(t, "admin", me.Name)
	cancel()
	require.NoError(t, <-done)
	require.NotContains(t, logs.String(), token)
	require.Contains(t, logs.String(), "/login#code=")
}
