package store

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// HeartbeatReader reads leases, and the chats they own or leave for the
// taking. It is part of Reader.
type HeartbeatReader interface {
	// HeartbeatAt reads a lease's last heartbeat (ErrNotFound when none).
	// It is the stamp as written (see LeaseWindow for which clock wrote
	// it); whether the lease is fresh is HeartbeatFresh's question.
	HeartbeatAt(ctx context.Context, chatID, runnerID uuid.UUID) (time.Time, error)

	// HeartbeatFresh reports whether the lease of (chat, runner) has a
	// heartbeat inside w (false when there is no heartbeat row).
	HeartbeatFresh(ctx context.Context, chatID, runnerID uuid.UUID, w LeaseWindow) (bool, error)

	// HeartbeatOldestForeign reports how long, by the lease clock (see
	// LeaseWindow), until the oldest fresh lease that a worker other than
	// p.Self holds on an unarchived runnable chat goes stale: then a chat
	// needs taking over. It reports false when there is none or without
	// p.Leases.
	HeartbeatOldestForeign(ctx context.Context, p AcquirableParams) (time.Duration, bool, error)

	// ChatListAcquirable lists unarchived chats in a runnable status
	// (running, interrupting, requires_action) that no live worker owns, in
	// admission order: requires_action first (it takes no slot), then the
	// chats of the users holding the fewest slots (ChatCountOwnedByOwner),
	// then the oldest (updated_at, id).
	ChatListAcquirable(ctx context.Context, p AcquirableParams) ([]Chat, error)

	// ChatListByWorker lists the ids of the chats whose worker_id is
	// workerID, whatever their state, oldest first (created_at, id): what
	// a worker holds when it hands its chats over on shutdown.
	ChatListByWorker(ctx context.Context, workerID uuid.UUID) ([]uuid.UUID, error)

	// ChatCountOwned counts the chats that hold a slot of the concurrent
	// agent limiter, split into root chats and subagent (child) chats: a
	// live owner holds them and they are not in requires_action (a chat
	// waiting on a person or an operator keeps its owner, not its slot).
	ChatCountOwned(ctx context.Context, p AcquirableParams) (roots, subagents int64, err error)

	// ChatCountOwnedByOwner counts the same chats as ChatCountOwned, both
	// pools together, per owning user (users holding none are absent).
	ChatCountOwnedByOwner(ctx context.Context, p AcquirableParams) (map[uuid.UUID]int64, error)
}

// HeartbeatTx writes leases and replica liveness, and takes the admission
// lock. It is part of Tx.
type HeartbeatTx interface {
	// HeartbeatInsert records a runner's lease on a chat (Acquire's initial
	// heartbeat), replacing an existing row for the same pair. The
	// heartbeat is stamped by the lease clock: now, the caller's time, or
	// the database's (see LeaseWindow).
	HeartbeatInsert(ctx context.Context, chatID, runnerID uuid.UUID, now time.Time) error

	// HeartbeatRenew stamps a new heartbeat (by the lease clock, as
	// HeartbeatInsert) on the given leases that are still fresh in w and
	// whose chat is still owned by that runner; it returns the renewed
	// ones. A stale lease is never revived.
	HeartbeatRenew(ctx context.Context, leases []Lease, w LeaseWindow) ([]Lease, error)

	// HeartbeatDeleteStale removes the leases whose heartbeat is older than
	// w allows (strictly older than w.Timeout).
	HeartbeatDeleteStale(ctx context.Context, w LeaseWindow) (int64, error)

	// AdmissionLock serialises capacity admission until the transaction
	// ends (a Postgres advisory lock; SQLite's writer lock already does).
	AdmissionLock(ctx context.Context) error

	// AdmissionTryLock takes the admission lock only if no other
	// transaction holds it, without waiting, and reports whether it did:
	// for a transaction that already holds chat row locks, which must not
	// wait for the admission lock (an acquisition takes it first, then the
	// chat).
	AdmissionTryLock(ctx context.Context) (bool, error)

	// ReplicaTouch stamps a replica's record as refreshed (its worker does
	// on every heartbeat tick) by the lease clock, as HeartbeatInsert, and
	// reports whether the record exists.
	ReplicaTouch(ctx context.Context, workerID uuid.UUID, now time.Time) (bool, error)

	// ReplicaDeleteStale removes the records of replicas not refreshed for
	// longer than w allows (strictly older than w.Timeout): they are dead,
	// and nobody may dial them.
	ReplicaDeleteStale(ctx context.Context, w LeaseWindow) (int64, error)
}

// Lease is a runner's ownership of a chat.
type Lease struct {
	ChatID   uuid.UUID
	RunnerID uuid.UUID
}

// LeaseWindow says which heartbeats (and replica records) are fresh: those
// stamped less than Timeout ago by the lease clock, so a stamp exactly
// Timeout old is stale.
//
// The lease clock is the store's choice, and one clock stamps and judges
// every lease. A store that one process owns (SQLite) uses the caller's
// clock: Now, and the stamps the caller passes. A store that several
// replicas share (Postgres) ignores the caller's times and uses the
// database's, statement_timestamp(), for stamps and for judging alike, so
// clock skew between replicas can neither steal a live chat (a slow
// stamp looking stale to a fast clock) nor strand a dead one (a fast
// stamp looking fresh to a slow clock).
type LeaseWindow struct {
	Now     time.Time
	Timeout time.Duration
}

// AcquirableParams say which owners count as alive. With Leases set
// (several replicas), an owner is alive while its heartbeat row for
// (chat, runner) is fresh in that window. Without it (one process owns a
// SQLite file), only Self is alive: any other worker id belongs to a
// process that has died.
type AcquirableParams struct {
	Self   uuid.UUID
	Leases *LeaseWindow
	Limit  int // see ListLimit
}
