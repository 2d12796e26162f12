package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app"
)

// runInvocation is `chatd invocation inspect|reconcile`: a thin CLI over
// app.Tools.
func runInvocation(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "inspect" && args[0] != "reconcile") {
		return fmt.Errorf("usage: chatd invocation inspect|reconcile --request-id UUID [--review FILE.json] [--db ...]")
	}
	action := args[0]
	fs := flag.NewFlagSet("invocation "+action, flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := fs.String("db", envDefault("CHATD_DB", app.DefaultDB), "SQLite file or postgres:// URL (CHATD_DB)")
	rawID := fs.String("request-id", "", "the request's UUID")
	reviewFile := fs.String("review", "", "reconcile: the operator's assessment (JSON: {assessment, result?, is_error?})")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	id, err := uuid.Parse(*rawID)
	if err != nil || id == uuid.Nil {
		return fmt.Errorf("--request-id must be a non-nil UUID")
	}
	tools, err := app.OpenTools(ctx, app.Config{DB: *db})
	if err != nil {
		return err
	}
	defer tools.Close()
	if action == "inspect" {
		in, err := tools.Inspect(ctx, id)
		if err != nil {
			return err
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(in)
	}
	if *reviewFile == "" {
		return fmt.Errorf("reconcile needs --review FILE.json")
	}
	raw, err := os.ReadFile(*reviewFile)
	if err != nil {
		return err
	}
	var review app.Review
	if err := json.Unmarshal(raw, &review); err != nil {
		return fmt.Errorf("read %s: %w", *reviewFile, err)
	}
	if err := review.Validate(); err != nil {
		return fmt.Errorf("%s: %w", *reviewFile, err)
	}
	if err := tools.Reconcile(ctx, id, review); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "reconciled request %s; it stays closed to execution and its chat continues\n", id)
	return nil
}
