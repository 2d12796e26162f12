package api

import (
	"fmt"
	"io"
	"net/http"

	"github.com/chatd/chatd/app/sdk"
)

var errBackupPostgres = newError(http.StatusNotFound, sdk.CodeNotFound,
	"This server runs on PostgreSQL: back it up with pg_dump.", "")

// backupRoutes registers GET /admin/backup.
func (s *Server) backupRoutes(chat func(method, path string, h func(http.ResponseWriter, *http.Request, *caller) error)) {
	chat("GET", "/admin/backup", s.backup)
}

// backup streams a consistent snapshot of the SQLite database (VACUUM
// INTO a temporary file, then its bytes) to an admin.
func (s *Server) backup(w http.ResponseWriter, r *http.Request, c *caller) error {
	if !c.user.Admin {
		return errAdminOnly
	}
	if s.deps.Backup == nil {
		return errBackupPostgres
	}
	f, err := s.deps.Backup(r.Context())
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer f.Close()
	h := w.Header()
	h.Set("Content-Type", "application/vnd.sqlite3")
	h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="chatd-%s.db"`, s.deps.Clock.Now().UTC().Format("20060102T150405Z")))
	if st, err := f.Stat(); err == nil {
		h.Set("Content-Length", fmt.Sprint(st.Size()))
	}
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, f) // the client sees a short body if this fails
	return nil
}
