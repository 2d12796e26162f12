package api_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/api"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// login returns the Cookie header of a new web session of token's user.
func (h *fixture) login(t testing.TB, token string) string {
	t.Helper()
	r := h.raw(t, "POST", "/api/v2/auth/login", `{"token":"`+token+`"}`)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	c := sessionCookie(t, r)
	return api.SessionCookie + "=" + c.Value
}

func sessionCookie(t testing.TB, r rawResponse) *http.Cookie {
	t.Helper()
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == api.SessionCookie {
			return c
		}
	}
	t.Fatalf("no %s cookie in %v", api.SessionCookie, r.header.Values("Set-Cookie"))
	return nil
}

// origin is the server's own origin, as a browser names it.
func (h *fixture) origin() string { return h.srv.URL }

// countChats is how many chats alice sees.
func (h *fixture) countChats(t testing.TB) int {
	t.Helper()
	chats, err := h.alice.ListChats(h.ctx, sdk.ListChatsOptions{})
	require.NoError(t, err)
	return len(chats)
}

// A page of another origin (the same site on another port, a subdomain)
// cannot change state with the victim's session cookie: not with a form
// (text/plain, urlencoded), not with a no-cors fetch, not by logging the
// victim into another account. The UI's own requests and token clients
// still work.
func TestCrossSiteForgeryRefused(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		cookie := h.login(t, h.aliceToken)
		own := h.origin()
		sameSite := strings.Replace(own, "127.0.0.1", "localhost", 1) // another origin of the same machine
		otherPort := "http://127.0.0.1:1"
		body := `{"content":[{"type":"text","text":"hi"}]}`

		refused := []struct {
			name    string
			body    string
			headers []string
		}{
			{"origin of another port", body, []string{"Origin", otherPort, "Sec-Fetch-Site", "same-site"}},
			{"origin of another host", body, []string{"Origin", sameSite}},
			{"https origin over http", body, []string{"Origin", strings.Replace(own, "http:", "https:", 1)}},
			{"opaque origin", body, []string{"Origin", "null"}},
			{"same-site fetch without origin", body, []string{"Sec-Fetch-Site", "same-site"}},
			{"cross-site fetch without origin", body, []string{"Sec-Fetch-Site", "cross-site"}},
			{"text/plain form", body, []string{"Content-Type", "text/plain"}},
			{"urlencoded form", "a=b", []string{"Content-Type", "application/x-www-form-urlencoded"}},
			{"multipart form", "--x--", []string{"Content-Type", "multipart/form-data; boundary=x"}},
			{"text/plain from own origin", body, []string{"Origin", own, "Content-Type", "text/plain"}},
			{"no content type", body, []string{"Content-Type", ""}},
		}
		for _, tc := range refused {
			headers := append([]string{"Cookie", cookie}, tc.headers...)
			r := h.raw(t, "POST", "/api/v2/chats", tc.body, headers...)
			requireJSONError(t, r, http.StatusForbidden, sdk.CodeForbidden)
			require.Equal(t, 0, h.countChats(t), tc.name)
		}

		// Body-less state changes are checked too.
		s := h.seed(t, W)
		for _, path := range []string{"/api/v2/chats/" + s.id.String() + "/interrupt", "/api/v2/auth/logout"} {
			r := h.raw(t, "POST", path, nil, "Cookie", cookie, "Origin", otherPort)
			requireJSONError(t, r, http.StatusForbidden, sdk.CodeForbidden)
		}
		r := h.raw(t, "DELETE", "/api/v2/chats/"+s.id.String(), nil, "Cookie", cookie, "Sec-Fetch-Site", "same-site")
		requireJSONError(t, r, http.StatusForbidden, sdk.CodeForbidden)
		require.True(t, h.view(t, s.id).Found, "the refused delete deleted nothing")
		// The refused logout left the session working.
		require.Equal(t, http.StatusOK, h.raw(t, "GET", "/api/v2/users/me", nil, "Cookie", cookie).status)

		// What the UI sends: JSON from its own origin (Sec-Fetch-Site
		// where the browser has it), and body-less requests without a type.
		r = h.raw(t, "POST", "/api/v2/chats", body, "Cookie", cookie, "Origin", own, "Sec-Fetch-Site", "same-origin")
		require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
		r = h.raw(t, "POST", "/api/v2/chats", body, "Cookie", cookie, "Origin", strings.ToUpper(own),
			"Content-Type", "application/json; charset=utf-8")
		require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
		// A client that is no browser sends neither header.
		r = h.raw(t, "POST", "/api/v2/chats", body, "Cookie", cookie)
		require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
		r = h.raw(t, "POST", "/api/v2/chats/"+s.id.String()+"/interrupt", nil, "Cookie", cookie, "Origin", own)
		require.NotEqual(t, http.StatusForbidden, r.status, "body: %s", r.body)
		// Reads are not state changes.
		r = h.raw(t, "GET", "/api/v2/chats", nil, "Cookie", cookie, "Origin", otherPort, "Sec-Fetch-Site", "cross-site")
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)

		// Header tokens are unaffected, whatever the origin and type.
		for _, auth := range [][]string{{"Authorization", "Bearer " + h.aliceToken}, {"Coder-Session-Token", h.aliceToken}} {
			r = h.raw(t, "POST", "/api/v2/chats", body, auth[0], auth[1], "Cookie", cookie,
				"Origin", otherPort, "Sec-Fetch-Site", "cross-site", "Content-Type", "text/plain")
			require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
		}
		require.Equal(t, 6, h.countChats(t), "the seeded chat and the five allowed creates")
	})
}

