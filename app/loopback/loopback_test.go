package loopback_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/chatd/chatd/app/loopback"
	"github.com/chatd/chatd/app/sdk"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestClientActsAsTheCaller: the API sees the caller's credentials,
// address and host, and none of its other headers; its answers and errors
// come back as they were written.
func TestClientActsAsTheCaller(t *testing.T) {
	var seen *http.Request
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r
		if r.URL.Path == "/api/v2/chats/missing" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(sdk.Response{Message: "no", Code: sdk.CodeNotFound})
			return
		}
		_ = json.NewEncoder(w).Encode(sdk.User{Name: "alice"})
	})
	caller := httptest.NewRequest(http.MethodPost, "http://chatd.example/api/v2/ai-sdk/chat", nil)
	caller.Header.Set("Authorization", "Bearer tok")
	caller.Header.Set("Cookie", "chatd_session=s")
	caller.Header.Set("Origin", "https://evil.example")
	caller.RemoteAddr = "192.0.2.7:5555"

	c := loopback.Client(api, caller)
	me, err := c.Me(context.Background())
	require.NoError(t, err)
	require.Equal(t, "alice", me.Name)
	require.Equal(t, "/api/v2/users/me", seen.URL.Path)
	require.Equal(t, "Bearer tok", seen.Header.Get("Authorization"))
	require.Equal(t, "chatd_session=s", seen.Header.Get("Cookie"))
	require.Empty(t, seen.Header.Get("Origin"), "only credentials are copied")
	require.Equal(t, "192.0.2.7:5555", seen.RemoteAddr)
	require.Equal(t, "chatd.example", seen.Host)

	var e *sdk.Error
	err = c.Do(context.Background(), http.MethodGet, "/chats/missing", nil, nil)
	require.ErrorAs(t, err, &e)
	require.Equal(t, http.StatusNotFound, e.StatusCode)
	require.Equal(t, sdk.CodeNotFound, e.Code)
}
