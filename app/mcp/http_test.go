package mcp

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/sdk"
)

// recorder remembers the requests' methods and Authorization headers.
type recorder struct {
	mu      sync.Mutex
	auth    []string
	methods []string
}

func (r *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.auth = append(r.auth, req.Header.Get("Authorization"))
		r.methods = append(r.methods, req.Method)
		r.mu.Unlock()
		h.ServeHTTP(w, req)
	})
}

func (r *recorder) headers() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.auth...)
}

func newHTTPManager(t *testing.T, s Server) *Manager {
	t.Helper()
	s.ID, s.Name = ServerID("h"), "h"
	if s.Timeout == 0 {
		s.Timeout = DefaultTimeout
	}
	m := NewManager(Config{Servers: []Server{s}}, Options{})
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	return m
}

func callEcho(t *testing.T, m *Manager) {
	t.Helper()
	out, err := find(t, m.Tools(t.Context(), anAdmin, nil), "h__echo").Run(t.Context(), json.RawMessage(`{"message":"over http"}`))
	require.NoError(t, err)
	require.JSONEq(t, `"over http"`, string(out))
}

// checkHTTPTransport serves the test server through handler, connects a
// manager to it with an Authorization header, calls a tool, and checks
// the transport it settled on and that every request carried the header.
func checkHTTPTransport(t *testing.T, handler func(func(*http.Request) *mcp.Server) http.Handler, transport, auth string) {
	t.Helper()
	ts := newTestServer(t)
	var rec recorder
	hs := httptest.NewServer(rec.wrap(handler(func(*http.Request) *mcp.Server { return ts.srv })))
	t.Cleanup(hs.Close) // after the manager's Close (cleanups run last first)
	m := newHTTPManager(t, Server{URL: hs.URL, Headers: map[string]string{"Authorization": auth}})

	require.Len(t, m.Tools(t.Context(), anAdmin, nil), 6)
	callEcho(t, m)
	st := m.Status(t.Context(), anAdmin)[0]
	require.Equal(t, transport, st.Transport)
	require.Equal(t, sdk.MCPStateConnected, st.State)
	for _, h := range rec.headers() {
		require.Equal(t, auth, h, "every request carries the configured headers")
	}
}

func TestStreamableHTTP(t *testing.T) {
	t.Parallel()
	checkHTTPTransport(t, func(get func(*http.Request) *mcp.Server) http.Handler {
		return mcp.NewStreamableHTTPHandler(get, nil)
	}, sdk.MCPTransportStreamableHTTP, "Bearer s3cret")
}

func TestStreamableHTTPListChanged(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ts.srv }, nil))
	t.Cleanup(hs.Close) // after the manager's Close (cleanups run last first)
	m := newHTTPManager(t, Server{URL: hs.URL})
	require.Len(t, m.Tools(t.Context(), anAdmin, nil), 6)
	ts.srv.RemoveTools("slow")
	waitUntil(t, m, "h", func(s *server) bool { return len(s.tools) == 5 })
}

// A server with only the old HTTP+SSE transport refuses the Streamable
// POST with a 4xx; the client then opens the SSE stream.
func TestSSEFallback(t *testing.T) {
	t.Parallel()
	checkHTTPTransport(t, func(get func(*http.Request) *mcp.Server) http.Handler {
		return mcp.NewSSEHandler(get, nil)
	}, sdk.MCPTransportSSE, "Bearer old")
}

// Refused credentials are not a sign of an old server: no fallback, and
// the error says what the server answered.
func TestNoFallbackOnUnauthorized(t *testing.T) {
	t.Parallel()
	var rec recorder
	hs := httptest.NewServer(rec.wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "who are you", http.StatusUnauthorized)
	})))
	t.Cleanup(hs.Close) // after the manager's Close (cleanups run last first)
	m := newHTTPManager(t, Server{URL: hs.URL + "/mcp?key=hunter2"})
	require.Empty(t, m.Tools(t.Context(), anAdmin, nil))
	st := m.Status(t.Context(), anAdmin)[0]
	require.Equal(t, sdk.MCPStateFailed, st.State)
	require.Equal(t, sdk.MCPTransportStreamableHTTP, st.Transport)
	require.Contains(t, *st.LastError, "streamable HTTP")
	require.NotContains(t, *st.LastError, "HTTP+SSE")
	require.NotContains(t, *st.LastError, "hunter2", "the URL's query is not shown")
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.NotContains(t, rec.methods, http.MethodGet, "no GET for an SSE stream")
}

func TestFailedURLIsRedacted(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1.
	m := newHTTPManager(t, Server{URL: "http://user:pw@127.0.0.1:1/mcp?token=hunter2"})
	require.Empty(t, m.Tools(t.Context(), anAdmin, nil))
	msg := *m.Status(t.Context(), anAdmin)[0].LastError
	require.NotContains(t, msg, "hunter2")
	require.NotContains(t, msg, "pw@")
	require.True(t, strings.Contains(msg, "127.0.0.1:1"), msg)
}

// A server that restarts loses its sessions: the client notices and
// opens a new one.
func TestStreamableHTTPReconnectsAfterSessionLoss(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	newHandler := func() http.Handler {
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ts.srv }, nil)
	}
	var current atomic.Pointer[http.Handler]
	h := newHandler()
	current.Store(&h)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*current.Load()).ServeHTTP(w, r) }))
	t.Cleanup(hs.Close) // after the manager's Close (cleanups run last first)
	m := newHTTPManager(t, Server{URL: hs.URL})
	callEcho(t, m)

	// The restarted server forgets the old session; its end is closed at
	// the end of the test, as the process's exit would.
	old := slices.Collect(ts.srv.Sessions())
	t.Cleanup(func() {
		for _, ss := range old {
			_ = ss.Close()
		}
	})
	restarted := newHandler()
	current.Store(&restarted)
	hs.CloseClientConnections()
	waitUntil(t, m, "h", func(s *server) bool { return s.lastErr != "" })
	waitUntil(t, m, "h", func(s *server) bool { return s.state == sdk.MCPStateConnected })
	callEcho(t, m)
}