// Login CSRF: a page of another origin cannot log the visitor into an
// account of the page's choosing.
func TestCrossSiteLoginRefused(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		login := `{"token":"` + h.aliceToken + `"}`
		for _, prefix := range []string{"/api/v2", "/api/experimental"} {
			for _, headers := range [][]string{
				{"Origin", "http://127.0.0.1:1"},
				{"Origin", "null"},
				{"Sec-Fetch-Site", "cross-site"},
				{"Sec-Fetch-Site", "same-site", "Origin", h.origin()},
				{"Content-Type", "text/plain"},
			} {
				r := h.raw(t, "POST", prefix+"/auth/login", login, headers...)
				requireJSONError(t, r, http.StatusForbidden, sdk.CodeForbidden)
				require.Empty(t, r.header.Values("Set-Cookie"), "%v", headers)
			}
			r := h.raw(t, "POST", prefix+"/auth/login", login, "Origin", h.origin(), "Sec-Fetch-Site", "same-origin")
			require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		}
	})
}

// Behind a TLS-terminating proxy the server's own origin is https, but
// only when a trusted proxy says so.
func TestForgeryCheckBehindProxy(t *testing.T) {
	t.Parallel()
	body := `{"content":[{"type":"text","text":"hi"}]}`
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		untrusted := setup(t, newStore, func(c *config.Config) { c.TrustedProxies = "10.0.0.0/8" })
		trusted := setup(t, newStore, func(c *config.Config) { c.TrustedProxies = "10.0.0.0/8, 127.0.0.1" })
		for _, h := range []*fixture{untrusted, trusted} {
			cookie := h.login(t, h.aliceToken)
			httpsOrigin := strings.Replace(h.origin(), "http:", "https:", 1)
			r := h.raw(t, "POST", "/api/v2/chats", body, "Cookie", cookie, "Origin", httpsOrigin, "X-Forwarded-Proto", "https")
			if h == untrusted {
				requireJSONError(t, r, http.StatusForbidden, sdk.CodeForbidden)
				continue
			}
			require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
			// The proxy says http: the https page is another origin.
			r = h.raw(t, "POST", "/api/v2/chats", body, "Cookie", cookie, "Origin", httpsOrigin, "X-Forwarded-Proto", "http")
			requireJSONError(t, r, http.StatusForbidden, sdk.CodeForbidden)
		}
	})
}

