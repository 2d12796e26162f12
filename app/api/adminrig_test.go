package api_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/store"
)

// secretRig serves a worker-less app over s, with an admin and a user,
// bob, for the admin APIs that take secrets (provider keys, MCP env and
// header values). do sends a request as token (none when empty) to
// prefix+path and checks that no answer holds any of the secrets.
type secretRig struct {
	adminToken, userToken string
	do                    func(token, method, path, body string) (int, []byte)
}

func newSecretRig(t *testing.T, s store.Store, prefix string, secrets ...string) *secretRig {
	t.Helper()
	return newLoggedSecretRig(t, s, prefix, &apptest.LogBuffer{}, secrets...)
}

// newLoggedSecretRig is newSecretRig with the app's JSON log written to logs.
func newLoggedSecretRig(t *testing.T, s store.Store, prefix string, logs *apptest.LogBuffer, secrets ...string) *secretRig {
	t.Helper()
	r := &secretRig{adminToken: auth.NewToken()}
	a, err := app.NewWithStore(context.Background(), config.Config{BootstrapToken: r.adminToken, NoWorker: true, LogFormat: "json"}, s, logs)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, a.Close()) })
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	r.userToken, _, err = auth.CreateToken(context.Background(), s, "bob", false, "test", time.Now())
	require.NoError(t, err)
	r.do = func(token, method, path, body string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+prefix+path, strings.NewReader(body))
		require.NoError(t, err)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		for _, secret := range secrets {
			require.NotContains(t, buf.String(), secret, "a secret never comes back")
		}
		return resp.StatusCode, buf.Bytes()
	}
	return r
}
