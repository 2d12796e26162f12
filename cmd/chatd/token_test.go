package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/store/dbtest"
	"github.com/chatd/chatd/store/open"
)

// cli runs chatd with args and returns stdout, stderr and the error.
func cli(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), err
}

func listTokens(t *testing.T, db string, args ...string) []auth.TokenInfo {
	t.Helper()
	out, _, err := cli(t, append([]string{"token", "list", "--db", db, "--json"}, args...)...)
	require.NoError(t, err)
	var list []auth.TokenInfo
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	return list
}

func createToken(t *testing.T, db string, args ...string) string {
	t.Helper()
	out, _, err := cli(t, append([]string{"token", "create", "--db", db}, args...)...)
	require.NoError(t, err)
	return strings.TrimSpace(out)
}

// serve runs a SQLite server on db until the test ends; it returns the
// HTTP base URL and a stop that waits for the server.
func serve(t *testing.T, db string) (string, func()) {
	t.Helper()
	return serveLogging(t, db, io.Discard)
}

// serveLogging is serve with the server's log written to logs.
func serveLogging(t *testing.T, db string, logs io.Writer) (string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, config.Config{Addr: "127.0.0.1:0", DB: db, NoWorker: true}, logs)
	require.NoError(t, err)
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, func(addr net.Addr) { addrc <- addr }) }()
	var stopped bool
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		require.NoError(t, <-done)
		require.NoError(t, a.Close())
	}
	t.Cleanup(stop)
	select {
	case addr := <-addrc:
		return "http://" + addr.String(), stop
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	return "", stop
}