// The session cookie is Secure behind HTTPS (auto), or as configured.
func TestSessionCookieSecure(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		cases := []struct {
			mode, proxies string
			headers       []string
			secure        bool
		}{
			{"", "", nil, false},
			{"auto", "", nil, false},
			{"auto", "", []string{"X-Forwarded-Proto", "https"}, false}, // no trusted proxy
			{"auto", "192.168.0.0/16", []string{"X-Forwarded-Proto", "https"}, false},
			{"auto", "127.0.0.0/8", []string{"X-Forwarded-Proto", "https"}, true},
			{"auto", "::1, 127.0.0.1", []string{"X-Forwarded-Proto", "HTTPS, http"}, true},
			{"auto", "127.0.0.0/8", []string{"X-Forwarded-Proto", "http"}, false},
			{"true", "", nil, true},
			{"false", "127.0.0.0/8", []string{"X-Forwarded-Proto", "https"}, false},
		}
		for _, tc := range cases {
			h := setup(t, newStore, func(c *config.Config) { c.CookieSecure, c.TrustedProxies = tc.mode, tc.proxies })
			r := h.raw(t, "POST", "/api/v2/auth/login", `{"token":"`+h.aliceToken+`"}`, tc.headers...)
			require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
			require.Equal(t, tc.secure, sessionCookie(t, r).Secure, "%+v", tc)
			r = h.raw(t, "POST", "/api/v2/auth/logout", nil, tc.headers...)
			require.Equal(t, tc.secure, sessionCookie(t, r).Secure, "logout %+v", tc)
		}
	})
}

func TestBadWebSettingsRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []config.Config{{CookieSecure: "sometimes"}, {TrustedProxies: "10.0.0.0/99"}, {TrustedProxies: "proxy.example"}} {
		_, err := app.NewWithStore(t.Context(), c, dbtest.NewSQLite(t), io.Discard)
		require.Error(t, err, "%+v", c)
	}
}

