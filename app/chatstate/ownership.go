package chatstate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// Acquire gives the chat to (worker, runner) and records the initial
// heartbeat where leases are rows (see recordLease). It only changes ownership (U -> O or O -> O).
func (t *Tx) Acquire(chatID, workerID, runnerID uuid.UUID) (Result, error) {
	s, err := t.begin(chatID, Acquire)
	if err != nil {
		return Result{}, err
	}
	if _, err := t.tx.ChatUpdate(t.ctx, chatID, store.ChatPatch{
		WorkerID: store.Some(uuid.NullUUID{UUID: workerID, Valid: true}),
		RunnerID: store.Some(uuid.NullUUID{UUID: runnerID, Valid: true}),
	}); err != nil {
		return Result{}, fmt.Errorf("acquire chat %s: %w", chatID, err)
	}
	if err := t.recordLease(chatID, runnerID); err != nil {
		return Result{}, err
	}
	return s.end()
}

// Abandon clears the chat's ownership (O -> U).
func (t *Tx) Abandon(chatID uuid.UUID) (Result, error) {
	s, err := t.begin(chatID, Abandon)
	if err != nil {
		return Result{}, err
	}
	if _, err := t.tx.ChatUpdate(t.ctx, chatID, store.ChatPatch{
		WorkerID: store.Some(uuid.NullUUID{}), RunnerID: store.Some(uuid.NullUUID{}),
	}); err != nil {
		return Result{}, fmt.Errorf("abandon chat %s: %w", chatID, err)
	}
	return s.end()
}

// ReleaseWorker hands over every chat workerID owns: each one is
// abandoned (O -> U) in a bundle of its own, so another worker may acquire
// it at once instead of waiting for its lease to go stale, and the
// chat:ownership notification of those left runnable tells the other
// replicas' acquisition loops (spec: "Runner exit", a replica handing its
// chats off during shutdown). Only the ownership changes: a step the
// worker had in flight was not committed, and the next owner runs it
// again (the tool journal decides for tool calls). Call it once the
// worker's runners have stopped, so none commits afterwards (their fences
// would refuse it anyway). A chat another worker took meanwhile is left
// alone. It returns the ids of the chats it released.
func (m *Machine) ReleaseWorker(ctx context.Context, workerID uuid.UUID) ([]uuid.UUID, error) {
	var ids []uuid.UUID
	err := m.store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		ids, err = tx.ChatListByWorker(ctx, workerID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("release worker %s: %w", workerID, err)
	}
	released := make([]uuid.UUID, 0, len(ids))
	var errs []error
	for _, id := range ids {
		err := m.Do(ctx, func(t *Tx) error {
			c, st, err := t.LockState(id)
			if err != nil {
				return err
			}
			if st == StateN || c.WorkerID != (uuid.NullUUID{UUID: workerID, Valid: true}) {
				return errNotHeld
			}
			_, err = t.Abandon(id)
			return err
		})
		switch {
		case err == nil:
			released = append(released, id)
		case errors.Is(err, errNotHeld):
		default:
			errs = append(errs, fmt.Errorf("release chat %s: %w", id, err))
		}
	}
	return released, errors.Join(errs...)
}

// errNotHeld rolls back the release of a chat its worker no longer owns.
var errNotHeld = errors.New("the chat is not the worker's")

// RunnableWithoutOwner reports whether a chat needs a worker to acquire it:
// it is unarchived, in a runnable status (running, interrupting,
// requires_action) and no runner owns it. Whether a recorded owner is still
// alive is a separate question (leases).
func RunnableWithoutOwner(status store.ChatStatus, archived bool, workerID, runnerID uuid.NullUUID) bool {
	return !archived && isRunnableStatus(status) && (!workerID.Valid || !runnerID.Valid)
}

// HoldsSlot reports whether a chat takes a slot of the concurrent agent
// limiter as far as its row tells: it is owned and not waiting on a person
// or an operator (requires_action takes no slot; docs/ARCHITECTURE.md,
// "Concurrent agent limiter"). The store's count (ChatCountOwned) also asks
// for a live owner and leaves out a chat whose tool call waits on a
// person's answer to an MCP server's question (AskElicitation). A bundle after which a chat no longer holds one
// announces the free slot on chat:ownership (Machine.Do).
func HoldsSlot(status store.ChatStatus, workerID uuid.NullUUID) bool {
	return workerID.Valid && status != store.ChatStatusRequiresAction
}

// LockAdmission serialises admission against the concurrent agent limits
// until the transaction ends, so two acquisitions cannot both take the
// last slot (a Postgres advisory lock; SQLite's writer lock already does).
func (t *Tx) LockAdmission() error {
	if err := t.tx.AdmissionLock(t.ctx); err != nil {
		return fmt.Errorf("lock admission: %w", err)
	}
	return nil
}

// TryLockAdmission takes the admission lock if no other transaction holds
// it, without waiting, and reports whether it did: for a bundle that
// already holds chat locks (an acquisition takes the admission lock first).
func (t *Tx) TryLockAdmission() (bool, error) {
	ok, err := t.tx.AdmissionTryLock(t.ctx)
	if err != nil {
		return false, fmt.Errorf("lock admission: %w", err)
	}
	return ok, nil
}

// LockOwner serialises, until the transaction ends, the bundles that
// check a per-user quota before they write (chats per user), so two
// concurrent creates cannot both take the last place.
func (t *Tx) LockOwner(userID uuid.UUID) error {
	if err := t.tx.UserLock(t.ctx, userID); err != nil {
		return fmt.Errorf("lock owner: %w", err)
	}
	return nil
}

