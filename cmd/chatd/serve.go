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
