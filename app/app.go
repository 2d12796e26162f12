// Package app is chatd's composition root: it opens the configured store,
// migrates it, and wires the HTTP server. It is the only package that names
// a concrete store.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"

	"github.com/pressly/goose/v3"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/postgres"
	"github.com/chatd/chatd/store/sqlite"
)

// App is a running chatd: a migrated store and an HTTP handler.
type App struct {
	cfg     Config
	log     *slog.Logger
	store   store.Store
	handler http.Handler
}

// migrator is what both stores offer for schema migrations.
type migrator interface {
	store.Store
	Migrations() (*goose.Provider, error)
}

// OpenStore opens the store cfg.DB names, without migrating.
func OpenStore(ctx context.Context, db string) (migrator, error) {
	if IsPostgres(db) {
		return postgres.Open(ctx, db, postgres.Options{})
	}
	return sqlite.Open(ctx, db, sqlite.Options{})
}

// Migrate runs fn on the store's goose provider.
func Migrate(ctx context.Context, s migrator, fn func(*goose.Provider) error) error {
	p, err := s.Migrations()
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	return fn(p)
}

// New opens and migrates the store and builds the HTTP handler.
func New(ctx context.Context, cfg Config, logOut io.Writer) (*App, error) {
	cfg = cfg.withDefaults()
	log := slog.New(slog.NewTextHandler(logOut, nil))
	s, err := OpenStore(ctx, cfg.DB)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", describeDB(cfg.DB), err)
	}
	err = Migrate(ctx, s, func(p *goose.Provider) error {
		results, err := p.Up(ctx)
		for _, r := range results {
			log.Info("migrated", "version", r.Source.Version, "path", r.Source.Path, "duration", r.Duration)
		}
		return err
	})
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("migrate %s: %w", describeDB(cfg.DB), err)
	}
	a := &App{cfg: cfg, log: log, store: s}
	a.handler = a.routes()
	return a, nil
}

// Store is the app's store.
func (a *App) Store() store.Store { return a.store }

// Handler is the app's HTTP handler.
func (a *App) Handler() http.Handler { return a.handler }

// Close releases the store.
func (a *App) Close() error { return a.store.Close() }

func (a *App) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", a.healthz)
	return mux
}

// healthz answers 200 when the database answers a read.
func (a *App) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	err := a.store.ReadTx(r.Context(), func(tx store.Tx) error {
		_, err := tx.UserGetByName(r.Context(), "\x00healthz")
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	})
	if err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, `{"status":"unavailable","message":%q}`+"\n", err.Error())
		return
	}
	fmt.Fprintf(w, `{"status":"ok","database":%q}`+"\n", a.store.Dialect())
}

// Run serves HTTP on cfg.Addr until ctx is cancelled, then shuts down
// gracefully. ready, when non-nil, receives the bound address.
func (a *App) Run(ctx context.Context, ready func(addr net.Addr)) error {
	ln, err := net.Listen("tcp", a.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", a.cfg.Addr, err)
	}
	srv := &http.Server{Handler: a.handler, ReadHeaderTimeout: DefaultReadHeaderTimeout}
	a.log.Info("chatd serving", "addr", "http://"+ln.Addr().String(), "database", describeDB(a.cfg.DB))
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
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
