package e2e_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/demo"
	"github.com/chatd/chatd/app/sdk"
)

const connToken = "conn-test-token"

// serve runs an app with App.Run (the production server, with its
// timeouts and connection cap) on a loopback port with cfg until the test
// ends, and returns its address.
func serve(t *testing.T, cfg config.Config) string {
	t.Helper()
	cfg.BootstrapToken = connToken
	h := apptest.Start(t, apptest.Options{Run: true, Config: cfg})
	return strings.TrimPrefix(h.URL, "http://")
}

// dialRaw opens a TCP connection whose reads fail after a bound, so a
// server that never closes fails the test instead of hanging it.
func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	return c
}

// waitClosed reads until the server closes c and returns what it sent.
func waitClosed(t *testing.T, c net.Conn) string {
	t.Helper()
	b, err := io.ReadAll(c)
	if isTimeout(err) {
		t.Fatalf("the server kept the connection open (read so far: %q)", b)
	}
	return string(b)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// accepted reports whether a new connection stays open (it was accepted
// and waits for a request) rather than being answered and closed.
func accepted(addr string) bool {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	_, err = c.Read(make([]byte, 1))
	return isTimeout(err)
}

// TestSlowBodyCutOff: a client that sends the headers of a login and then
// trickles (here: withholds) its body is cut off after the read timeout,
// on the unauthenticated login route.
func TestSlowBodyCutOff(t *testing.T) {
	t.Parallel()
	addr := serve(t, config.Config{ReadTimeout: 300 * time.Millisecond})
	c := dialRaw(t, addr)
	_, err := io.WriteString(c, "POST /api/v2/auth/login HTTP/1.1\r\nHost: chatd\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"token\":")
	require.NoError(t, err)
	// Without a read timeout the server would wait for the rest of the
	// body for ever, and waitClosed's 10 s client deadline fails the test.
	// (No timed assertion: the server's deadline starts at accept, before
	// anything the test could measure from.)
	waitClosed(t, c)
}

// TestIdleKeepAliveClosed: a keep-alive connection left idle after its
// answer is closed after the idle timeout.
func TestIdleKeepAliveClosed(t *testing.T) {
	t.Parallel()
	addr := serve(t, config.Config{IdleTimeout: 300 * time.Millisecond})
	c := dialRaw(t, addr)
	_, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: chatd\r\n\r\n")
	require.NoError(t, err)
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.False(t, resp.Close, "the connection is kept alive")
	rest, err := io.ReadAll(r)
	require.False(t, isTimeout(err), "the idle keep-alive connection was not closed")
	require.Empty(t, rest)
}

// TestUnauthConnCapPerIP: past the cap, a client address's next
// unauthenticated connection is answered 429 and closed; a connection that
// authenticates, or closes, frees its slot.
func TestUnauthConnCapPerIP(t *testing.T) {
	t.Parallel()
	addr := serve(t, config.Config{MaxUnauthConnsPerIP: 2})
	first, second := dialRaw(t, addr), dialRaw(t, addr)
	// Both are accepted before the third: the server accepts in order. A
	// request on the second proves it was.
	get := func(c net.Conn, r *bufio.Reader, path, token string) *http.Response {
		t.Helper()
		req := "GET " + path + " HTTP/1.1\r\nHost: chatd\r\n"
		if token != "" {
			req += "Authorization: Bearer " + token + "\r\n"
		}
		_, err := io.WriteString(c, req+"\r\n")
		require.NoError(t, err)
		resp, err := http.ReadResponse(r, nil)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	secondR := bufio.NewReader(second)
	require.Equal(t, http.StatusOK, get(second, secondR, "/healthz", "").StatusCode)

	third := waitClosed(t, dialRaw(t, addr))
	require.True(t, strings.HasPrefix(third, "HTTP/1.1 429 "), "the third unauthenticated connection is refused: %q", third)
	require.Contains(t, third, `"code":"TOO_MANY_CONNECTIONS"`)

	// A bad token does not free the slot; a good one does.
	require.Equal(t, http.StatusUnauthorized, get(second, secondR, "/api/v2/chats", "wrong").StatusCode)
	require.Contains(t, waitClosed(t, dialRaw(t, addr)), " 429 ")
	require.Equal(t, http.StatusOK, get(second, secondR, "/api/v2/chats", connToken).StatusCode)
	fourth := dialRaw(t, addr)
	require.Equal(t, http.StatusOK, get(fourth, bufio.NewReader(fourth), "/healthz", "").StatusCode, "an authenticated connection leaves the budget")
	require.Contains(t, waitClosed(t, dialRaw(t, addr)), " 429 ", "first and fourth hold the two slots")

	// Closing frees a slot too.
	require.NoError(t, first.Close())
	require.Eventually(t, func() bool { return accepted(addr) }, 10*time.Second, 20*time.Millisecond,
		"a closed connection frees its slot")
}

// TestStreamOutlivesRequestTimeouts: the read and write timeouts bound
// requests, not the WebSocket stream: with both far shorter than the
// stream's life (and pings crossing them), it stays open and delivers.
func TestStreamOutlivesRequestTimeouts(t *testing.T) {
	t.Parallel()
	// Long enough for the ordinary requests below (create, send) to finish
	// within it under -race on a loaded CI machine; at 200 ms they did not.
	const timeout = 2 * time.Second
	addr := serve(t, config.Config{
		ReadTimeout: timeout, WriteTimeout: timeout, StreamPingInterval: timeout / 4, DemoTokenDelay: demo.NoDelay,
	})
	base := "http://" + addr
	client := sdk.New(base, connToken)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	chat, err := client.CreateChat(ctx, sdk.CreateChatRequest{Title: "timeouts"})
	require.NoError(t, err)
	conn, _, err := websocket.Dial(ctx, "ws://"+addr+"/api/v2/chats/"+chat.ID.String()+"/stream", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + connToken}},
	})
	require.NoError(t, err)
	defer conn.CloseNow()
	conn.SetReadLimit(8 << 20)

	frames := make(chan []byte, 64)
	readErr := make(chan error, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // ends the reader before wg.Wait
	wg.Go(func() {
		for {
			_, b, err := conn.Read(ctx)
			if err != nil {
				readErr <- err
				return
			}
			select {
			case frames <- b:
			case <-ctx.Done():
				return
			}
		}
	})
	select {
	case <-frames: // the bootstrap
	case err := <-readErr:
		t.Fatalf("stream: %v", err)
	}
	// Stay past both timeouts several times over; a deadline left on the
	// connection would end it here.
	select {
	case err := <-readErr:
		t.Fatalf("the stream ended after the request timeouts: %v", err)
	case <-time.After(5 * timeout / 2):
	}
	_, err = client.SendMessage(ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("still there?")})
	require.NoError(t, err)
	select {
	case <-frames:
	case err := <-readErr:
		t.Fatalf("the stream ended: %v", err)
	}
}

// TestConnSettingsFromEnv: "0" in the environment turns a timeout or the
// connection cap off; unset leaves Config's zero, which takes the default.
func TestConnSettingsFromEnv(t *testing.T) {
	t.Setenv("CHATD_READ_TIMEOUT", "0")
	t.Setenv("CHATD_WRITE_TIMEOUT", "90s")
	t.Setenv("CHATD_MAX_UNAUTH_CONNS_PER_IP", "0")
	t.Setenv("CHATD_STREAM_PONG_TIMEOUT", "3s")
	c := fromEnv(t)
	require.Negative(t, c.ReadTimeout, "0: no read timeout")
	require.Equal(t, 90*time.Second, c.WriteTimeout)
	require.Zero(t, c.IdleTimeout, "unset: the default")
	require.Negative(t, c.MaxUnauthConnsPerIP, "0: unlimited")
	require.Equal(t, 3*time.Second, c.StreamPongTimeout)
}
