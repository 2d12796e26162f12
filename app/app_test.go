package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/store"
)

func TestHealthzOnSQLite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, err := app.New(ctx, app.Config{DB: filepath.Join(t.TempDir(), "chatd.db")}, io.Discard)
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
	a, err := app.New(ctx, app.Config{DB: db}, io.Discard)
	require.NoError(t, err)
	defer a.Close()

	_, err = app.New(ctx, app.Config{DB: db}, io.Discard)
	require.ErrorIs(t, err, store.ErrLocked)
	require.Contains(t, err.Error(), "another chatd holds")
}

func TestRunServesUntilCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, app.Config{Addr: "127.0.0.1:0", DB: filepath.Join(t.TempDir(), "chatd.db")}, io.Discard)
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
