// Start, Stop, Run and Shutdown: the running app and its drain.

package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/chatd/chatd/app/admin"
	"github.com/chatd/chatd/app/api"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/open"
)

// Start runs the background parts (part buffer GC, chat worker) until ctx
// ends or Stop. Run calls it; tests that serve the handler themselves call
// it directly.
func (a *App) Start(ctx context.Context) error {
	if err := a.buffer.Start(ctx); err != nil {
		return err
	}
	if err := a.poller.Start(ctx); err != nil {
		return fmt.Errorf("start stream poller: %w", err)
	}
	if sharedByReplicas(a.store) {
		err := a.store.InTx(ctx, func(tx store.Tx) error {
			return tx.ReplicaUpsert(ctx, store.Replica{
				WorkerID: a.worker.ID(), Address: a.cfg.AdvertiseURL, TokenHash: replicaTokenHash(a.replicaTok), UpdatedAt: a.clock.Now(),
			})
		})
		if err != nil {
			return fmt.Errorf("publish replica address: %w", err)
		}
	}
	if err := a.mcpServers.Start(ctx); err != nil {
		return err
	}
	a.startElicit(ctx) // services.go
	if a.cfg.NoWorker {
		return nil
	}
	if err := a.startAutomation(ctx); err != nil {
		return err
	}
	return a.worker.Start(ctx)
}

// Stop ends the streams and stops the worker, the MCP servers, the
// poller and the buffer, waiting for each.
func (a *App) Stop() {
	a.streams.Close()
	a.stopAutomation()
	a.worker.Stop()
	a.mcpServers.Stop()
	a.closeMCP() // after the worker: its tool calls are over
	a.stopElicit()
	a.poller.Stop()
	if sharedByReplicas(a.store) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = a.store.InTx(ctx, func(tx store.Tx) error { return tx.ReplicaDelete(ctx, a.worker.ID()) })
		cancel()
	}
	a.buffer.Stop()
}

// closeMCP disconnects the MCP servers (stopping their child processes),
// if any are configured.
func (a *App) closeMCP() {
	if a.mcp != nil {
		_ = a.mcp.Close()
	}
}

