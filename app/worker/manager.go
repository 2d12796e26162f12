package worker

import (
	"context"
	"sync"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// manager owns the runners of this worker (spec: "Runner manager"). Several
// runners may exist for one chat while an old one is still winding down.
type manager struct {
	w       *Worker
	mu      sync.Mutex
	runners map[uuid.UUID]map[uuid.UUID]*runner
	// changed is closed (and replaced) when a runner comes or goes or
	// starts or stops waiting on a person: Drain waits on it.
	changed chan struct{}
	wg      sync.WaitGroup
}

func newManager(w *Worker) *manager {
	return &manager{w: w, runners: map[uuid.UUID]map[uuid.UUID]*runner{}, changed: make(chan struct{})}
}

// signalLocked wakes the waiters of changes; m.mu is held.
func (m *manager) signalLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// signal wakes the waiters of changes.
func (m *manager) signal() {
	m.mu.Lock()
	m.signalLocked()
	m.mu.Unlock()
}

// changes returns a channel closed at the next change of the runners.
func (m *manager) changes() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

// drain waits until every runner has finished or waits on a person
// (requires_action: its chat can wait for the next start as well as for
// this process), or ctx ends, and returns how many runners were still busy.
// Acquisition has stopped, so no runner is added meanwhile.
func (m *manager) drain(ctx context.Context) int {
	for {
		changed := m.changes()
		busy := 0
		for _, r := range m.all() {
			if !r.parked.Load() {
				busy++
			}
		}
		if busy == 0 {
			return 0
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return busy
		}
	}
}

// acquisition is what an Acquire transaction took: the committed row
// (the runner's first event), its runner id, whether it took the chat over
// from a dead owner, and whether it recorded the first model call's
// generation attempt (reservesAttempt).
type acquisition struct {
	chat      store.Chat
	runnerID  uuid.UUID
	takenOver bool
	reserved  bool
}

// spawn starts a runner for a committed acquisition.
func (m *manager) spawn(ctx context.Context, a acquisition) {
	m.start(ctx, m.register(a), a.chat)
}

// register creates the runner of an acquisition and lists it, so the
// acquisition loop counts the chat's owner alive; start runs it. Both
// follow the commit of the acquisition: the sync loop stops a listed
// runner whose chat it cannot read.
func (m *manager) register(a acquisition) *runner {
	c := a.chat
	r := newRunner(m.w, c, a.runnerID)
	if a.reserved {
		r.reserved = attemptReservation{historyVersion: c.HistoryVersion, attempt: c.GenerationAttempt}
	}
	// A chat taken over from a dead owner: its first turn's wait is the
	// previous owner's work, not pickup delay.
	r.turns.takenOver = a.takenOver
	// Acquisition admits a chat in requires_action without a slot.
	r.slot = needsSlot(c)
	m.mu.Lock()
	if m.runners[c.ID] == nil {
		m.runners[c.ID] = map[uuid.UUID]*runner{}
	}
	m.runners[c.ID][a.runnerID] = r
	m.mu.Unlock()
	return r
}

// start runs a registered runner; its first event is the row that
// Acquire committed.
func (m *manager) start(ctx context.Context, r *runner, c store.Chat) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		r.run(ctx, eventFromChat(c))
		m.forget(r) // the runner finished (cleanup or shutdown)
		// If its chat is still runnable, nothing else may say so: look
		// now (wakes coalesce with the one a finished turn sends).
		m.w.wakeAcquire()
	}()
}

// forget unlists a runner.
func (m *manager) forget(r *runner) {
	m.mu.Lock()
	delete(m.runners[r.chatID], r.runnerID)
	if len(m.runners[r.chatID]) == 0 {
		delete(m.runners, r.chatID)
	}
	m.signalLocked()
	m.mu.Unlock()
}

// has reports whether a runner exists.
func (m *manager) has(chatID, runnerID uuid.UUID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.runners[chatID][runnerID]
	return ok
}

// all returns every runner.
func (m *manager) all() []*runner {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*runner
	for _, rs := range m.runners {
		for _, r := range rs {
			out = append(out, r)
		}
	}
	return out
}

// Runners counts live runners (for tests and metrics).
func (w *Worker) Runners() int { return len(w.manager.all()) }

func (m *manager) wait() { m.wg.Wait() }

// syncLoop fetches every registered chat in one query on an interval and
// forwards the rows to their runners (spec: "Database sync loop"); a
// deleted chat's runners are cleaned up.
func (m *manager) syncLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.w.clock.After(m.w.cfg.SyncInterval):
		}
		m.syncOnce(ctx)
	}
}

