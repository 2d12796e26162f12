package dbcopy

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"

	"github.com/pressly/goose/v3"

	"github.com/chatd/chatd/migrations"
)

// Snapshot writes a consistent copy of the SQLite database db to dest, a
// file that must not exist (VACUUM INTO: one read transaction, so it sees
// one state even while a server writes). The server that owns db calls it;
// it opens a read-only connection of its own.
func Snapshot(ctx context.Context, db, dest string) error {
	if _, err := os.Lstat(dest); err == nil {
		return fmt.Errorf("snapshot: %s already exists", dest)
	}
	return vacuumInto(ctx, db, dest)
}

// SnapshotFile writes a snapshot of db to a temporary file beside it and
// returns it open at its start, already unlinked: closing it frees it.
func SnapshotFile(ctx context.Context, db string) (*os.File, error) {
	tmp, err := os.CreateTemp(filepath.Dir(db), ".chatd-backup-*")
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	name := tmp.Name()
	tmp.Close()
	defer os.Remove(name)
	if err := vacuumInto(ctx, db, name); err != nil { // an empty file is allowed
		return nil, err
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	return f, nil
}

func vacuumInto(ctx context.Context, db, dest string) error {
	conn, err := openReadOnly(db)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `VACUUM INTO ?`, dest); err != nil {
		_ = os.Remove(dest)
		return fmt.Errorf("snapshot %s: %w", db, err)
	}
	if err := os.Chmod(dest, 0o600); err != nil { // it holds token hashes and chats
		return fmt.Errorf("snapshot: %w", err)
	}
	return nil
}

func openReadOnly(db string) (*sql.DB, error) {
	abs, err := filepath.Abs(db)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", db, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("open %s: %w", db, err)
	}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Set("_busy_timeout", "10000")
	conn, err := sql.Open("sqlite", "file:"+(&url.URL{Path: abs}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", db, err)
	}
	conn.SetMaxOpenConns(1)
	return conn, nil
}

// ErrNotChatd is returned by CheckSQLite for a file that is not a chatd
// SQLite database of a migration version this chatd knows.
var ErrNotChatd = errors.New("not a chatd SQLite database")

// CheckSQLite verifies that path is an intact chatd SQLite database at a
// migration version this build knows, and returns that version.
func CheckSQLite(ctx context.Context, path string) (int64, error) {
	conn, err := openReadOnly(path)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	var ok string
	if err := conn.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&ok); err != nil {
		return 0, fmt.Errorf("%w: %s: %w", ErrNotChatd, path, err)
	}
	if ok != "ok" {
		return 0, fmt.Errorf("%w: %s fails its integrity check: %s", ErrNotChatd, path, ok)
	}
	var version sql.NullInt64
	err = conn.QueryRowContext(ctx, `SELECT max(version_id) FROM goose_db_version WHERE is_applied`).Scan(&version)
	if err != nil || !version.Valid || version.Int64 == 0 {
		return 0, fmt.Errorf("%w: %s has no chatd migrations", ErrNotChatd, path)
	}
	var chats int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'chats'`).Scan(&chats); err != nil || chats != 1 {
		return 0, fmt.Errorf("%w: %s has no chats table", ErrNotChatd, path)
	}
	known, err := knownVersions()
	if err != nil {
		return 0, err
	}
	if !slices.Contains(known, version.Int64) {
		return 0, fmt.Errorf("%w: %s is at migration version %d, which this chatd does not know (newest %d): use the chatd that wrote it", ErrNotChatd, path, version.Int64, known[len(known)-1])
	}
	return version.Int64, nil
}

// knownVersions lists the SQLite migration versions of this build, in order.
func knownVersions() ([]int64, error) {
	var out []int64
	err := fs.WalkDir(migrations.SQLite(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		v, err := goose.NumericComponent(p)
		if err != nil {
			return fmt.Errorf("migration %s: %w", p, err)
		}
		out = append(out, v)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	slices.Sort(out)
	return out, nil
}
