package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/chatd/chatd/app/admin"
	"github.com/chatd/chatd/app/dbcopy"
	"github.com/chatd/chatd/store/open"
)

// pgDumpHint is what Postgres users are told: chatd does not back up a
// database several replicas share.
const pgDumpHint = "chatd backup snapshots a SQLite database; with PostgreSQL use pg_dump " +
	"(for example: pg_dump --format=custom --file chatd.dump \"$CHATD_DB\", and pg_restore to bring it back)"

// runBackup implements `chatd backup --to FILE`: a consistent online
// snapshot of a SQLite database. Beside a running server it goes through
// the admin socket (the server runs VACUUM INTO); with --url and --token,
// through GET /api/v2/admin/backup of a remote server; with no server, the
// file is snapshotted here.
func runBackup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, db := tokenFlags("backup", stderr)
	to := fs.String("to", "", "the snapshot file to write (must not exist)")
	base := fs.String("url", "", "a remote server's address (http://host:port): back up through its API")
	token := fs.String("token", "", "an admin token for --url")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *to == "" || fs.NArg() > 0 {
		return errors.New("usage: chatd backup --to FILE [--db PATH | --url URL --token TOKEN]")
	}
	dest, err := filepath.Abs(*to)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if _, err := os.Lstat(dest); err == nil {
		return fmt.Errorf("backup: %s already exists; choose a new file", dest)
	}
	partial := dest + ".partial"
	_ = os.Remove(partial) // a previous failed run's
	defer os.Remove(partial)
	if *base != "" {
		if *token == "" {
			return errors.New("backup: --url needs --token (an admin's)")
		}
		if err := download(ctx, *base, *token, partial); err != nil {
			return fmt.Errorf("backup: %w", err)
		}
	} else {
		if open.IsPostgres(*db) {
			return errors.New(pgDumpHint)
		}
		err := withAdmin(ctx, *db, func(c admin.Client) error {
			return c.Call(ctx, admin.CmdBackup, admin.BackupRequest{Path: partial}, &admin.BackupResponse{})
		})
		if err != nil {
			return fmt.Errorf("backup: %w", err)
		}
	}
	version, err := dbcopy.CheckSQLite(ctx, partial)
	if err != nil {
		return fmt.Errorf("backup: the snapshot does not check out: %w", err)
	}
	if err := os.Rename(partial, dest); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	fmt.Fprintf(stdout, "wrote %s (schema version %d)\n", dest, version)
	return nil
}

// download saves GET /api/v2/admin/backup of the server at base into path.
func download(ctx context.Context, base, token, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/api/v2/admin/backup", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("the server answered %s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("download: %w", err)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return fmt.Errorf("download: got %d of %d bytes", n, resp.ContentLength)
	}
	return nil
}