func (m *manager) syncOnce(ctx context.Context) {
	runners := m.all()
	if len(runners) == 0 {
		return
	}
	ids := make([]uuid.UUID, 0, len(runners))
	seen := map[uuid.UUID]bool{}
	for _, r := range runners {
		if !seen[r.chatID] {
			seen[r.chatID] = true
			ids = append(ids, r.chatID)
		}
	}
	var chats []store.Chat
	err := m.w.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		chats, err = tx.ChatGetMany(ctx, ids)
		return err
	})
	if err != nil {
		if ctx.Err() == nil {
			m.w.log.Warn("sync chats", "err", err)
		}
		return
	}
	byID := map[uuid.UUID]store.Chat{}
	for _, c := range chats {
		byID[c.ID] = c
	}
	for _, r := range runners {
		if c, ok := byID[r.chatID]; ok {
			r.notify(eventFromChat(c))
		} else {
			r.stop() // the chat was deleted
		}
	}
}

// heartbeatLoop renews the leases of every runner every HeartbeatInterval
// and cleans up runners whose lease could not be renewed (spec: "Heartbeat
// loop"). With in-memory heartbeats a registered runner is its own lease.
func (m *manager) heartbeatLoop(ctx context.Context) {
	if !m.w.cfg.Leases {
		return
	}
	lastCleanup := m.w.clock.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.w.clock.After(m.w.cfg.HeartbeatInterval):
		}
		m.renewOnce(ctx)
		m.touchReplica(ctx)
		if now := m.w.clock.Now(); now.Sub(lastCleanup) >= m.w.cfg.LeaseTimeout {
			lastCleanup = now
			m.cleanupOnce(ctx)
		}
	}
}

// touchReplica refreshes this replica's record, so other replicas can
// tell it from a dead one (see cleanupOnce). A missing record (no relay
// address published, e.g. a worker outside an app) is left missing.
func (m *manager) touchReplica(ctx context.Context) {
	if _, err := m.w.deps.Machine.TouchReplica(ctx, m.w.id, m.w.clock.Now()); err != nil && ctx.Err() == nil {
		m.w.log.Warn("refresh replica record", "err", err)
	}
}

// cleanupOnce removes stale lease rows and the records of dead replicas:
// a replica is dead when its record has not been refreshed for longer than
// the lease timeout (three missed heartbeat ticks), which is also when its
// leases are stale.
func (m *manager) cleanupOnce(ctx context.Context) {
	lw := m.w.leaseWindow()
	if _, err := m.w.deps.Machine.DeleteStaleLeases(ctx, lw); err != nil && ctx.Err() == nil {
		m.w.log.Warn("delete stale heartbeats", "err", err)
	}
	n, err := m.w.deps.Machine.DeleteStaleReplicas(ctx, lw)
	if err != nil && ctx.Err() == nil {
		m.w.log.Warn("delete dead replicas", "err", err)
	}
	if n > 0 {
		m.w.log.Info("removed the records of dead replicas", "count", n)
	}
}

// renewOnce renews all leases in one statement, under the admission lock
// so a lease that admission counted as stale cannot come back. A failed
// tick renews nothing and cleans up nothing; the next tick retries.
func (m *manager) renewOnce(ctx context.Context) {
	runners := m.all()
	if len(runners) == 0 {
		return
	}
	leases := make([]store.Lease, len(runners))
	for i, r := range runners {
		leases[i] = store.Lease{ChatID: r.chatID, RunnerID: r.runnerID}
	}
	tickCtx, cancel := context.WithTimeout(ctx, m.w.cfg.LeaseTimeout/3)
	defer cancel()
	renewed, err := m.w.deps.Machine.RenewLeases(tickCtx, leases, m.w.leaseWindow())
	if err != nil {
		if ctx.Err() == nil {
			m.w.log.Warn("renew heartbeats", "err", err)
		}
		return
	}
	ok := map[store.Lease]bool{}
	for _, l := range renewed {
		ok[l] = true
	}
	lost := false
	for _, r := range runners {
		if !ok[store.Lease{ChatID: r.chatID, RunnerID: r.runnerID}] {
			r.log.Info("lease lost; stopping runner")
			r.stop()
			lost = true
		}
	}
	if lost {
		// The write that took the chat may have published nothing (a
		// COMMIT reported failed that committed all the same) and left it
		// runnable without an owner: look now, not at the next timed pass.
		m.w.wakeAcquire()
	}
}