func status(t *testing.T, base, token string) int {
	t.Helper()
	req, err := http.NewRequest("GET", base+"/api/v2/users/me", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	return res.StatusCode
}

// The token commands work beside a running SQLite server, over its admin
// socket (the file itself is locked by the server), and without one.
func TestTokenCommandsBesideARunningServer(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chatd.db")
	sock := db + ".sock"

	// No server: the CLI opens the file itself.
	alice := createToken(t, db, "--user", "alice", "--label", "laptop")
	require.True(t, strings.HasPrefix(alice, auth.TokenPrefix))
	require.NoFileExists(t, sock)

	base, stop := serve(t, db)
	fi, err := os.Lstat(sock)
	require.NoError(t, err)
	require.Equal(t, os.ModeSocket, fi.Mode().Type())
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the admin socket is the owner's only")
	_, err = open.Store(context.Background(), db)
	require.Error(t, err, "the server holds the file: what follows goes over the socket")

	bob := createToken(t, db, "--user", "bob", "--expires", "30d")
	require.Equal(t, http.StatusOK, status(t, base, alice))
	require.Equal(t, http.StatusOK, status(t, base, bob))

	// A web login makes a session that slides with the default TTL.
	res, err := http.Post(base+"/api/v2/auth/login", "application/json", strings.NewReader(`{"token":"`+alice+`"}`))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	var sessions []auth.TokenInfo
	for _, tok := range listTokens(t, db, "--user", "alice") {
		if tok.Kind == "session" {
			sessions = append(sessions, tok)
		}
	}
	require.Len(t, sessions, 1)
	require.Equal(t, sessions[0].CreatedAt.Add(auth.DefaultSessionTTL), *sessions[0].ExpiresAt)

	out, _, err := cli(t, "token", "list", "--db", db)
	require.NoError(t, err)
	for _, want := range []string{"ID", "LAST USED", "EXPIRES", "alice", "laptop", "bob", "never"} {
		require.Contains(t, out, want)
	}
	for _, secret := range []string{alice, bob} {
		require.NotContains(t, out, secret)
		require.NotContains(t, out, strings.TrimPrefix(secret, auth.TokenPrefix))
	}
	list := listTokens(t, db, "--user", "bob")
	require.Len(t, list, 1)
	require.NotNil(t, list[0].ExpiresAt)
	require.NotNil(t, list[0].LastUsedAt, "the server recorded the use")

	out, _, err = cli(t, "token", "revoke", list[0].ID.String(), "--db", db)
	require.NoError(t, err)
	require.Contains(t, out, "revoked token "+list[0].ID.String()+" of bob")
	require.Equal(t, http.StatusUnauthorized, status(t, base, bob), "revoked at once")
	require.Equal(t, http.StatusOK, status(t, base, alice))
	_, _, err = cli(t, "token", "revoke", list[0].ID.String(), "--db", db)
	require.ErrorContains(t, err, "not found")

	out, _, err = cli(t, "token", "revoke", "--user", "alice", "--all", "--db", db)
	require.NoError(t, err)
	require.Contains(t, out, "revoked 2 tokens of alice")
	require.Equal(t, http.StatusUnauthorized, status(t, base, alice))
	_, _, err = cli(t, "token", "list", "--db", db, "--user", "nobody")
	require.ErrorContains(t, err, "not found")

	stop()
	require.NoFileExists(t, sock, "removed on shutdown")
	require.Empty(t, listTokens(t, db), "read from the file again: users existed, so no first-start token")
	createToken(t, db, "--user", "carol")
	require.Len(t, listTokens(t, db), 1)
}

// A socket left by a killed server neither blocks the CLI nor the next
// server; a file that is not a socket is never removed.
func TestStaleAdminSocket(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chatd.db")
	sock := db + ".sock"
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	require.NoError(t, err)
	ln.SetUnlinkOnClose(false)
	require.NoError(t, ln.Close())
	require.FileExists(t, sock)

	createToken(t, db, "--user", "alice")
	_, stop := serve(t, db)
	require.Len(t, listTokens(t, db, "--user", "alice"), 1, "over the new socket")
	stop()
	require.NoFileExists(t, sock)

	require.NoError(t, os.WriteFile(sock, []byte("precious"), 0o600))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := app.New(ctx, config.Config{Addr: "127.0.0.1:0", DB: db, NoWorker: true}, io.Discard)
	require.NoError(t, err)
	addrc, done := make(chan net.Addr, 1), make(chan error, 1)
	go func() { done <- a.Run(ctx, func(addr net.Addr) { addrc <- addr }) }()
	<-addrc
	cancel()
	require.NoError(t, <-done)
	require.NoError(t, a.Close())
	raw, err := os.ReadFile(sock)
	require.NoError(t, err)
	require.Equal(t, "precious", string(raw))
}

func TestTokenCommandErrors(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chatd.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"token"}, "usage"},
		{[]string{"token", "frob"}, `unknown token command "frob"`},
		{[]string{"token", "create", "--db", db}, "--user is required"},
		{[]string{"token", "create", "--db", db, "--user", "a", "--expires", "soon"}, "want a duration"},
		{[]string{"token", "create", "--db", db, "--user", "a", "--expires", "-1h"}, "must be in the future"},
		{[]string{"token", "revoke", "--db", db}, "give an ID"},
		{[]string{"token", "revoke", "not-a-uuid", "--db", db}, "is not a token ID"},
		{[]string{"token", "revoke", "--db", db, "--user", "a"}, "give an ID"},
		{[]string{"token", "list", "--db", db, "extra"}, "unexpected argument"},
	} {
		_, _, err := cli(t, tc.args...)
		require.ErrorContains(t, err, tc.want, "%v", tc.args)
	}
}

// With Postgres the CLI uses the database directly, running servers or not.
func TestTokenCommandsOnPostgres(t *testing.T) {
	t.Parallel()
	dsn, schema := dbtest.PostgresSchema(t)
	db := dsn + " search_path=" + schema
	token := createToken(t, db, "--user", "alice", "--expires", "1h")
	list := listTokens(t, db)
	require.Len(t, list, 1)
	require.Equal(t, "alice", list[0].User)
	require.NotNil(t, list[0].ExpiresAt)
	out, _, err := cli(t, "token", "list", "--db", db)
	require.NoError(t, err)
	require.NotContains(t, out, token)
	out, _, err = cli(t, "token", "revoke", list[0].ID.String(), "--db", db)
	require.NoError(t, err)
	require.Contains(t, out, "revoked token")
	require.Empty(t, listTokens(t, db))
}