// recordLease writes the initial heartbeat of a runner's lease, when
// leases are heartbeat rows (several replicas: Config.LeaseTimeout set).
// With in-memory heartbeats (one process owns a SQLite file) nothing
// would ever renew or remove the row, so none is written. The store
// stamps it by its lease clock (the database's on Postgres; see
// store.LeaseWindow).
func (t *Tx) recordLease(chatID, runnerID uuid.UUID) error {
	if t.m.cfg.LeaseTimeout == 0 {
		return nil
	}
	if err := t.tx.HeartbeatInsert(t.ctx, chatID, runnerID, t.now); err != nil {
		return fmt.Errorf("insert heartbeat of chat %s: %w", chatID, err)
	}
	return nil
}

// leaseFresh reports whether c's owner holds a fresh lease at now, by the
// store's lease clock (needsOwner: with leases as rows, an owner with a
// stale or missing heartbeat counts as gone).
func (m *Machine) leaseFresh(ctx context.Context, tx store.Reader, c store.Chat, now time.Time) (bool, error) {
	fresh, err := tx.HeartbeatFresh(ctx, c.ID, c.RunnerID.UUID, store.LeaseWindow{Now: now, Timeout: m.cfg.LeaseTimeout})
	if err != nil {
		return false, fmt.Errorf("read heartbeat of chat %s: %w", c.ID, err)
	}
	return fresh, nil
}

// RenewLeases stamps a new heartbeat on the given leases that are still
// fresh in w and whose chat that runner still owns, and returns the
// renewed ones. Freshness and the new stamp come from the store's lease
// clock (on Postgres the database's, whatever w.Now says). It runs under
// the admission lock, so a lease that admission counted as stale cannot
// come back; a stale lease is never revived. Leases are rows only with
// several replicas (Postgres).
//
// A lease it could not renew is lost: its chat needs a new owner, and the
// slot it held is free. Nothing else says so (no transition happened), so
// it announces each such chat on chat:ownership once the renewal has
// committed, and every replica's acquisition loop looks at once rather
// than at its next timed pass.
func (m *Machine) RenewLeases(ctx context.Context, leases []store.Lease, w store.LeaseWindow) ([]store.Lease, error) {
	var (
		renewed []store.Lease
		lost    []store.Chat
	)
	err := m.store.InTx(ctx, func(tx store.Tx) error {
		if err := tx.AdmissionLock(ctx); err != nil {
			return fmt.Errorf("lock admission: %w", err)
		}
		var err error
		renewed, err = tx.HeartbeatRenew(ctx, leases, w)
		if err != nil {
			return fmt.Errorf("renew %d leases: %w", len(leases), err)
		}
		lost, err = lostLeaseChats(ctx, tx, leases, renewed)
		return err
	})
	if err != nil {
		return renewed, err
	}
	for _, c := range lost {
		m.publishOwnership(ctx, c, HoldsSlot(c.Status, c.WorkerID))
	}
	return renewed, nil
}

// lostLeaseChats reads the chats of the leases that were not renewed (a
// deleted chat is left out).
func lostLeaseChats(ctx context.Context, tx store.Reader, leases, renewed []store.Lease) ([]store.Chat, error) {
	ok := make(map[store.Lease]bool, len(renewed))
	for _, l := range renewed {
		ok[l] = true
	}
	var ids []uuid.UUID
	for _, l := range leases {
		if !ok[l] && !slices.Contains(ids, l.ChatID) {
			ids = append(ids, l.ChatID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	chats, err := tx.ChatGetMany(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("read chats of %d lost leases: %w", len(ids), err)
	}
	return chats, nil
}

// DeleteStaleLeases removes lease rows whose heartbeat is older than w
// allows: their runners are gone, and acquisition already treats them as
// unowned.
func (m *Machine) DeleteStaleLeases(ctx context.Context, w store.LeaseWindow) (int64, error) {
	var n int64
	err := m.store.InTx(ctx, func(tx store.Tx) error {
		var err error
		n, err = tx.HeartbeatDeleteStale(ctx, w)
		if err != nil {
			return fmt.Errorf("delete stale leases: %w", err)
		}
		return nil
	})
	return n, err
}

// TouchReplica marks the replica record of workerID as alive now, by the
// store's lease clock (the replica registry is not chat state; it lives
// here beside the leases it follows). It reports whether the record
// exists.
func (m *Machine) TouchReplica(ctx context.Context, workerID uuid.UUID, now time.Time) (bool, error) {
	var found bool
	err := m.store.InTx(ctx, func(tx store.Tx) error {
		var err error
		found, err = tx.ReplicaTouch(ctx, workerID, now)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("touch replica %s: %w", workerID, err)
	}
	return found, nil
}

// DeleteStaleReplicas removes the records of replicas that have not been
// refreshed within w: a live replica refreshes its record on every
// heartbeat tick, so those replicas are dead (their leases are stale too)
// and no stream may be relayed to them.
func (m *Machine) DeleteStaleReplicas(ctx context.Context, w store.LeaseWindow) (int64, error) {
	var n int64
	err := m.store.InTx(ctx, func(tx store.Tx) error {
		var err error
		n, err = tx.ReplicaDeleteStale(ctx, w)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete stale replicas: %w", err)
	}
	return n, nil
}
