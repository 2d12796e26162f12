package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/pressly/goose/v3"

	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/store/open"
)

func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := fs.String("db", envDefault("CHATD_DB", config.DefaultDB), "SQLite file or postgres:// URL (CHATD_DB)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("migrate needs one of: up, down, status")
	}
	action := fs.Arg(0)
	if action != "up" && action != "down" && action != "status" {
		return fmt.Errorf("migrate: unknown action %q (want up, down or status)", action)
	}
	s, err := open.Store(ctx, *db)
	if err != nil {
		return fmt.Errorf("open %s: %w", *db, err)
	}
	defer s.Close()
	return open.Migrate(ctx, s, func(p *goose.Provider) error {
		switch action {
		case "up":
			if err := open.CheckSchema(ctx, p); err != nil {
				return err
			}
			results, err := p.Up(ctx)
			for _, r := range results {
				fmt.Fprintf(stdout, "applied %d %s (%s)\n", r.Source.Version, r.Source.Path, r.Duration)
			}
			if err == nil && len(results) == 0 {
				fmt.Fprintln(stdout, "already up to date")
			}
			return err
		case "down":
			r, err := p.Down(ctx)
			if r != nil {
				fmt.Fprintf(stdout, "rolled back %d %s\n", r.Source.Version, r.Source.Path)
			}
			return err
		default:
			statuses, err := p.Status(ctx)
			if err != nil {
				return err
			}
			for _, st := range statuses {
				applied := "pending"
				if st.State == goose.StateApplied {
					applied = "applied " + st.AppliedAt.UTC().Format("2006-01-02 15:04:05")
				}
				fmt.Fprintf(stdout, "%5d  %-28s %s\n", st.Source.Version, st.Source.Path, applied)
			}
			return printSchemaSummary(ctx, stdout, p, statuses)
		}
	})
}

// printSchemaSummary says whether this binary matches the database:
// "matches", the pending count (serve or migrate up applies them), or a
// database newer than the binary (serve refuses to start).
func printSchemaSummary(ctx context.Context, stdout io.Writer, p *goose.Provider, statuses []*goose.MigrationStatus) error {
	db, known, err := open.SchemaVersions(ctx, p)
	if err != nil {
		return err
	}
	pending := 0
	for _, st := range statuses {
		if st.State != goose.StateApplied {
			pending++
		}
	}
	fmt.Fprintf(stdout, "database version %d; this binary knows up to %d: ", db, known)
	switch {
	case db > known:
		fmt.Fprintln(stdout, "the database is NEWER than this binary; serve refuses to start, run the newer chatd")
	case pending > 0:
		fmt.Fprintf(stdout, "%d pending; serve (or migrate up) applies them\n", pending)
	default:
		fmt.Fprintln(stdout, "matches")
	}
	return nil
}
