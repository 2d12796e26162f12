package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/store"
)

// errSkip rolls back an acquisition that no longer applies; errNoRoom is
// the one refused because the chat's pool is full.
var (
	errSkip   = errors.New("skip")
	errNoRoom = fmt.Errorf("%w: no free slot", errSkip)
)

// acquireLoop greedily acquires chats on chat:ownership notifications and
// on a timer, with a pass right away. With leases the timer fires no later
// than when the oldest lease of another replica goes stale (nextPassIn), so
// a crashed replica's chats are taken over at lease expiry rather than up
// to an AcquireInterval later.
func (w *Worker) acquireLoop(ctx context.Context, wake <-chan struct{}) {
	for w.acquiring() {
		if _, more := w.acquirePass(ctx); more {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-w.noAcquire:
			return
		case <-wake:
		case <-w.clock.After(w.nextPassIn(ctx)):
		}
	}
}

// nextPassIn is how long the acquisition loop waits for its next timed
// pass: AcquireInterval, or less when a lease another replica holds goes
// stale sooner (a heartbeat exactly LeaseTimeout old is stale). The store
// measures that wait by its lease clock (the database's on Postgres), so
// a replica whose clock is off neither waits too long for a dead
// replica's lease nor wakes too early for a live one.
func (w *Worker) nextPassIn(ctx context.Context) time.Duration {
	if !w.cfg.Leases {
		return w.cfg.AcquireInterval
	}
	var (
		d     time.Duration
		found bool
	)
	err := w.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		d, found, err = tx.HeartbeatOldestForeign(ctx, w.acquireParams())
		return err
	})
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("read the oldest foreign lease", "err", err)
		}
		return w.cfg.AcquireInterval
	}
	if !found {
		return w.cfg.AcquireInterval
	}
	return min(max(d, time.Millisecond), w.cfg.AcquireInterval)
}

// AcquirePass tries to acquire every acquirable chat once and reports how
// many it took. A chat in requires_action takes no slot of the concurrent
// agent limiter, so it is always taken; the others are admitted fairly
// between users: the next slot goes to the user holding the fewest slots,
// the oldest of that user's chats first (see admissionOrder).
func (w *Worker) AcquirePass(ctx context.Context) int {
	n, _ := w.acquirePass(ctx)
	return n
}

// acquirePass is AcquirePass; more reports that the pass read a whole
// page of candidates (Config.AcquirePage) and took some of them, so
// more chats may wait beyond the page: the loop runs another pass at once
// rather than leaving them to a wake-up that may not come (the chats'
// notices were all consumed) or to the timed pass.
func (w *Worker) acquirePass(ctx context.Context) (n int, more bool) {
	var (
		chats            []store.Chat
		roots, subagents int64
		byOwner          map[uuid.UUID]int64
	)
	err := w.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		p := w.acquireParams()
		if chats, err = tx.ChatListAcquirable(ctx, p); err != nil {
			return err
		}
		if roots, subagents, err = tx.ChatCountOwned(ctx, p); err != nil {
			return err
		}
		byOwner, err = tx.ChatCountOwnedByOwner(ctx, p)
		return err
	})
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("list acquirable chats", "err", err)
		}
		return 0, false
	}
	order := admissionOrder{chats: chats, byOwner: byOwner}
	for ctx.Err() == nil && w.acquiring() {
		// A pool that was full when the counts were read is skipped without
		// a write transaction; tryAcquire's check under the lock decides.
		c, ok := order.next(func(c store.Chat) bool {
			return !needsSlot(c) || w.hasRoom(c, roots, subagents)
		})
		if !ok {
			break
		}
		if !w.tryAcquire(ctx, c.ID) {
			continue
		}
		n++
		if needsSlot(c) {
			order.byOwner[c.OwnerID]++
			if c.ParentChatID.Valid {
				subagents++
			} else {
				roots++
			}
		}
	}
	// Chats waiting for a slot: those needing one the pass did not get to
	// (their pools were full); not those it lost to another worker.
	waiting := int64(0)
	for _, c := range order.chats {
		if needsSlot(c) {
			waiting++
		}
	}
	w.waiting.Store(waiting)
	w.deps.Metrics.pass(len(chats)-n, roots, subagents)
	return n, n > 0 && len(chats) >= w.cfg.AcquirePage
}

// needsSlot reports whether running c counts against the concurrent agent
// limit: a chat waiting on a person or an operator (requires_action, for
// a client tool, an approval or a review) does not; it counts again once
// it runs. This departs from the spec's "whatever its execution state"
// (docs/ARCHITECTURE.md, "Concurrent agent limiter").
func needsSlot(c store.Chat) bool { return c.Status != store.ChatStatusRequiresAction }

// hasRoom reports whether c's pool has a free slot at these counts.
func (w *Worker) hasRoom(c store.Chat, roots, subagents int64) bool {
	if c.ParentChatID.Valid {
		return subagents < int64(w.cfg.SubagentLimit)
	}
	return roots < int64(w.cfg.RootLimit)
}

