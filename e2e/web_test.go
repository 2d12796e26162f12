package e2e_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
)

// send sends method url with the headers (name, value pairs).
func send(t *testing.T, method, url string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, body
}

func requireJSONCode(t *testing.T, resp *http.Response, body []byte, status int, code string) {
	t.Helper()
	require.Equal(t, status, resp.StatusCode, "body: %s", body)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var e sdk.Response
	require.NoError(t, json.Unmarshal(body, &e), "body: %s", body)
	require.Equal(t, code, e.Code)
}

// /metrics needs an admin on the main address; MetricsAddr serves it to
// scrapers without auth, and nothing else.
func TestMetricsAddr(t *testing.T) {
	t.Parallel()
	const token = "chatd_metrics_test_admin_token_0123456789"
	h := apptest.Start(t, apptest.Options{Run: true, Config: config.Config{MetricsAddr: "127.0.0.1:0", BootstrapToken: token}})
	main := h.URL
	require.NotNil(t, h.MetricsAddr)
	scrape := "http://" + h.MetricsAddr.String()

	resp, _ := send(t, "GET", main+"/healthz") // something to count
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, body := send(t, "GET", main+"/metrics")
	requireJSONCode(t, resp, body, http.StatusUnauthorized, sdk.CodeUnauthorized)
	resp, body = send(t, "GET", main+"/metrics", "Authorization", "Bearer "+token)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), "chatd_http_requests_total")

	resp, body = send(t, "GET", scrape+"/metrics")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), "chatd_http_requests_total")
	require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	resp, body = send(t, "POST", scrape+"/metrics")
	requireJSONCode(t, resp, body, http.StatusMethodNotAllowed, sdk.CodeMethodNotAllowed)
	require.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))
	for _, path := range []string{"/", "/healthz", "/api/v2/chats"} {
		resp, body = send(t, "GET", scrape+path, "Authorization", "Bearer "+token)
		requireJSONCode(t, resp, body, http.StatusNotFound, sdk.CodeNotFound)
	}

	require.NoError(t, h.Shutdown(), "graceful shutdown stops both servers")
	_, err := http.Get(scrape + "/metrics")
	require.Error(t, err, "the metrics server is closed")
}

func TestMetricsAddrOffByDefault(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Run: true})
	require.Nil(t, h.MetricsAddr)
	require.NoError(t, h.Shutdown())
}

func TestMetricsAddrInUse(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	// Served by the test (NoStart): App.Run itself must fail.
	h := apptest.Start(t, apptest.Options{NoStart: true, Config: config.Config{Addr: "127.0.0.1:0", MetricsAddr: busy.Addr().String()}})
	err = h.App.Run(h.Ctx, nil)
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "metrics"), "%v", err)
}