// Close stops the MCP servers and the pubsub and releases the store.
func (a *App) Close() error {
	a.closeMCP() // an app never started may have connected some for a status
	if a.closePub != nil {
		a.closePub()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return errors.Join(a.tracing.Shutdown(ctx), a.store.Close())
}

// Run serves HTTP on cfg.Addr until ctx is cancelled, then shuts down
// gracefully. ready, when non-nil, receives the bound address.
func (a *App) Run(ctx context.Context, ready func(addr net.Addr)) error {
	ln, err := net.Listen("tcp", a.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", a.cfg.Addr, err)
	}
	if a.cfg.AdvertiseURL == "" {
		a.cfg.AdvertiseURL = "http://" + ln.Addr().String()
	}
	// The background parts outlive ctx: its end starts the drain below,
	// which stops them in order (Shutdown).
	if err := a.Start(context.WithoutCancel(ctx)); err != nil {
		a.Stop()
		ln.Close()
		return fmt.Errorf("start worker: %w", err)
	}
	defer a.Stop() // after Shutdown, a no-op
	sock := a.startAdmin("http://" + ln.Addr().String())
	defer sock.Stop(a.cfg.ShutdownTimeout)
	// Timeouts bound every request; the stream handlers lift them from
	// their own connections (pings and per-frame deadlines bound those).
	srv := &http.Server{
		Handler: a.handler, ReadHeaderTimeout: config.DefaultReadHeaderTimeout,
		ReadTimeout: orNone(a.cfg.ReadTimeout), WriteTimeout: orNone(a.cfg.WriteTimeout), IdleTimeout: orNone(a.cfg.IdleTimeout),
	}
	if a.cfg.MaxUnauthConnsPerIP > 0 {
		limits := api.NewConnLimiter(a.cfg.MaxUnauthConnsPerIP)
		ln = limits.Listener(ln)
		srv.Handler = limits.Handler(a.handler, a.authed)
		srv.ConnContext = api.ConnContext
	}
	a.log.Info("chatd serving", "addr", "http://"+ln.Addr().String(), "database", open.Describe(a.cfg.DB))
	for _, m := range a.models.List() {
		a.log.Info("model", "id", m.ID, "provider", m.Provider, "model", m.Model, "default", m.Default)
	}
	if a.firstToken != "" {
		// Shown once: only hashes are stored. The link carries a one-time
		// code that expires, not the long-lived token.
		code, exp, err := a.tokens.CreateLoginCode(ctx, auth.AdminName)
		if err != nil {
			ln.Close()
			return fmt.Errorf("first start: login code: %w", err)
		}
		a.log.Info("first start: created user admin; open the login link (single use, expires in 15 minutes)",
			"login_url", admin.LoginURL("http://"+ln.Addr().String(), code), "expires_at", exp.UTC().Format(time.RFC3339))
		// The long-lived token never goes to the log, which outlives the
		// terminal (journald, docker logs, a log shipper).
		if a.cfg.FirstTokenOut != nil {
			fmt.Fprintf(a.cfg.FirstTokenOut, "\nThe admin's API token (shown only this once, and not logged):\n\n    %s\n\n", a.firstToken)
		} else {
			a.log.Info("first start: the admin's API token is shown only on a terminal and never logged; run `chatd token create --user admin` for one")
		}
		a.firstToken = ""
	} else {
		a.log.Info("to log in to the web UI, run `chatd login-link` (with this server's --db) for a one-time login link")
	}
	stopMetrics, err := a.serveMetrics()
	if err != nil {
		ln.Close()
		return err
	}
	defer stopMetrics()
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	a.log.Info("shutting down: draining", "timeout", a.cfg.ShutdownTimeout)
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.ShutdownTimeout)
	defer cancel()
	// The listener closes at once and the requests in flight finish while
	// the worker drains; the streams (hijacked connections, which
	// http.Server.Shutdown does not wait for) close after it.
	httpDone := make(chan error, 1)
	go func() { httpDone <- srv.Shutdown(shutdownCtx) }()
	drainErr := a.Shutdown(shutdownCtx)
	shutdownErr := <-httpDone
	// Serve returns as soon as Shutdown starts: wait for it either way.
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	if shutdownErr != nil {
		return fmt.Errorf("shutdown: %w", shutdownErr)
	}
	if drainErr != nil {
		// The chats not handed over are taken over at lease expiry.
		a.log.Warn("shutdown: drain", "err", drainErr)
	}
	a.log.Info("shut down")
	return nil
}

// Shutdown is the graceful stop (Run calls it when its context ends, as
// on SIGTERM): this replica stops acquiring chats at once; with several
// replicas (Postgres) it hands the chats it runs to the others, and on
// SQLite it lets the running turns finish until ctx ends, leaving the rest
// for the next start (worker.Worker.Drain). Then everything stops as in
// Stop, and the streams end with WebSocket status 1012 (Service Restart)
// so clients reconnect, to another replica if there is one. Stop alone is
// what a crash does to the chats: they stay owned until their leases go
// stale (or, on SQLite, until the next start).
func (a *App) Shutdown(ctx context.Context) error {
	var err error
	if !a.cfg.NoWorker {
		err = a.worker.Drain(ctx)
	}
	a.Stop()
	return err
}

// serveMetrics serves /metrics without auth on cfg.MetricsAddr, when set,
// for scrapers. stop shuts that server down and waits for it.
func (a *App) serveMetrics() (stop func(), err error) {
	if a.cfg.MetricsAddr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", a.cfg.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("listen for metrics on %s: %w", a.cfg.MetricsAddr, err)
	}
	a.metricsAddr = ln.Addr()
	srv := &http.Server{Handler: a.metrics.ScrapeHandler(), ReadHeaderTimeout: config.DefaultReadHeaderTimeout}
	a.log.Info("metrics serving without auth", "addr", "http://"+ln.Addr().String()+"/metrics")
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("metrics server stopped", "err", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownTimeout)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}
