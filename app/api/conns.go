package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/chatd/chatd/app/sdk"
)

// CodeTooManyConnections is the error code of a connection refused by the
// per-IP cap on unauthenticated connections (docs/API.md).
const CodeTooManyConnections = "TOO_MANY_CONNECTIONS"

// ConnLimiter caps, per client IP, the open connections that have not yet
// carried an authenticated request. Without it one client holds any number
// of connections open with slow or idle requests (the timeouts bound each
// one, not how many there are) until the process runs out of file handles.
// A connection counts from accept until a request on it authenticates (a
// user token or cookie, or a peer replica's token) or it closes, so signed-in
// users with many streams behind one address are not limited by it.
type ConnLimiter struct {
	max  int
	mu   sync.Mutex
	open map[string]int
}

// NewConnLimiter caps the unauthenticated connections per client IP at max.
func NewConnLimiter(max int) *ConnLimiter {
	return &ConnLimiter{max: max, open: map[string]int{}}
}

func (l *ConnLimiter) acquire(ip string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[ip] >= l.max {
		return false
	}
	l.open[ip]++
	return true
}

func (l *ConnLimiter) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[ip]--; l.open[ip] <= 0 {
		delete(l.open, ip)
	}
}

// Listener wraps ln: a connection over the cap is answered 429 and closed
// before any of it is read.
func (l *ConnLimiter) Listener(ln net.Listener) net.Listener {
	return &limitedListener{Listener: ln, limits: l}
}

// Handler frees the connection's slot once one of its requests carries
// valid credentials (authed reports that).
func (l *ConnLimiter) Handler(next http.Handler, authed func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(limitedConnKey{}).(*limitedConn); ok && !c.isFree() && authed(r) {
			c.free()
		}
		next.ServeHTTP(w, r)
	})
}

// ConnContext makes the connection reachable from its requests
// (http.Server.ConnContext).
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if lc, ok := c.(*limitedConn); ok {
		return context.WithValue(ctx, limitedConnKey{}, lc)
	}
	return ctx
}

type limitedConnKey struct{}

type limitedListener struct {
	net.Listener
	limits *ConnLimiter
}

func (ln *limitedListener) Accept() (net.Conn, error) {
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := remoteIP(c.RemoteAddr())
		if ln.limits.acquire(ip) {
			return &limitedConn{Conn: c, limits: ln.limits, ip: ip}, nil
		}
		refuseConn(c, ln.limits.max)
	}
}

// refuseConn answers 429 and closes. The answer fits in a fresh socket's
// send buffer, so the write does not hold up the accept loop; the deadline
// is there in case it would.
func refuseConn(c net.Conn, max int) {
	body, _ := json.Marshal(sdk.Response{
		Message: "Too many connections from your address.",
		Detail:  fmt.Sprintf("at most %d connections per address may be open without authentication; close some or authenticate", max),
		Code:    CodeTooManyConnections,
	})
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = fmt.Fprintf(c, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nContent-Length: %d\r\nRetry-After: 1\r\nConnection: close\r\n\r\n%s", len(body), body)
	_ = c.Close()
}

func remoteIP(a net.Addr) string {
	if tcp, ok := a.(*net.TCPAddr); ok {
		return tcp.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// limitedConn holds a slot of its IP until it authenticates or closes. It
// is also what a hijacked WebSocket closes, so the slot is freed then too.
type limitedConn struct {
	net.Conn
	limits *ConnLimiter
	ip     string
	mu     sync.Mutex
	freed  bool
}

func (c *limitedConn) isFree() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.freed
}

func (c *limitedConn) free() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.freed {
		c.freed = true
		c.limits.release(c.ip)
	}
}

func (c *limitedConn) Close() error {
	c.free()
	return c.Conn.Close()
}

// CloseWrite lets net/http half-close before closing after an error
// answer, as it does on a bare TCP connection, so the client reads the
// answer instead of a reset.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// ReadFrom keeps the TCP connection's sendfile path for static files.
func (c *limitedConn) ReadFrom(r io.Reader) (int64, error) { return io.Copy(c.Conn, r) }
