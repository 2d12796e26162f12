package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/chatd/chatd/app/redact"
	"github.com/chatd/chatd/app/sdk"
)

// childGrace is how long a stdio child may take to exit after its stdin
// closes before it is terminated.
const childGrace = 2 * time.Second

// inheritedEnv are the only variables of chatd's environment a stdio
// child gets; the rest (provider keys, the bootstrap token) stays home.
var inheritedEnv = []string{"PATH", "HOME", "LANG", "TMPDIR"}

// session is one live connection to a server.
type session struct {
	cs        *mcp.ClientSession
	transport string
	tools     []*Tool
	done      chan struct{} // closed when the session ends
	waitErr   error         // why, once done is closed
	cleanup   func()
}

// close ends the session and waits for its goroutine.
func (c *session) close() {
	_ = c.cs.Close()
	<-c.done
	c.cleanup()
}

// connect opens a session to s and lists its tools, within the connect
// timeout. ua is a user's authorization on a per-user server (nil: the
// server's shared one).
func (m *Manager) connect(s *server, ua *serverAuth) (*session, error) {
	connCtx, cancelConn := context.WithCancelCause(s.ctx)
	stopWatch := m.watchConnect(s, ua, func() {
		cancelConn(fmt.Errorf("no answer within %s", m.connectTimeout))
	})
	opts := &mcp.ClientOptions{
		Logger:                 m.log.With("mcp_server", s.cfg.Name),
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { s.poke() },
	}
	if m.elicitor != nil {
		opts.ElicitationHandler = m.elicitationHandler(s)
		opts.Capabilities = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
			Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{},
		}}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "chatd", Version: "1"}, opts)
	cs, transport, cleanup, err := m.open(connCtx, client, s, ua)
	var list []*Tool
	if err == nil {
		if list, err = m.listTools(connCtx, s, cs); err != nil {
			_ = cs.Close()
		}
	}
	if stopWatch() && err == nil {
		_ = cs.Close() // the timeout fired just as it answered
		err = context.Cause(connCtx)
	}
	if err != nil {
		if cause := context.Cause(connCtx); cause != nil && s.ctx.Err() == nil {
			err = fmt.Errorf("%w (%v)", cause, err)
		}
		cancelConn(nil)
		cleanup()
		return nil, err
	}
	c := &session{cs: cs, transport: transport, tools: list, done: make(chan struct{})}
	c.cleanup = func() { cancelConn(nil); cleanup() }
	go func() {
		defer close(c.done)
		c.waitErr = cs.Wait()
	}()
	return c, nil
}

// watchConnect calls fn after the connect timeout on the manager's clock
// unless stop comes first; while the server's authorization waits for a
// person's consent the timeout starts over. stop reports whether fn ran
// and waits for it.
func (m *Manager) watchConnect(s *server, ua *serverAuth, fn func()) (stop func() bool) {
	timer := m.clock.NewTimer(m.connectTimeout)
	cancel := make(chan struct{})
	fired := make(chan bool, 1)
	go func() {
		for {
			select {
			case <-timer.C():
				if ua != nil && ua.waiting.Load() || ua == nil && s.awaitsConsent() {
					timer.Reset(m.connectTimeout)
					continue
				}
				fn()
				fired <- true
				return
			case <-cancel:
				fired <- false
				return
			}
		}
	}()
	return func() bool {
		close(cancel)
		timer.Stop()
		return <-fired
	}
}

// after calls fn after d on the manager's clock unless stop comes first;
// stop reports whether fn ran and waits for it.
func (m *Manager) after(d time.Duration, fn func()) (stop func() bool) {
	timer := m.clock.NewTimer(d)
	cancel := make(chan struct{})
	fired := make(chan bool, 1)
	go func() {
		select {
		case <-timer.C():
			fn()
			fired <- true
		case <-cancel:
			fired <- false
		}
	}()
	return func() bool {
		close(cancel)
		timer.Stop()
		return <-fired
	}
}

