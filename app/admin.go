package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"

	"github.com/chatd/chatd/app/admin"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/dbcopy"
	"github.com/chatd/chatd/app/worker"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/open"
)

// startAdmin serves admin commands on the SQLite file's socket. Failing to
// listen (a path too long for a socket, say) is logged and not fatal:
// only the CLI beside the server is lost.
func (a *App) startAdmin(baseURL string) *admin.Socket {
	if sharedByReplicas(a.store) {
		return nil // Postgres: the CLI uses the database directly
	}
	path, err := admin.SocketPath(a.cfg.DB)
	if err == nil {
		h := admin.Handler(&admin.Ops{Tokens: a.tokens, Invocations: admin.StoreInvocations(a.store, a.machine), BaseURL: baseURL, Backup: snapshotTo(a.cfg.DB)})
		var s *admin.Socket
		if s, err = admin.Serve(path, h, a.log, config.DefaultReadHeaderTimeout); err == nil {
			a.log.Info("admin socket", "path", path)
			return s
		}
	}
	a.log.Warn("no admin socket: chatd token and chatd invocation cannot reach this server", "err", err)
	return nil
}

// OpenAdmin returns the client the CLI runs admin commands with. For a
// SQLite file a running server is asked over its admin socket; with no
// server there (no socket, or a stale one) and with Postgres, the database
// is opened and migrated here, with cfg's token settings. close releases
// what it opened.
func OpenAdmin(ctx context.Context, cfg config.Config) (c admin.Client, closeFn func() error, err error) {
	cfg = cfg.WithDefaults()
	if !open.IsPostgres(cfg.DB) {
		path, err := admin.SocketPath(cfg.DB)
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
	ops := &admin.Ops{Tokens: tokens, Invocations: admin.StoreInvocations(s, m), BaseURL: "http://" + cfg.Addr}
	if !open.IsPostgres(cfg.DB) {
		ops.Backup = snapshotTo(cfg.DB)
	}
	return admin.Local(ops), func() error { closePub(); return s.Close() }, nil
}

// snapshotTo is the admin backup command of the SQLite file db.
func snapshotTo(db string) func(ctx context.Context, dest string) error {
	return func(ctx context.Context, dest string) error { return dbcopy.Snapshot(ctx, db, dest) }
}

// machineConfig is the state machine's configuration for cfg: leases are
// heartbeat rows (and an owner with a stale heartbeat counts as gone) only
// with several replicas on Postgres.
func machineConfig(cfg config.Config, leases bool, log *slog.Logger, clk clock.Clock) chatstate.Config {
	mcfg := chatstate.Config{QueueLimit: cfg.QueueLimit, RequiresActionTimeout: cfg.RequiresActionTimeout, Log: log, Clock: clk}
	if leases {
		mcfg.LeaseTimeout = cfg.Worker.LeaseTimeout
		if mcfg.LeaseTimeout == 0 {
			mcfg.LeaseTimeout = worker.DefaultLeaseTimeout
		}
	}
	return mcfg
}
