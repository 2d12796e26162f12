package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/dbcopy"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/open"
)

// runRestore implements `chatd restore --from FILE --db PATH`: it checks
// that FILE is a chatd SQLite database of a known migration version and
// puts a copy of it at PATH, which no server may hold.
func runRestore(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from", "", "the snapshot to restore (from chatd backup)")
	db := fs.String("db", envDefault("CHATD_DB", config.DefaultDB), "the SQLite file to restore into (CHATD_DB)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *from == "" || fs.NArg() > 0 {
		return errors.New("usage: chatd restore --from FILE [--db PATH]")
	}
	if open.IsPostgres(*db) {
		return errors.New("chatd restore writes a SQLite file; with PostgreSQL use pg_restore (or chatd copy from a restored SQLite file)")
	}
	version, err := dbcopy.CheckSQLite(ctx, *from)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	target, err := filepath.Abs(*db)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	// A clean copy (no WAL) beside the target, so the rename is atomic.
	tmp := target + ".restoring"
	_ = os.Remove(tmp)
	defer os.Remove(tmp)
	if err := dbcopy.Snapshot(ctx, *from, tmp); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	// Hold the target's lock while it is replaced: a running server is
	// refused, and none can start in between. Closing the store
	// The old file's WAL and shared memory go with it: they would
	// otherwise be replayed into the restored file.
	st, err := open.Store(ctx, target)
	if errors.Is(err, store.ErrLocked) {
		return fmt.Errorf("restore: %w (stop the server first)", err)
	}
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if err := os.Rename(tmp, target); err != nil {
		st.Close()
		return fmt.Errorf("restore: %w", err)
	}
	for _, side := range []string{"-wal", "-shm"} {
		_ = os.Remove(target + side) // the old file's, still open below
	}
	if err := st.Close(); err != nil {
		return fmt.Errorf("restore: release %s: %w", target, err)
	}
	if _, err := dbcopy.CheckSQLite(ctx, target); err != nil {
		return fmt.Errorf("restore: the restored file does not check out: %w", err)
	}
	fmt.Fprintf(stdout, "restored %s into %s (schema version %d)\n", *from, target, version)
	return nil
}
