package main

import (
	"context"
	"flag"
	"io"

	"github.com/chatd/chatd/app"
)

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := app.FromEnv()
	fs.StringVar(&cfg.Addr, "addr", envDefault("CHATD_ADDR", app.DefaultAddr), "listen address (CHATD_ADDR)")
	fs.StringVar(&cfg.DB, "db", envDefault("CHATD_DB", app.DefaultDB), "SQLite file or postgres:// URL (CHATD_DB)")
	fs.StringVar(&cfg.MetricsAddr, "metrics-addr", cfg.MetricsAddr, "serve /metrics without auth on this address; off when empty (CHATD_METRICS_ADDR)")
	fs.StringVar(&cfg.CookieSecure, "cookie-secure", envDefault("CHATD_COOKIE_SECURE", "auto"), "session cookie Secure: auto (behind HTTPS), true or false (CHATD_COOKIE_SECURE)")
	fs.StringVar(&cfg.TrustedProxies, "trusted-proxies", cfg.TrustedProxies, "comma-separated CIDRs of proxies whose X-Forwarded-Proto is trusted (CHATD_TRUSTED_PROXIES)")
	fs.StringVar(&cfg.MCPConfig, "mcp-config", cfg.MCPConfig, "mcpServers JSON file of MCP servers whose tools chats may use; none when empty (CHATD_MCP_CONFIG)")
	fs.StringVar(&cfg.LogFormat, "log-format", envDefault("CHATD_LOG_FORMAT", app.LogFormatText), "log line format: text or json (CHATD_LOG_FORMAT)")
	fs.BoolVar(&cfg.Pprof, "pprof", cfg.Pprof, "serve /debug/pprof/ to admins on the main address (CHATD_PPROF)")
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = app.DefaultShutdownTimeout
	}
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", cfg.ShutdownTimeout, "bound of the graceful drain on SIGTERM (CHATD_SHUTDOWN_TIMEOUT)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	a, err := app.New(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	defer a.Close()
	return a.Run(ctx, nil)
}
