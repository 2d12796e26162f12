package admin

import (
	"context"
	"fmt"
	"path/filepath"
)

// CmdBackup snapshots the SQLite database into a file (VACUUM INTO).
const CmdBackup = "backup"

// BackupRequest names the file the snapshot is written to: an absolute
// path that does not exist yet, on the server's machine (the socket is
// local, and its peer is the server's own user).
type BackupRequest struct {
	Path string `json:"path"`
}

// BackupResponse says where the snapshot went.
type BackupResponse struct {
	Path string `json:"path"`
}

func (o *Ops) doBackup(ctx context.Context, body []byte) (any, error) {
	var req BackupRequest
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	if req.Path == "" || !filepath.IsAbs(req.Path) {
		return nil, badRequest("path must be an absolute file path")
	}
	if o.Backup == nil {
		return nil, &Error{Code: CodeConflict, Message: "this database cannot be backed up by chatd: with PostgreSQL use pg_dump"}
	}
	if err := o.Backup(ctx, req.Path); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	return BackupResponse(req), nil
}
