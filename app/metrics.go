package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/chatd/chatd/app/api"
	"github.com/chatd/chatd/app/config"
)

// webConfig fills the API's web-security settings from the app's config:
// the session cookie's Secure mode and the trusted proxies.
func (a *App) webConfig(c *api.Config) error {
	var err error
	if c.CookieSecure, err = api.ParseCookieSecure(a.cfg.CookieSecure); err != nil {
		return fmt.Errorf("CHATD_COOKIE_SECURE: %w", err)
	}
	if c.TrustedProxies, err = api.ParseTrustedProxies(a.cfg.TrustedProxies); err != nil {
		return fmt.Errorf("CHATD_TRUSTED_PROXIES: %w", err)
	}
	return nil
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

// MetricsAddr is the address the metrics server listens on, nil when it
// is off (valid once Run called ready).
func (a *App) MetricsAddr() net.Addr { return a.metricsAddr }

// Metrics is the app's Prometheus registry: HTTP, worker stages and turn
// outcomes, MCP, process.
func (a *App) Metrics() *api.Metrics { return a.metrics }
