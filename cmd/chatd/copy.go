package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/chatd/chatd/app/dbcopy"
	"github.com/chatd/chatd/app/modelconfig"
	"github.com/chatd/chatd/store/open"
)

const copyUsage = `usage: chatd copy --from SOURCE --to TARGET
  SOURCE and TARGET are a SQLite file and a postgres:// URL (or keyword/value DSN), either way round.
  The target is migrated up and must be empty; the source must be stopped (no server on it).
  Sealed provider keys and MCP secrets are copied as they are: serve the target with the same CHATD_SECRET_KEY.`

// runCopy implements `chatd copy`: a verified copy of a whole database
// between SQLite and Postgres (app/dbcopy).
func runCopy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("copy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from", "", "the source: a SQLite file or a postgres:// URL")
	to := fs.String("to", "", "the target: a postgres:// URL or a SQLite file (created)")
	fs.Usage = func() { fmt.Fprintln(stderr, copyUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *from == "" || *to == "" || fs.NArg() != 0 {
		return fmt.Errorf("copy needs --from and --to\n%s", copyUsage)
	}
	res, err := dbcopy.Copy(ctx, dbcopy.Options{From: *from, To: *to, Progress: stdout})
	if err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	var rows int64
	for _, t := range res.Tables {
		rows += t.Rows
	}
	fmt.Fprintf(stdout, "copied %d rows from %s to %s\n", rows, describe(*from), describe(*to))
	fmt.Fprintln(stdout, secretKeyNote(*from, *to))
	return nil
}

// describe names a database without its credentials.
func describe(db string) string {
	if open.IsPostgres(db) {
		return "postgres"
	}
	return db
}

// secretKeyNote says which CHATD_SECRET_KEY the target must be served
// with: the copy moves sealed secrets as bytes.
func secretKeyNote(from, to string) string {
	if os.Getenv("CHATD_SECRET_KEY") != "" {
		return "Sealed provider keys and MCP secrets were copied as they are: serve the target with this same CHATD_SECRET_KEY."
	}
	if !open.IsPostgres(from) {
		keyFile := modelconfig.SecretKeyFile(from)
		if _, err := os.Stat(keyFile); err == nil {
			return "Sealed provider keys and MCP secrets were copied as they are: serve the target with CHATD_SECRET_KEY set to the key in " + keyFile + " (the one the SQLite server used)."
		}
	}
	if !open.IsPostgres(to) {
		return "Sealed provider keys and MCP secrets were copied as they are: serve " + to + " with the CHATD_SECRET_KEY of the Postgres replicas (or write it to " + to + ".secret-key, mode 0600)."
	}
	return "Sealed provider keys and MCP secrets were copied as they are: serve the target with the source's CHATD_SECRET_KEY."
}
