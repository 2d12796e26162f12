package main

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/store/dbtest"
)

// loginLink runs `chatd login-link` and returns the link's code.
func loginLink(t *testing.T, args ...string) (link, code string) {
	t.Helper()
	out, errOut, err := cli(t, append([]string{"login-link"}, args...)...)
	require.NoError(t, err, errOut)
	link = strings.TrimSpace(out)
	_, code, ok := strings.Cut(link, "/login#code=")
	require.True(t, ok, "a login link: %q", link)
	require.True(t, strings.HasPrefix(code, auth.LoginCodePrefix))
	require.Contains(t, errOut, "works once")
	return link, code
}

// exchange posts a login code and returns the status.
func exchange(t *testing.T, base, code string) int {
	t.Helper()
	res, err := http.Post(base+"/api/v2/auth/login", "application/json", strings.NewReader(`{"code":"`+code+`"}`))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// `chatd login-link` works beside a running SQLite server (through its
// admin socket; the link names the server) and without one; the code
// works once.
func TestLoginLinkSQLite(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chatd.db")
	createToken(t, db, "--user", "admin", "--admin")
	// No server: the database is opened here.
	_, offline := loginLink(t, "--db", db, "--url", "https://chat.example/")

	base, stop := serve(t, db)
	defer stop()
	link, code := loginLink(t, "--db", db)
	require.Equal(t, base+"/login#code="+code, link, "the running server names its own address")
	require.Equal(t, http.StatusOK, exchange(t, base, offline), "a code made without the server works on it")
	require.Equal(t, http.StatusOK, exchange(t, base, code))
	require.Equal(t, http.StatusUnauthorized, exchange(t, base, code), "single use")

	_, _, err := cli(t, "login-link", "--db", db, "--user", "nobody")
	require.ErrorContains(t, err, "not found")
	_, _, err = cli(t, "login-link", "--db", db, "stray")
	require.ErrorContains(t, err, "unexpected argument")
}

// With Postgres the CLI mints the code in the database directly.
func TestLoginLinkPostgres(t *testing.T) {
	t.Parallel()
	dsn, schema := dbtest.PostgresSchema(t)
	db := dsn + " search_path=" + schema
	createToken(t, db, "--user", "admin", "--admin")
	link, _ := loginLink(t, "--db", db, "--user", "admin")
	require.True(t, strings.HasPrefix(link, "http://"), link)
}

// The first start logs a login link with a one-time code; the admin's
// API token is not in the log (it is shown only on a terminal), and the
// log says how to get one.
func TestFirstStartPrintsLoginCode(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chatd.db")
	logs := &apptest.LogBuffer{}
	_, stop := serveLogging(t, db, logs)
	stop()
	out := logs.String()
	_, after, ok := strings.Cut(out, "/login#code=")
	require.True(t, ok, "a login link with a code: %s", out)
	code := after[:strings.IndexAny(after, "\" \n")]
	require.NotContains(t, out, "api_token")
	require.NotContains(t, out, " "+auth.TokenPrefix, "no API token in the log")
	require.NotContains(t, out, "="+auth.TokenPrefix, "no API token in the log")
	require.Contains(t, out, "chatd token create --user admin")

	// A restart prints how to get a new link and the code still works once.
	logs = &apptest.LogBuffer{}
	base, stop := serveLogging(t, db, logs)
	defer stop()
	require.Contains(t, logs.String(), "chatd login-link")
	require.NotContains(t, logs.String(), "api_token=")
	require.Equal(t, http.StatusOK, exchange(t, base, code))
	require.Equal(t, http.StatusUnauthorized, exchange(t, base, code))
}
