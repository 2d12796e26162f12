package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/chatd/chatd/app/admin"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/dbcopy"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/open"
)

// AdminSocketPath is where a server on the SQLite file db answers admin
// commands: the file's absolute path plus admin.SocketSuffix.
func AdminSocketPath(db string) (string, error) {
	abs, err := filepath.Abs(db)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", db, err)
	}
	return abs + admin.SocketSuffix, nil
}

// adminSocket is the admin socket a SQLite server listens on.
type adminSocket struct {
	path string
	srv  *http.Server
	done chan struct{} // closed when Serve has returned
}

// listenAdmin creates the socket with mode 0600 from the start: it is
// bound inside a fresh 0700 directory, restricted, then renamed into place,
// so nobody else can connect in between. A stale socket of a previous run
// (the SQLite lock proves no other server uses this file) is replaced; any
// other file there is left alone and refused.
func listenAdmin(path string) (*net.UnixListener, error) {
	tmp, err := os.MkdirTemp(filepath.Dir(path), ".adm-") // short: socket paths are limited
	if err != nil {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	defer os.RemoveAll(tmp)
	bound := filepath.Join(tmp, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: bound, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("admin socket: listen: %w", err)
	}
	ln.SetUnlinkOnClose(false) // the path changes; stop removes it
	fail := func(err error) (*net.UnixListener, error) {
		ln.Close()
		return nil, fmt.Errorf("admin socket %s: %w", path, err)
	}
	if err := os.Chmod(bound, 0o600); err != nil {
		return fail(err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return fail(errors.New("the path exists and is not a socket; remove it"))
		}
		if err := os.Remove(path); err != nil {
			return fail(fmt.Errorf("remove the stale socket: %w", err))
		}
	}
	if err := os.Rename(bound, path); err != nil {
		return fail(err)
	}
	return ln, nil
}

// sameUser is a listener that closes connections from processes of other
// users (SO_PEERCRED on Linux; root is let in too, as it could read the
// database anyway): defence in depth behind the socket's mode 0600.
type sameUser struct {
	*net.UnixListener
	allow  func(uid int) bool
	refuse func(uid int, err error)
}

// ownUserOrRoot lets in the server's own user and root.
func ownUserOrRoot(uid int) bool { return uid == os.Getuid() || uid == 0 }

// Accept returns the next connection of the server's own user.
func (l sameUser) Accept() (net.Conn, error) {
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			return nil, err
		}
		if !peerCredentialsChecked {
			return c, nil
		}
		uid, err := peerUID(c)
		if err == nil && l.allow(uid) {
			return c, nil
		}
		l.refuse(uid, err)
		_ = c.Close()
	}
}

// startAdmin serves admin commands on the SQLite file's socket. Failing to
// listen (a path too long for a socket, say) is logged and not fatal:
// only the CLI beside the server is lost.
func (a *App) startAdmin(baseURL string) *adminSocket {
	if sharedByReplicas(a.store) {
		return nil // Postgres: the CLI uses the database directly
	}
	path, err := AdminSocketPath(a.cfg.DB)
	if err == nil {
		var ln *net.UnixListener
		if ln, err = listenAdmin(path); err == nil {
			s := &adminSocket{path: path, done: make(chan struct{}), srv: &http.Server{
				Handler:           admin.Handler(&admin.Ops{Tokens: a.tokens, Invocations: invocations{store: a.store, machine: a.machine}, BaseURL: baseURL, Backup: snapshotTo(a.cfg.DB)}),
				ReadHeaderTimeout: DefaultReadHeaderTimeout,
			}}
			guarded := sameUser{UnixListener: ln, allow: ownUserOrRoot, refuse: func(uid int, err error) {
				a.log.Warn("admin socket: refused a connection from another user", "peer_uid", uid, "err", err)
			}}
			go func() {
				defer close(s.done)
				_ = s.srv.Serve(guarded)
			}()
			a.log.Info("admin socket", "path", path)
			return s
		}
	}
	a.log.Warn("no admin socket: chatd token and chatd invocation cannot reach this server", "err", err)
	return nil
}

// stop closes the socket, waits for the commands in flight (up to
// timeout, then cuts them off) and removes the file.
func (s *adminSocket) stop(timeout time.Duration) {
	if s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close()
	}
	<-s.done
	_ = os.Remove(s.path)
}

// OpenAdmin returns the client the CLI runs admin commands with. For a
// SQLite file a running server is asked over its admin socket; with no
// server there (no socket, or a stale one) and with Postgres, the database
// is opened and migrated here, with cfg's token settings. close releases
// what it opened.
func OpenAdmin(ctx context.Context, cfg Config) (c admin.Client, closeFn func() error, err error) {
	cfg = cfg.withDefaults()
	if !open.IsPostgres(cfg.DB) {
		path, err := AdminSocketPath(cfg.DB)
		if err != nil {
			return nil, nil, err
		}
		conn, err := net.Dial("unix", path)
		switch {
		case err == nil:
			conn.Close()
			return admin.Dial(path), func() error { return nil }, nil
		case errors.Is(err, fs.ErrPermission):
			// Someone else's server: do not try its database behind its back.
			return nil, nil, fmt.Errorf("reach the server at %s: %w", path, err)
		}
		// No server answers (no socket, a stale one, a path too long for
		// a socket): open the file; its lock refuses if a server holds it.
	}
	s, err := open.Migrated(ctx, cfg.DB)
	if errors.Is(err, store.ErrLocked) {
		return nil, nil, fmt.Errorf("%w (and its admin socket does not answer)", err)
	}
	if err != nil {
		return nil, nil, err
	}
	tokens := auth.New(s, cfg.Clock, nil, auth.Config{SessionTTL: cfg.SessionTTL})
	// A review is published on the store's own pubsub (Postgres NOTIFY),
	// so serving replicas pick it up at once.
	log := slog.Default()
	pub, closePub, err := openPubsub(ctx, s, log)
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	m := chatstate.New(s, pub, machineConfig(cfg, sharedByReplicas(s), log, cfg.Clock))
	ops := &admin.Ops{Tokens: tokens, Invocations: invocations{store: s, machine: m}, BaseURL: "http://" + cfg.Addr}
	if !open.IsPostgres(cfg.DB) {
		ops.Backup = snapshotTo(cfg.DB)
	}
	return admin.Local(ops), func() error { closePub(); return s.Close() }, nil
}

// snapshotTo is the admin backup command of the SQLite file db.
func snapshotTo(db string) func(ctx context.Context, dest string) error {
	return func(ctx context.Context, dest string) error { return dbcopy.Snapshot(ctx, db, dest) }
}
