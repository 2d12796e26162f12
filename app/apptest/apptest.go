// Package apptest starts whole chatd apps for end-to-end tests (a test kit
// like store/storetest and store/dbtest, not a test file): a real store,
// the real HTTP handler behind an httptest server, the worker running.
//
//	h := apptest.Start(t, apptest.Options{Config: config.Config{Worker: apptest.FastWorker()}})
//	alice := h.NewUser(t, "alice")
//	chat, err := alice.CreateChat(h.Ctx, ...)
//
// On Postgres (Options.Postgres) h.Replicas(t, n) starts n more apps on
// the same database, as several chatd processes share one in production.
package apptest

import (
	"bytes"
	"context"
	"io"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/worker"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
	"github.com/chatd/chatd/store/postgres"
)

// Options say what to start. The zero value is an app on a fresh SQLite
// store with the default configuration and a generated admin token.
type Options struct {
	// Config is the app's configuration. An empty BootstrapToken gets a
	// fresh one (Harness.Token); on Postgres an empty SecretKey gets one
	// key shared by the replicas.
	Config config.Config
	// Store makes the app's store (dbtest.NewSQLite when nil; the
	// dbtest.Each argument to run on both stores). Ignored with Postgres.
	Store func(t testing.TB) store.Store
	// Postgres puts the app on a fresh Postgres schema that Replicas
	// share. Without CHATD_TEST_POSTGRES_DSN the test skips (fails under
	// CI=true), as dbtest does.
	Postgres bool
	// NoStart serves the handler but leaves the background parts (worker,
	// poller, part buffer) stopped: the test calls h.App.Start itself.
	NoStart bool
	// LogOut, when set, also receives the app's log (Harness.Log always
	// does).
	LogOut io.Writer
}

// FastWorker is a worker configuration for tests: retries, syncs and
// acquisition without the production pauses.
func FastWorker() worker.Config {
	return worker.Config{
		BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond,
		SyncInterval: 50 * time.Millisecond, AcquireInterval: 100 * time.Millisecond,
	}
}

// sharedSecretKey seals provider keys alike on every replica of a test.
const sharedSecretKey = "apptest shared secret key"

// Harness is one running app and what a test needs of it.
type Harness struct {
	// URL is the app's base URL, Server's.
	URL    string
	Server *httptest.Server
	// Token is the admin's API token; Admin is a client with it.
	Token string
	Admin *sdk.Client
	// App is the app itself (Start, Stop, Shutdown, Handler).
	App *app.App
	// Log is everything the app logged.
	Log *LogBuffer
	// Ctx ends when the test does.
	Ctx context.Context
	// Internals are the app's parts: Store, Machine, Worker, MCP,
	// Buffer, Metrics, Routes.
	app.Internals

	opts        Options
	dsn, schema string // the Postgres schema Replicas share
}

// Start builds the app Options describe, serves it on an httptest server
// and starts it; all of it stops when the test ends.
func Start(t testing.TB, opts Options) *Harness {
	t.Helper()
	if opts.Config.BootstrapToken == "" {
		opts.Config.BootstrapToken = auth.NewToken()
	}
	h := &Harness{opts: opts}
	var s store.Store
	switch {
	case opts.Postgres:
		if h.opts.Config.SecretKey == "" {
			h.opts.Config.SecretKey = sharedSecretKey
		}
		h.dsn, h.schema = dbtest.PostgresSchema(t)
		s = h.openPostgres(t)
	case opts.Store != nil:
		s = opts.Store(t)
	default:
		s = dbtest.NewSQLite(t)
	}
	h.start(t, s)
	return h
}

// openPostgres opens (and migrates) a store of its own on the shared
// schema, as another process would.
func (h *Harness) openPostgres(t testing.TB) store.Store {
	t.Helper()
	ctx := context.Background()
	s, err := postgres.Open(ctx, h.dsn, postgres.Options{SearchPath: h.schema})
	require.NoError(t, err)
	p, err := s.Migrations()
	require.NoError(t, err)
	_, err = p.Up(ctx)
	require.NoError(t, err)
	return s
}

func (h *Harness) start(t testing.TB, s store.Store) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h.Ctx = ctx
	h.Log = &LogBuffer{}
	var out io.Writer = h.Log
	if h.opts.LogOut != nil {
		out = io.MultiWriter(h.Log, h.opts.LogOut)
	}
	a, err := app.NewWithStore(ctx, h.opts.Config, s, out)
	if err != nil {
		cancel()
		_ = s.Close()
		require.NoError(t, err)
	}
	h.App = a
	h.Server = httptest.NewServer(a.Handler())
	h.URL = h.Server.URL
	a.SetAdvertiseURL(h.URL)
	h.Token = h.opts.Config.BootstrapToken
	h.Admin = sdk.New(h.URL, h.Token)
	h.Internals = a.Internals()
	t.Cleanup(func() {
		a.Stop() // a no-op when never started
		cancel()
		h.Server.Close()
		require.NoError(t, a.Close())
	})
	if !h.opts.NoStart {
		require.NoError(t, a.Start(ctx))
	}
}

// NewUser creates a user (not an admin) with an API token and returns a
// client for it.
func (h *Harness) NewUser(t testing.TB, name string) *sdk.Client {
	t.Helper()
	return h.Client(h.NewUserToken(t, name))
}

// NewUserToken creates a user (not an admin) and returns its API token
// (for clients of several replicas).
func (h *Harness) NewUserToken(t testing.TB, name string) string {
	t.Helper()
	tok, _ := h.CreateToken(t, name, false)
	return tok
}

// CreateToken creates the user name (an admin when admin is set) if it
// does not exist and an API token for it labelled "test", at the app's
// clock's now.
func (h *Harness) CreateToken(t testing.TB, name string, admin bool) (string, store.User) {
	t.Helper()
	now := time.Now()
	if c := h.opts.Config.Clock; c != nil {
		now = c.Now()
	}
	tok, u, err := auth.CreateToken(h.Ctx, h.Store, name, admin, "test", now)
	require.NoError(t, err)
	return tok, u
}

// Client is a client for h with token (a user's from another replica).
func (h *Harness) Client(token string) *sdk.Client { return sdk.New(h.URL, token) }

// Replicas starts n more apps with h's options on h's Postgres schema,
// each with its own store connection, HTTP server and log, as separate
// chatd processes sharing one database. The admin token is the same.
func (h *Harness) Replicas(t testing.TB, n int) []*Harness {
	t.Helper()
	require.True(t, h.opts.Postgres, "Replicas needs Options.Postgres")
	out := make([]*Harness, n)
	for i := range out {
		r := &Harness{opts: h.opts, dsn: h.dsn, schema: h.schema}
		r.start(t, r.openPostgres(t))
		out[i] = r
	}
	return out
}

// LogBuffer is a log destination the app writes while the test reads.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
