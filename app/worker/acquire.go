package worker

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/store"
)

// errSkip rolls back an acquisition that no longer applies.
var errSkip = errors.New("skip")

// acquireLoop greedily acquires chats on chat:ownership notifications and
// on a timer, with a pass right away.
func (w *Worker) acquireLoop(ctx context.Context, wake <-chan struct{}) {
	for {
		w.AcquirePass(ctx)
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-w.clock.After(w.cfg.AcquireInterval):
		}
	}
}

// AcquirePass tries to acquire every acquirable chat once and reports how
// many it took.
func (w *Worker) AcquirePass(ctx context.Context) int {
	var (
		chats            []store.Chat
		roots, subagents int64
	)
	err := w.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		if chats, err = tx.ChatListAcquirable(ctx, w.acquireParams()); err != nil {
			return err
		}
		roots, subagents, err = tx.ChatCountOwned(ctx, w.acquireParams())
		return err
	})
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("list acquirable chats", "err", err)
		}
		return 0
	}
	n := 0
	for _, c := range chats {
		if ctx.Err() != nil {
			break
		}
		// A pool that was full when the list was read is skipped without a
		// write transaction; tryAcquire's check under the lock decides.
		if c.ParentChatID.Valid && subagents >= int64(w.cfg.SubagentLimit) ||
			!c.ParentChatID.Valid && roots >= int64(w.cfg.RootLimit) {
			continue
		}
		if w.tryAcquire(ctx, c.ID) {
			if c.ParentChatID.Valid {
				subagents++
			} else {
				roots++
			}
			n++
		}
	}
	return n
}

// tryAcquire re-checks the chat under its lock, admits it against the
// concurrent agent limits under the admission lock, and acquires it with a
// fresh runner id. A refused chat stays unowned for a later pass.
func (w *Worker) tryAcquire(ctx context.Context, chatID uuid.UUID) bool {
	runnerID := uuid.New()
	var acquired store.Chat
	err := w.deps.Machine.Do(ctx, func(t *chatstate.Tx) error {
		tx := t.Reader()
		if err := t.LockAdmission(); err != nil {
			return err
		}
		c, st, err := t.LockState(chatID)
		if err != nil {
			return err
		}
		if !st.Runnable() {
			return errSkip
		}
		alive, err := w.ownerAlive(ctx, tx, c)
		if err != nil || alive {
			return errors.Join(err, errSkip)
		}
		roots, subagents, err := tx.ChatCountOwned(ctx, w.acquireParams())
		if err != nil {
			return err
		}
		if c.ParentChatID.Valid && subagents >= int64(w.cfg.SubagentLimit) ||
			!c.ParentChatID.Valid && roots >= int64(w.cfg.RootLimit) {
			w.log.Debug("chat waits for capacity", "chat_id", chatID, "roots", roots, "subagents", subagents)
			return errSkip
		}
		res, err := t.Acquire(chatID, w.id, runnerID)
		acquired = res.Chat
		return err
	})
	switch {
	case errors.Is(err, errSkip):
		return false
	case err != nil:
		if ctx.Err() == nil {
			w.log.Warn("acquire chat", "chat_id", chatID, "err", err)
		}
		return false
	}
	w.log.Debug("acquired chat", "chat_id", chatID, "runner_id", runnerID)
	w.manager.spawn(ctx, acquired, runnerID)
	return true
}

// ownerAlive re-checks, under the chat's lock, whether its owner is alive
// (a heartbeat may have renewed the lease since the candidate list).
func (w *Worker) ownerAlive(ctx context.Context, tx store.Reader, c store.Chat) (bool, error) {
	if !c.WorkerID.Valid || !c.RunnerID.Valid {
		return false, nil
	}
	if !w.cfg.Leases {
		return c.WorkerID.UUID == w.id && w.manager.has(c.ID, c.RunnerID.UUID), nil
	}
	at, err := tx.HeartbeatAt(ctx, c.ID, c.RunnerID.UUID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return at.After(w.leaseCutoff()), nil
}

// leaseCutoff is the time before which a heartbeat is stale.
func (w *Worker) leaseCutoff() time.Time { return w.clock.Now().Add(-w.cfg.LeaseTimeout) }