// open connects client over s's transport: stdio for a command; for a
// URL Streamable HTTP, then HTTP+SSE when the server answered the
// Streamable POST with a 4xx, as the MCP spec says for old servers.
func (m *Manager) open(ctx context.Context, client *mcp.Client, s *server, ua *serverAuth) (cs *mcp.ClientSession, transport string, cleanup func(), err error) {
	cleanup = func() {}
	switch {
	case m.dial != nil:
		cs, err = client.Connect(ctx, m.dial(s.cfg), nil)
		return cs, s.transport, cleanup, err
	case s.cfg.Stdio():
		cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
		cmd.Env = childEnv(s.cfg.Env)
		cmd.Stderr = &lineLog{log: m.log, server: s.cfg.Name, secrets: m.secrets}
		cmd.WaitDelay = childGrace // a grandchild holding stderr open cannot stall Close
		cs, err = client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: childGrace}, nil)
		if err != nil {
			err = fmt.Errorf("start %s: %w", s.cfg.Command, err)
		}
		return cs, sdk.MCPTransportStdio, cleanup, err
	}
	rt := &httpTransport{base: http.DefaultTransport.(*http.Transport).Clone(), headers: s.cfg.Headers}
	cleanup = rt.base.CloseIdleConnections
	hc := &http.Client{Transport: rt}
	st := &mcp.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc}
	a, err := ua, error(nil)
	if a == nil {
		a, err = m.authOf(s)
	}
	if err != nil {
		return nil, sdk.MCPTransportStreamableHTTP, cleanup, err
	}
	if a != nil {
		st.OAuthHandler = a
	}
	cs, err = client.Connect(ctx, st, nil)
	if err == nil {
		return cs, sdk.MCPTransportStreamableHTTP, cleanup, nil
	}
	if !rt.legacy() || ctx.Err() != nil {
		return nil, sdk.MCPTransportStreamableHTTP, cleanup, fmt.Errorf("streamable HTTP: %w", err)
	}
	cs, sseErr := client.Connect(ctx, &mcp.SSEClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc}, nil)
	if sseErr != nil {
		return nil, sdk.MCPTransportStreamableHTTP, cleanup, fmt.Errorf("streamable HTTP: %v; HTTP+SSE: %w", err, sseErr)
	}
	return cs, sdk.MCPTransportSSE, cleanup, nil
}

// childEnv is a stdio child's environment: chatd's PATH, HOME, LANG and
// TMPDIR, then the configured env (which wins).
func childEnv(extra map[string]string) []string {
	env := []string{}
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = slices.DeleteFunc(env, func(e string) bool { return len(e) > len(k) && e[:len(k)+1] == k+"=" })
		env = append(env, k+"="+extra[k])
	}
	return env
}

// httpTransport adds the configured headers and remembers how the server
// answered the first POST (the initialize request).
type httpTransport struct {
	base    *http.Transport
	headers map[string]string

	mu          sync.Mutex
	firstStatus int
}

func (t *httpTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	traced := trace.SpanContextFromContext(req.Context()).IsValid()
	if len(t.headers) > 0 || traced {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
	}
	if traced {
		// The calling stage's trace context (a tool_call's), so the
		// server's spans join the turn's trace.
		propagation.TraceContext{}.Inject(req.Context(), propagation.HeaderCarrier(req.Header))
	}
	resp, err := t.base.RoundTrip(req)
	if err == nil && req.Method == http.MethodPost {
		t.mu.Lock()
		if t.firstStatus == 0 {
			t.firstStatus = resp.StatusCode
		}
		t.mu.Unlock()
	}
	return resp, err
}

// legacy reports whether the first POST was refused the way a server
// with only the old HTTP+SSE transport refuses it: a 4xx that is not
// about credentials or rate.
func (t *httpTransport) legacy() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch st := t.firstStatus; {
	case st == http.StatusUnauthorized, st == http.StatusForbidden, st == http.StatusTooManyRequests:
		return false
	default:
		return st >= 400 && st < 500
	}
}

// redactURL is u without credentials, query or fragment.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(the configured url)"
	}
	p.User, p.RawQuery, p.Fragment = nil, "", ""
	return p.String()
}

// lineLog logs a stdio child's stderr line by line, the secrets masked
// (a server may print its own env).
type lineLog struct {
	log     *slog.Logger
	server  string
	secrets *redact.Secrets
	buf     []byte
}

// maxLogLine caps one logged stderr line.
const maxLogLine = 4096

func (l *lineLog) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			if len(l.buf) > maxLogLine {
				l.emit(l.buf)
				l.buf = l.buf[:0]
			}
			return len(p), nil
		}
		l.emit(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
}

func (l *lineLog) emit(line []byte) {
	line = bytes.TrimRight(line, "\r")
	if len(line) == 0 {
		return
	}
	text := l.secrets.Text(string(line)) // before the cut, which could halve a secret
	l.log.Info("MCP server stderr", "mcp_server", l.server, "line", text[:min(len(text), maxLogLine)])
}

// errNotObject is returned for tool arguments that are not a JSON object.
var errNotObject = errors.New("tool arguments must be a JSON object")
