package admin

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
)

// SocketPath is where a server on the SQLite file db answers admin
// commands: the file's absolute path plus SocketSuffix.
func SocketPath(db string) (string, error) {
	abs, err := filepath.Abs(db)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", db, err)
	}
	return abs + SocketSuffix, nil
}

// Socket is the admin socket a SQLite server listens on.
type Socket struct {
	path string
	srv  *http.Server
	done chan struct{} // closed when Serve has returned
}

// listen creates the socket with mode 0600 from the start: it is
// bound inside a fresh 0700 directory, restricted, then renamed into place,
// so nobody else can connect in between. A stale socket of a previous run
// (the SQLite lock proves no other server uses this file) is replaced; any
// other file there is left alone and refused.
func listen(path string) (*net.UnixListener, error) {
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

// Serve serves h on the admin socket path, to the server's own user and
// root only (log hears of refused peers). Stop ends it.
func Serve(path string, h http.Handler, log *slog.Logger, readHeaderTimeout time.Duration) (*Socket, error) {
	ln, err := listen(path)
	if err != nil {
		return nil, err
	}
	s := &Socket{path: path, done: make(chan struct{}), srv: &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout}}
	guarded := sameUser{UnixListener: ln, allow: ownUserOrRoot, refuse: func(uid int, err error) {
		log.Warn("admin socket: refused a connection from another user", "peer_uid", uid, "err", err)
	}}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(guarded)
	}()
	return s, nil
}

// Stop closes the socket, waits for the commands in flight (up to
// timeout, then cuts them off) and removes the file.
func (s *Socket) Stop(timeout time.Duration) {
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
