package admin

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// serveGuarded serves a 204 handler on a fresh socket behind sameUser
// with allow, and returns an HTTP client for it and the refusal count.
func serveGuarded(t *testing.T, allow func(uid int) bool) (*http.Client, *atomic.Int32) {
	t.Helper()
	if !peerCredentialsChecked {
		t.Skip("no peer credentials on this system")
	}
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(t, err)
	var refused atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(sameUser{UnixListener: ln, allow: allow, refuse: func(int, error) { refused.Add(1) }})
	}()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}}
	t.Cleanup(client.CloseIdleConnections)
	return client, &refused
}

func TestPeerUIDIsTheConnectingProcess(t *testing.T) {
	var seen atomic.Int64
	seen.Store(-1)
	client, refused := serveGuarded(t, func(uid int) bool { seen.Store(int64(uid)); return true })
	resp, err := client.Get("http://admin/")
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Equal(t, int64(os.Getuid()), seen.Load(), "the peer is this process's user")
	require.Zero(t, refused.Load())
}

func TestAdminSocketRefusesOtherUsers(t *testing.T) {
	client, refused := serveGuarded(t, func(int) bool { return false })
	_, err := client.Get("http://admin/")
	require.Error(t, err, "the connection is closed before any request is served")
	require.Equal(t, int32(1), refused.Load())
}