// A request with both Content-Length and Transfer-Encoding (a request
// smuggling attempt, RFC 9112 6.1) closes its connection after the answer.
func TestContentLengthWithTransferEncodingCloses(t *testing.T) {
	t.Parallel()
	h := setupOn(t, dbtest.NewSQLite(t))
	conn, err := net.Dial("tcp", h.srv.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	// A bound for a broken server, not a wait: the server answers at once.
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	body := `{"token":"chatd_wrong"}`
	_, err = io.WriteString(conn, "POST /api/v2/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"+
		"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"+
		"17\r\n"+body+"\r\n0\r\n\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	_, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.True(t, resp.Close, "the answer says Connection: close")
	_, err = br.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the server closed the connection")

	// An ordinary request keeps its connection.
	conn2, err := net.Dial("tcp", h.srv.Listener.Addr().String())
	require.NoError(t, err)
	defer conn2.Close()
	require.NoError(t, conn2.SetDeadline(time.Now().Add(10*time.Second)))
	br2 := bufio.NewReader(conn2)
	for range 2 {
		_, err = io.WriteString(conn2, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		resp, err = http.ReadResponse(br2, nil)
		require.NoError(t, err)
		_, err = io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.False(t, resp.Close)
	}
}

// Every API answer, success or error, forbids content sniffing.
func TestNoSniff(t *testing.T) {
	t.Parallel()
	h := setupOn(t, dbtest.NewSQLite(t))
	s := h.seed(t, W)
	bearer := []string{"Authorization", "Bearer " + h.aliceToken}
	for _, r := range []rawResponse{
		h.raw(t, "GET", "/healthz", nil),
		h.raw(t, "GET", "/api/v2/chats", nil, bearer...),
		h.raw(t, "GET", "/api/v2/chats/"+s.id.String(), nil, bearer...),
		h.raw(t, "GET", "/api/v2/chats/not-a-uuid", nil, bearer...),
		h.raw(t, "GET", "/api/v2/users/me", nil),
		h.raw(t, "GET", "/api/v2/nowhere", nil),
		h.raw(t, "DELETE", "/api/v2/chats", nil, bearer...),
		h.raw(t, "GET", "/metrics", nil, "Authorization", "Bearer "+h.adminToken),
		h.raw(t, "GET", "/", nil),
		h.raw(t, "POST", "/api/v2/auth/logout", nil),
	} {
		require.Equal(t, "nosniff", r.header.Get("X-Content-Type-Options"), "status %d body %.100s", r.status, r.body)
	}
}

// Every error is the API's JSON: wrong methods on known paths, unknown
// routes, and WebSocket upgrades the library refuses.
func TestEveryErrorIsJSON(t *testing.T) {
	t.Parallel()
	h := setupOn(t, dbtest.NewSQLite(t))
	s := h.seed(t, W)
	bearer := []string{"Authorization", "Bearer " + h.aliceToken}
	chat := "/api/v2/chats/" + s.id.String()

	methods := []struct {
		method, path, allow string
	}{
		{"POST", "/metrics", "GET, HEAD"},
		{"DELETE", "/metrics", "GET, HEAD"},
		{"POST", "/healthz", "GET, HEAD"},
		{"DELETE", "/api/v2/chats", "GET, HEAD, POST"},
		{"PUT", "/api/experimental/chats", "GET, HEAD, POST"},
		{"PUT", chat, "GET, HEAD, PATCH, DELETE"},
		{"GET", chat + "/interrupt", "POST"},
		{"GET", "/api/v2/auth/login", "POST"},
		{"OPTIONS", "/api/v2/chats", "GET, HEAD, POST"},
		{"POST", "/", "GET, HEAD"},
		{"DELETE", "/login", "GET, HEAD"},
		{"PUT", "/js/app.js", "GET, HEAD"},
	}
	for _, m := range methods {
		r := h.raw(t, m.method, m.path, nil, bearer...)
		requireJSONError(t, r, http.StatusMethodNotAllowed, sdk.CodeMethodNotAllowed)
		require.Equal(t, m.allow, r.header.Get("Allow"), "%s %s", m.method, m.path)
	}
	requireJSONError(t, h.raw(t, "GET", "/api/v2/nowhere", nil, bearer...), http.StatusNotFound, sdk.CodeNotFound)
	requireJSONError(t, h.raw(t, "POST", "/api/v2/nowhere", nil, bearer...), http.StatusNotFound, sdk.CodeNotFound)
	requireJSONError(t, h.raw(t, "POST", "/api/nowhere", nil, bearer...), http.StatusNotFound, sdk.CodeNotFound)
	requireJSONError(t, h.raw(t, "POST", "/api", nil, bearer...), http.StatusNotFound, sdk.CodeNotFound)

	upgrade := []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13",
		"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}
	with := func(extra ...string) []string {
		return append(append(append([]string{}, bearer...), upgrade...), extra...)
	}
	for _, path := range []string{chat + "/stream", chat + "/stream/parts", "/api/experimental/chats/" + s.id.String() + "/stream"} {
		// A plain GET, no upgrade.
		r := h.raw(t, "GET", path, nil, bearer...)
		requireJSONError(t, r, http.StatusUpgradeRequired, sdk.CodeValidation)
		// An unsupported protocol version.
		r = h.raw(t, "GET", path, nil, with("Sec-WebSocket-Version", "8")...)
		requireJSONError(t, r, http.StatusBadRequest, sdk.CodeValidation)
		// No key.
		r = h.raw(t, "GET", path, nil, with("Sec-WebSocket-Key", "")...)
		requireJSONError(t, r, http.StatusBadRequest, sdk.CodeValidation)
		// A page of another origin.
		r = h.raw(t, "GET", path, nil, with("Origin", "http://evil.example")...)
		e := requireJSONError(t, r, http.StatusForbidden, sdk.CodeForbidden)
		require.Contains(t, e.Detail, "evil.example")
		require.Equal(t, "nosniff", r.header.Get("X-Content-Type-Options"))
	}
}

// The stream still upgrades through the JSON refusal writer.
func TestStreamUpgradesFromOwnOrigin(t *testing.T) {
	t.Parallel()
	h := setupOn(t, dbtest.NewSQLite(t))
	s := h.seed(t, W)
	conn, err := net.Dial("tcp", h.srv.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	host := h.srv.Listener.Addr().String()
	_, err = io.WriteString(conn, "GET /api/v2/chats/"+s.id.String()+"/stream HTTP/1.1\r\nHost: "+host+"\r\n"+
		"Authorization: Bearer "+h.aliceToken+"\r\nOrigin: http://"+host+"\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	require.Equal(t, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", resp.Header.Get("Sec-WebSocket-Accept"))
	require.NoError(t, conn.Close())
	if err := resp.Body.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		require.NoError(t, err)
	}
}
