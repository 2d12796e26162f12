package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/pressly/goose/v3"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/clock"
)

// runToken implements `chatd token create --user NAME [--admin]`: it creates
// the user if needed and prints a new API token (shown once).
func runToken(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		return fmt.Errorf("usage: chatd token create --user NAME [--admin] [--db ...]")
	}
	fs := flag.NewFlagSet("token create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := fs.String("db", envDefault("CHATD_DB", app.DefaultDB), "SQLite file or postgres:// URL (CHATD_DB)")
	user := fs.String("user", "", "user name (created if it does not exist)")
	admin := fs.Bool("admin", false, "make the user an admin (sees every chat)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *user == "" {
		return fmt.Errorf("token create: --user is required")
	}
	s, err := app.OpenStore(ctx, *db)
	if err != nil {
		return fmt.Errorf("open %s: %w", *db, err)
	}
	defer s.Close()
	if err := app.Migrate(ctx, s, func(p *goose.Provider) error { _, err := p.Up(ctx); return err }); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	token, u, err := auth.CreateToken(ctx, s, *user, *admin, "cli", clock.Real{}.Now())
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, token)
	role := "user"
	if u.Admin {
		role = "admin"
	}
	fmt.Fprintf(stderr, "created a token for %s %q; it is shown only once\n", role, u.Name)
	return nil
}