// admissionOrder hands out the candidates of one pass fairly: each next
// is the allowed candidate whose owner holds the fewest slots right now,
// ties going to the oldest. Counts go up as the pass admits chats, so one user's backlog
// cannot take every slot that frees while another user waits.
type admissionOrder struct {
	chats   []store.Chat
	byOwner map[uuid.UUID]int64
}

// before orders a ahead of b: fewer slots held by its owner, then older
// (updated_at, id: the store's order).
func (o *admissionOrder) before(a, b store.Chat) bool {
	if na, nb := o.byOwner[a.OwnerID], o.byOwner[b.OwnerID]; na != nb {
		return na < nb
	}
	if !a.UpdatedAt.Equal(b.UpdatedAt) {
		return a.UpdatedAt.Before(b.UpdatedAt)
	}
	return bytes.Compare(a.ID[:], b.ID[:]) < 0
}

// next removes and returns the best allowed candidate.
func (o *admissionOrder) next(allowed func(store.Chat) bool) (store.Chat, bool) {
	best := -1
	for i, c := range o.chats {
		if !allowed(c) {
			continue
		}
		if best < 0 || o.before(c, o.chats[best]) {
			best = i
		}
	}
	if best < 0 {
		return store.Chat{}, false
	}
	c := o.chats[best]
	o.chats = append(o.chats[:best], o.chats[best+1:]...)
	return c, true
}

// tryAcquire re-checks the chat under its lock, admits it against the
// concurrent agent limits under the admission lock, and acquires it with a
// fresh runner id. A refused chat stays unowned for a later pass.
func (w *Worker) tryAcquire(ctx context.Context, chatID uuid.UUID) bool {
	var a acquisition
	err := w.deps.Machine.Do(ctx, func(t *chatstate.Tx) error {
		if err := t.LockAdmission(); err != nil {
			return err
		}
		var err error
		a, err = w.acquireIn(ctx, t, chatID)
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
	w.log.Debug("acquired chat", "chat_id", chatID, "runner_id", a.runnerID)
	w.manager.spawn(ctx, a)
	return true
}

// acquireIn acquires the chat in t, whose transaction holds the admission
// lock, with a fresh runner id: it locks the chat, checks that it is
// runnable, that no live worker owns it and that its pool has room, and
// applies Acquire (with the first generation attempt, see
// reservesAttempt). errSkip: the chat is not to be acquired now (nothing
// was written).
func (w *Worker) acquireIn(ctx context.Context, t *chatstate.Tx, chatID uuid.UUID) (acquisition, error) {
	tx := t.Reader()
	c, st, err := t.LockState(chatID)
	if err != nil {
		return acquisition{}, err
	}
	if !st.Runnable() {
		return acquisition{}, errSkip
	}
	alive, err := w.ownerAlive(ctx, tx, c)
	if err != nil {
		return acquisition{}, err
	}
	if alive {
		return acquisition{}, errSkip
	}
	if needsSlot(c) {
		roots, subagents, err := tx.ChatCountOwned(ctx, w.acquireParams())
		if err != nil {
			return acquisition{}, err
		}
		if !w.hasRoom(c, roots, subagents) {
			w.log.Debug("chat waits for capacity", "chat_id", chatID, "roots", roots, "subagents", subagents)
			return acquisition{}, errNoRoom
		}
	}
	a := acquisition{runnerID: uuid.New(), takenOver: c.WorkerID.Valid}
	res, err := t.Acquire(chatID, w.id, a.runnerID)
	if err != nil || !reservesAttempt(res.Chat) {
		a.chat = res.Chat
		return a, err
	}
	res, err = t.RecordGenerationAttempt(chatID)
	a.chat, a.reserved = res.Chat, true
	return a, err
}

// reservesAttempt reports whether acquiring c also records the generation
// attempt of the runner's first model call (RecordGenerationAttempt in the
// Acquire transaction, as the spec lets transitions share one): a running
// chat is acquired to generate, and the first call then starts without a
// write transaction of its own. If the runner's first step calls no model
// (it answers outstanding tool calls, or finds the turn complete), the
// attempt goes unused: the next history change resets the count, and an
// attempt without a call is harmless to a stream (its episode stays empty).
func reservesAttempt(c store.Chat) bool {
	return c.Status == store.ChatStatusRunning && !c.Archived
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
	return tx.HeartbeatFresh(ctx, c.ID, c.RunnerID.UUID, w.leaseWindow())
}

// leaseWindow is the lease timeout at the worker's time. A store shared by
// replicas judges it by the database's clock instead of Now (see
// store.LeaseWindow).
func (w *Worker) leaseWindow() store.LeaseWindow {
	return store.LeaseWindow{Now: w.clock.Now(), Timeout: w.cfg.LeaseTimeout}
}
