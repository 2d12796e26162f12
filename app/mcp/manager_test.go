package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/api"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/store"
)

var _ api.MCPServers = (*Manager)(nil)

var objectSchema = json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}}}`)

// testServer is an in-process MCP server with a tool per case.
type testServer struct {
	srv *mcp.Server

	mu       sync.Mutex
	sessions []*mcp.ServerSession

	// cancelNotes gets every notifications/cancelled the server receives;
	// slowEnded the reason each "slow" call's context ended.
	cancelNotes chan string
	slowStarted chan struct{}
	slowEnded   chan error
}

func newTestServer(t *testing.T) *testServer {
	ts := &testServer{
		srv:         mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil),
		cancelNotes: make(chan string, 10), slowStarted: make(chan struct{}, 10), slowEnded: make(chan error, 10),
	}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	ts.srv.AddTool(&mcp.Tool{Name: "echo", Description: "Echoes.", InputSchema: objectSchema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ Message string }
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, err
			}
			return text(args.Message), nil
		})
	ts.srv.AddTool(&mcp.Tool{Name: "idem", InputSchema: objectSchema, Annotations: &mcp.ToolAnnotations{IdempotentHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("set"), nil })
	ts.srv.AddTool(&mcp.Tool{Name: "write", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("written"), nil })
	ts.srv.AddTool(&mcp.Tool{Name: "fail", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "boom"}}}, nil
		})
	ts.srv.AddTool(&mcp.Tool{Name: "all", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "t"},
				&mcp.ImageContent{Data: []byte("png!"), MIMEType: "image/png"},
				&mcp.AudioContent{Data: []byte("wav"), MIMEType: "audio/wav"},
				&mcp.ResourceLink{URI: "file:///x", Name: "x"},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///y", MIMEType: "text/plain", Text: "y"}},
			}, StructuredContent: map[string]any{"ok": true}}, nil
		})
	ts.srv.AddTool(&mcp.Tool{Name: "slow", InputSchema: objectSchema},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ts.slowStarted <- struct{}{}
			<-ctx.Done()
			ts.slowEnded <- ctx.Err()
			return nil, ctx.Err()
		})
	ts.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/cancelled" {
				ts.cancelNotes <- fmt.Sprint(req.GetParams().(*mcp.CancelledParams).RequestID)
			}
			return next(ctx, method, req)
		}
	})
	return ts
}

// dial connects a new in-memory session of the server.
func (ts *testServer) dial(t *testing.T) func(Server) mcp.Transport {
	return func(Server) mcp.Transport {
		client, server := mcp.NewInMemoryTransports()
		ss, err := ts.srv.Connect(context.Background(), server, nil)
		if err != nil {
			t.Errorf("server connect: %v", err)
		}
		ts.mu.Lock()
		ts.sessions = append(ts.sessions, ss)
		ts.mu.Unlock()
		return client
	}
}

// kill ends the server's side of the latest session, as a crash would.
func (ts *testServer) kill() {
	ts.mu.Lock()
	ss := ts.sessions[len(ts.sessions)-1]
	ts.mu.Unlock()
	_ = ss.Close()
}

func (ts *testServer) dials() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.sessions)
}

type fixture struct {
	m   *Manager
	ts  *testServer
	reg *prometheus.Registry
}

// setup starts a manager whose servers all reach one in-memory test
// server; cfg "t" is the default.
func setup(t *testing.T, servers ...Server) fixture {
	t.Helper()
	if len(servers) == 0 {
		servers = []Server{{Name: "t"}}
	}
	f := fixture{ts: newTestServer(t), reg: prometheus.NewRegistry()}
	f.m = NewManager(testConfig(servers...), Options{Registerer: f.reg, MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond})
	f.m.dial = f.ts.dial(t)
	t.Cleanup(func() { require.NoError(t, f.m.Close()) })
	return f
}

// testConfig fills in what setup's servers leave out: their ids, a
// command (the in-memory dial replaces it) and the default timeout.
func testConfig(servers ...Server) Config {
	servers = slices.Clone(servers)
	for i := range servers {
		servers[i].ID = ServerID(servers[i].Name)
		if servers[i].Command == "" && servers[i].URL == "" {
			servers[i].Command = "in-memory"
		}
		if servers[i].Timeout == 0 {
			servers[i].Timeout = DefaultTimeout
		}
	}
	return Config{Servers: servers}
}

// waitUntil waits for cond on server name's state, woken by its changes.
func waitUntil(t *testing.T, m *Manager, name string, cond func(s *server) bool) {
	t.Helper()
	s := m.byID[ServerID(name)]
	for {
		s.mu.Lock()
		ok, changed := cond(s), s.changed
		s.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-t.Context().Done():
			t.Fatalf("server %s: condition not reached", name)
		}
	}
}

func names(ts []tools.Tool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name()
	}
	return out
}

func find(t *testing.T, ts []tools.Tool, name string) *Tool {
	t.Helper()
	i := slices.IndexFunc(ts, func(x tools.Tool) bool { return x.Name() == name })
	require.GreaterOrEqual(t, i, 0, "no tool %s in %v", name, names(ts))
	return ts[i].(*Tool)
}

func TestToolsListsAndClassifies(t *testing.T) {
	t.Parallel()
	f := setup(t, Server{Name: "t", Effects: map[string]string{"fail": store.EffectIdempotent, "echo": store.EffectEffectful}})
	got := f.m.Tools(t.Context(), anAdmin, nil)
	require.Equal(t, []string{"t__all", "t__echo", "t__fail", "t__idem", "t__slow", "t__write"}, names(got))

	echo := find(t, got, "t__echo")
	require.Equal(t, "echo", echo.MCPName())
	require.Equal(t, "Echoes.", echo.Description())
	require.JSONEq(t, string(objectSchema), string(echo.Schema()))
	require.Equal(t, "t", echo.ServerName())
	require.Equal(t, ServerID("t"), echo.ServerID())
	for name, want := range map[string][2]string{
		"t__echo":  {store.EffectEffectful, sdk.MCPEffectSourceConfig}, // config beats readOnlyHint
		"t__fail":  {store.EffectIdempotent, sdk.MCPEffectSourceConfig},
		"t__idem":  {store.EffectIdempotent, sdk.MCPEffectSourceAnnotation},
		"t__write": {store.EffectEffectful, sdk.MCPEffectSourceDefault},
	} {
		tool := find(t, got, name)
		require.Equal(t, want, [2]string{tool.Effect(), tool.EffectSource()}, name)
	}
	// Listing again reuses the connection and its cached tools/list.
	require.Len(t, f.m.Tools(t.Context(), anAdmin, nil), 6)
	require.Equal(t, 1, f.ts.dials())
}

func TestAnnotationReadOnlyIsPure(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tool := find(t, f.m.Tools(t.Context(), anAdmin, nil), "t__echo")
	require.Equal(t, store.EffectPure, tool.Effect())
	require.Equal(t, sdk.MCPEffectSourceAnnotation, tool.EffectSource())
}

func TestToolsSelectsServers(t *testing.T) {
	t.Parallel()
	f := setup(t, Server{Name: "a", Include: []string{"echo"}}, Server{Name: "b", Include: []string{"echo"}}, Server{Name: "off", Disabled: true})
	require.Nil(t, f.m.Tools(t.Context(), anAdmin, []uuid.UUID{}))
	require.Equal(t, 0, f.ts.dials(), "an empty selection connects nothing")
	require.Equal(t, []string{"b__echo"}, names(f.m.Tools(t.Context(), anAdmin, []uuid.UUID{ServerID("b"), uuid.New()})))
	require.Equal(t, 1, f.ts.dials(), "only the selected server is connected")
	require.Equal(t, []string{"a__echo", "b__echo"}, names(f.m.Tools(t.Context(), anAdmin, nil)))
	require.Empty(t, f.m.Tools(t.Context(), anAdmin, []uuid.UUID{ServerID("off")}))
	require.Equal(t, 2, f.ts.dials(), "a disabled server is never connected")

	require.True(t, f.m.Has(ServerID("a")))
	require.True(t, f.m.Has(ServerID("off")))
	require.False(t, f.m.Has(ServerID("c")))
}

func TestIncludeExclude(t *testing.T) {
	t.Parallel()
	f := setup(t,
		Server{Name: "inc", Include: []string{"echo", "fail", "write", "nope"}, Exclude: []string{"write"}},
		Server{Name: "exc", Exclude: []string{"slow", "all"}})
	require.Equal(t, []string{"exc__echo", "exc__fail", "exc__idem", "exc__write", "inc__echo", "inc__fail"},
		names(f.m.Tools(t.Context(), anAdmin, nil)))
}

func TestStatus(t *testing.T) {
	t.Parallel()
	f := setup(t, Server{Name: "t", Include: []string{"echo", "write"}}, Server{Name: "off", Disabled: true})
	f.m.Tools(t.Context(), anAdmin, nil) // connect and wait
	require.Equal(t, []sdk.MCPServer{
		{ID: ServerID("off"), Name: "off", Transport: sdk.MCPTransportStdio, State: sdk.MCPStateDisabled, Tools: []sdk.MCPTool{}},
		{ID: ServerID("t"), Name: "t", Transport: sdk.MCPTransportStdio, State: sdk.MCPStateConnected, Tools: []sdk.MCPTool{
			{Name: "t__echo", MCPName: "echo", Description: "Echoes.", Effect: store.EffectPure, EffectSource: sdk.MCPEffectSourceAnnotation},
			{Name: "t__write", MCPName: "write", Effect: store.EffectEffectful, EffectSource: sdk.MCPEffectSourceDefault},
		}},
	}, f.m.Status(t.Context(), anAdmin))
}

func TestStatusConnectsWithoutWaiting(t *testing.T) {
	t.Parallel()
	f := setup(t)
	st := f.m.Status(t.Context(), anAdmin)
	require.Len(t, st, 1)
	require.Contains(t, []string{sdk.MCPStateConnecting, sdk.MCPStateConnected}, st[0].State)
	waitUntil(t, f.m, "t", func(s *server) bool { return s.state == sdk.MCPStateConnected })
	require.Len(t, f.m.Status(t.Context(), anAdmin)[0].Tools, 6)
}

func TestRun(t *testing.T) {
	t.Parallel()
	f := setup(t)
	got := f.m.Tools(t.Context(), anAdmin, nil)

	out, err := find(t, got, "t__echo").Run(t.Context(), json.RawMessage(`{"message":"hi"}`))
	require.NoError(t, err)
	require.JSONEq(t, `"hi"`, string(out))

	out, err = find(t, got, "t__all").Run(t.Context(), nil)
	require.NoError(t, err)
	require.JSONEq(t, `{"content":[
		{"type":"text","text":"t"},
		{"type":"image","mimeType":"image/png","bytes":4,"data":"cG5nIQ=="},
		{"type":"audio","mimeType":"audio/wav","bytes":3,"data":"d2F2"},
		{"type":"resource_link","uri":"file:///x","name":"x"},
		{"type":"resource","resource":{"uri":"file:///y","mimeType":"text/plain","text":"y"}}
	],"structuredContent":{"ok":true}}`, string(out))

	_, err = find(t, got, "t__echo").Run(t.Context(), json.RawMessage(`[1]`))
	require.ErrorIs(t, err, errNotObject)
}

func TestRunIsError(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, err := find(t, f.m.Tools(t.Context(), anAdmin, nil), "t__fail").Run(t.Context(), json.RawMessage(`{}`))
	var te *ToolError
	require.ErrorAs(t, err, &te)
	require.Equal(t, "boom", err.Error())
	require.JSONEq(t, `"boom"`, string(te.Result))
}

func TestRunTimeoutCancels(t *testing.T) {
	t.Parallel()
	f := setup(t, Server{Name: "t", Timeout: 20 * time.Millisecond})
	_, err := find(t, f.m.Tools(t.Context(), anAdmin, nil), "t__slow").Run(t.Context(), json.RawMessage(`{}`))
	require.ErrorContains(t, err, "MCP tool t__slow gave no result within 20ms; the call was cancelled")
	// The server hears of it: notifications/cancelled ends the handler.
	<-f.ts.cancelNotes
	require.ErrorIs(t, <-f.ts.slowEnded, context.Canceled)
}

func TestRunInterruptedCancels(t *testing.T) {
	t.Parallel()
	f := setup(t)
	slow := find(t, f.m.Tools(t.Context(), anAdmin, nil), "t__slow")
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := slow.Run(ctx, json.RawMessage(`{}`))
		errc <- err
	}()
	<-f.ts.slowStarted
	cancel()
	require.ErrorContains(t, <-errc, "MCP tool t__slow interrupted; the call was cancelled")
	<-f.ts.cancelNotes
	require.ErrorIs(t, <-f.ts.slowEnded, context.Canceled)
}

func TestListChangedRefreshes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	require.Len(t, f.m.Tools(t.Context(), anAdmin, nil), 6)
	f.ts.srv.AddTool(&mcp.Tool{Name: "new", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	waitUntil(t, f.m, "t", func(s *server) bool { return len(s.tools) == 7 })
	require.Contains(t, names(f.m.Tools(t.Context(), anAdmin, nil)), "t__new")

	f.ts.srv.RemoveTools("new", "slow")
	waitUntil(t, f.m, "t", func(s *server) bool { return len(s.tools) == 5 })
	require.NotContains(t, names(f.m.Tools(t.Context(), anAdmin, nil)), "t__slow")
	require.Equal(t, 1, f.ts.dials(), "a refresh keeps the connection")
}

func TestReconnectAfterServerDies(t *testing.T) {
	t.Parallel()
	f := setup(t)
	echo := find(t, f.m.Tools(t.Context(), anAdmin, nil), "t__echo")
	f.ts.kill()
	var lost string
	waitUntil(t, f.m, "t", func(s *server) bool { lost = s.lastErr; return lost != "" })
	require.Contains(t, lost, "connection lost")
	waitUntil(t, f.m, "t", func(s *server) bool { return s.state == sdk.MCPStateConnected })
	require.Equal(t, 2, f.ts.dials())
	require.Nil(t, f.m.Status(t.Context(), anAdmin)[0].LastError, "connected again: no error to show")
	require.Equal(t, 1.0, testutil.ToFloat64(f.m.failures.WithLabelValues("t")))

	// A tool from before the loss calls through the new session.
	out, err := echo.Run(t.Context(), json.RawMessage(`{"message":"again"}`))
	require.NoError(t, err)
	require.JSONEq(t, `"again"`, string(out))
}

// failingTransport refuses to connect.
type failingTransport struct{}

func (failingTransport) Connect(context.Context) (mcp.Connection, error) {
	return nil, errors.New("refused")
}

func TestFailedServerIsLeftOut(t *testing.T) {
	t.Parallel()
	f := setup(t, Server{Name: "bad"}, Server{Name: "good", Include: []string{"echo"}})
	good := f.m.dial
	f.m.dial = func(s Server) mcp.Transport {
		if s.Name == "bad" {
			return failingTransport{}
		}
		return good(s)
	}
	require.Equal(t, []string{"good__echo"}, names(f.m.Tools(t.Context(), anAdmin, nil)))
	st := f.m.Status(t.Context(), anAdmin)
	require.Equal(t, sdk.MCPStateFailed, st[0].State)
	require.Contains(t, *st[0].LastError, "refused")
	require.Empty(t, st[0].Tools)
	require.Nil(t, st[1].LastError)

	// It keeps trying, each failure counted.
	waitUntil(t, f.m, "bad", func(*server) bool { return testutil.ToFloat64(f.m.failures.WithLabelValues("bad")) >= 2 })
	mfs, err := f.reg.Gather()
	require.NoError(t, err)
	require.Equal(t, "chatd_mcp_server_failures_total", mfs[0].GetName())

	_, err = find(t, f.m.Tools(t.Context(), anAdmin, nil), "good__echo").Run(t.Context(), json.RawMessage(`{"message":"x"}`))
	require.NoError(t, err)
}

// silentTransport connects to a peer that reads and never answers.
type silentTransport struct{ wg *sync.WaitGroup }

func (s silentTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	client, peer := net.Pipe()
	s.wg.Go(func() {
		_, _ = io.Copy(io.Discard, peer)
		peer.Close()
	})
	return (&mcp.IOTransport{Reader: client, Writer: client}).Connect(ctx)
}

func TestConnectTimeout(t *testing.T) {
	t.Parallel()
	var peers sync.WaitGroup
	defer peers.Wait()
	fake := clock.NewFake(time.Unix(0, 0))
	m := NewManager(Config{Servers: []Server{{Name: "mute", ID: ServerID("mute"), Command: "x", Timeout: time.Minute}}},
		Options{Clock: fake, ConnectTimeout: 5 * time.Second})
	defer m.Close()
	m.dial = func(Server) mcp.Transport { return silentTransport{&peers} }

	done := make(chan []tools.Tool)
	go func() { done <- m.Tools(t.Context(), anAdmin, nil) }()
	// The attempt's watchdog and Tools' wait.
	require.NoError(t, fake.BlockUntil(t.Context(), 2))
	fake.Advance(5 * time.Second)
	require.Empty(t, <-done)
	waitUntil(t, m, "mute", func(s *server) bool { return s.state == sdk.MCPStateFailed })
	require.Contains(t, *m.Status(t.Context(), anAdmin)[0].LastError, "no answer within 5s")
}

func TestClosedManagerOffersNothing(t *testing.T) {
	t.Parallel()
	f := setup(t)
	echo := find(t, f.m.Tools(t.Context(), anAdmin, nil), "t__echo")
	require.NoError(t, f.m.Close())
	require.Empty(t, f.m.Tools(t.Context(), anAdmin, nil))
	_, err := echo.Run(t.Context(), json.RawMessage(`{"message":"late"}`))
	require.ErrorContains(t, err, "shutting down")
	require.NoError(t, f.m.Close(), "Close is idempotent")
}

func TestUnknownConfiguredToolsAreLogged(t *testing.T) {
	t.Parallel()
	var buf safeBuffer
	ts := newTestServer(t)
	m := NewManager(Config{Servers: []Server{{Name: "t", ID: ServerID("t"), Command: "x", Timeout: time.Minute,
		Include: []string{"echo", "ecko"}, Exclude: []string{"wirte"}, Effects: map[string]string{"echo": "pure", "fial": "pure"}}}},
		Options{Log: slog.New(slog.NewTextHandler(&buf, nil))})
	defer m.Close()
	m.dial = ts.dial(t)
	require.Len(t, m.Tools(t.Context(), anAdmin, nil), 1)
	require.Contains(t, buf.String(), "MCP config names tools the server does not list")
	require.Contains(t, buf.String(), "tools=\"[ecko wirte fial]\"")
}

// safeBuffer is a bytes.Buffer for concurrent log writes.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
