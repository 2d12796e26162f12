package chatstate

import (
	"fmt"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// RunnableWithoutOwner reports whether a chat needs a worker to acquire it:
// it is unarchived, in a runnable status (running, interrupting,
// requires_action) and no runner owns it. Whether a recorded owner is still
// alive is a separate question (leases).
func RunnableWithoutOwner(status store.ChatStatus, archived bool, workerID, runnerID uuid.NullUUID) bool {
	return !archived && isRunnableStatus(status) && (!workerID.Valid || !runnerID.Valid)
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

// recordLease writes the initial heartbeat of a runner's lease, when
// leases are heartbeat rows (several replicas: Config.LeaseTimeout set).
// With in-memory heartbeats (one process owns a SQLite file) nothing
// would ever renew or remove the row, so none is written.
func (t *Tx) recordLease(chatID, runnerID uuid.UUID) error {
	if t.m.cfg.LeaseTimeout == 0 {
		return nil
	}
	if err := t.tx.HeartbeatInsert(t.ctx, chatID, runnerID, t.now); err != nil {
		return fmt.Errorf("insert heartbeat of chat %s: %w", chatID, err)
	}
	return nil
}
