package worker

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/store"
)

// event is what the runner loop processes (spec: "Event shape").
type event struct {
	WorkerID          uuid.NullUUID
	RunnerID          uuid.NullUUID
	SnapshotVersion   int64
	HistoryVersion    int64
	GenerationAttempt int64
	Archived          bool
	Status            store.ChatStatus
}

func eventFromChat(c store.Chat) event {
	return event{
		WorkerID: c.WorkerID, RunnerID: c.RunnerID, SnapshotVersion: c.SnapshotVersion,
		HistoryVersion: c.HistoryVersion, GenerationAttempt: c.GenerationAttempt,
		Archived: c.Archived, Status: c.Status,
	}
}

func eventFromPayload(p chatstate.UpdatePayload) event {
	ev := event{
		SnapshotVersion: p.SnapshotVersion, HistoryVersion: p.HistoryVersion,
		GenerationAttempt: p.GenerationAttempt, Archived: p.Archived, Status: p.Status,
	}
	if p.WorkerID != nil {
		ev.WorkerID = uuid.NullUUID{UUID: *p.WorkerID, Valid: true}
	}
	if p.RunnerID != nil {
		ev.RunnerID = uuid.NullUUID{UUID: *p.RunnerID, Valid: true}
	}
	return ev
}

// task is one goroutine a runner spawned.
type task struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (t *task) finished() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// runner drives one chat (spec: "Chat runner"). Its loop performs no side
// effects itself: it only decides which goroutine should be running.
type runner struct {
	w        *Worker
	chatID   uuid.UUID
	runnerID uuid.UUID
	// log carries chat_id and runner_id on every line about this chat.
	log *slog.Logger
	// kind is the chat_kind label (root or subagent); turns its turns.
	kind  string
	turns *turns

	mu      sync.Mutex
	pending *event        // the newest unprocessed event (events coalesce)
	wake    chan struct{} // buffered to one
	cancel  context.CancelFunc
	// reserved is the generation attempt the acquisition recorded for the
	// first model call (reservesAttempt); taken once (takeReserved).
	reserved attemptReservation

	// Loop state, touched only by the loop goroutine.
	last   event
	seen   bool
	active *task
	tasks  []*task
	// slot: the chat was admitted against the concurrent agent limit and
	// has not waited on a person since (requires_action holds no slot).
	slot bool
	// parked: the last event the loop processed left the chat, still this
	// runner's, waiting on a person (requires_action); Drain lets it be.
	parked atomic.Bool
	wg     sync.WaitGroup
}

func newRunner(w *Worker, c store.Chat, runnerID uuid.UUID) *runner {
	r := &runner{
		w: w, chatID: c.ID, runnerID: runnerID, wake: make(chan struct{}, 1), slot: true,
		log: w.log.With("chat_id", c.ID, "runner_id", runnerID), kind: chatKind(c),
	}
	r.turns = &turns{r: r}
	return r
}

// attemptReservation is a generation attempt recorded for a model call
// that has not started yet; attempt 0 is none.
type attemptReservation struct{ historyVersion, attempt int64 }

// takeReserved hands out the reserved attempt if it belongs to this
// history version, and drops the reservation either way: it serves the
// runner's first model call only, so no two calls share an attempt.
func (r *runner) takeReserved(historyVersion int64) (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := r.reserved
	r.reserved = attemptReservation{}
	return res.attempt, res.attempt > 0 && res.historyVersion == historyVersion
}

// notify hands the loop an event; an older pending event is superseded, so
// a slow loop never blocks publishers.
func (r *runner) notify(ev event) {
	r.mu.Lock()
	if r.pending == nil || ev.SnapshotVersion > r.pending.SnapshotVersion {
		r.pending = &ev
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// stop cancels the runner (cleanup); it does not wait.
func (r *runner) stop() {
	r.mu.Lock()
	cancel := r.cancel
	r.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// run subscribes to chat:update first and then processes first, so no
// update between the two is missed. It returns after cleanup: every
// goroutine cancelled and finished, the subscription gone.
func (r *runner) run(parent context.Context, first event) {
	ctx, cancel := context.WithCancel(parent)
	r.mu.Lock()
	r.cancel = cancel
	r.mu.Unlock()
	defer cancel()

	unsubscribe, err := r.w.deps.Pubsub.Subscribe(ctx, pubsub.ChannelUpdate(r.chatID.String()), func(payload []byte) {
		var p chatstate.UpdatePayload
		if json.Unmarshal(payload, &p) == nil {
			r.notify(eventFromPayload(p))
		}
	})
	if err != nil {
		r.log.Warn("subscribe to chat updates; the sync loop still drives the runner", "err", err)
		unsubscribe = func() {}
	}
	defer unsubscribe()

	// Subscribed: now read the chat, so an update committed between
	// Acquire and the subscription is not missed.
	r.notify(first)
	err = r.w.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
		c, err := tx.ChatGet(ctx, r.chatID)
		if err == nil {
			r.notify(eventFromChat(c))
		}
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return // deleted meanwhile
	}
	for {
		select {
		case <-ctx.Done():
			for _, t := range r.tasks {
				t.cancel()
			}
			r.wg.Wait()
			r.turns.exit()
			return
		case <-r.wake:
		}
		r.mu.Lock()
		ev := r.pending
		r.pending = nil
		r.mu.Unlock()
		if ev != nil {
			r.process(ctx, *ev)
		}
	}
}

// process is one loop iteration (spec: "Event processing", rules 1-10).
func (r *runner) process(ctx context.Context, ev event) {
	// 1. Stale or duplicate.
	if r.seen && ev.SnapshotVersion <= r.last.SnapshotVersion {
		return
	}
	prev, seen := r.last, r.seen
	r.last, r.seen = ev, true
	r.park(ev)
	// 2. Not ours any more.
	if ev.WorkerID != (uuid.NullUUID{UUID: r.w.id, Valid: true}) || ev.RunnerID != (uuid.NullUUID{UUID: r.runnerID, Valid: true}) {
		if chatstate.RunnableWithoutOwner(ev.Status, ev.Archived, ev.WorkerID, ev.RunnerID) {
			r.w.wakeAcquire() // left runnable without an owner
		}
		r.stop()
		return
	}
	// 3. Same work as before.
	if seen && ev.HistoryVersion == prev.HistoryVersion && ev.Status == prev.Status {
		return
	}
	// 4. Different work: cancel the active goroutine without waiting.
	if r.active != nil {
		r.active.cancel()
		r.active = nil
	}
	// 5. Forget finished goroutines.
	live := r.tasks[:0]
	for _, t := range r.tasks {
		if !t.finished() {
			live = append(live, t)
		}
	}
	r.tasks = live
	// 6-10.
	switch {
	case ev.Archived:
		r.spawn(ctx, ev, r.abandon)
	case ev.Status == store.ChatStatusRunning && !r.slot:
		// It took no slot while it waited on a person or an operator; it
		// counts again now that it runs. (If resume gives the chat up, this
		// runner is done with it.)
		r.slot = true
		r.spawn(ctx, ev, r.resume)
	case ev.Status == store.ChatStatusRunning:
		r.spawn(ctx, ev, r.generate)
	case ev.Status == store.ChatStatusInterrupting:
		r.spawn(ctx, ev, r.interrupt)
	case ev.Status == store.ChatStatusRequiresAction:
		r.slot = false
		r.spawn(ctx, ev, r.actionTimeout)
	default:
		r.spawn(ctx, ev, r.abandon)
	}
}

// park records whether ev leaves this runner's chat waiting on a person,
// and tells the manager when that changes.
func (r *runner) park(ev event) {
	mine := ev.WorkerID == (uuid.NullUUID{UUID: r.w.id, Valid: true}) && ev.RunnerID == (uuid.NullUUID{UUID: r.runnerID, Valid: true})
	parked := mine && !ev.Archived && ev.Status == store.ChatStatusRequiresAction
	if r.parked.Swap(parked) != parked {
		r.w.manager.signal()
	}
}

// spawn starts fn as the active goroutine. fn holds the in-memory lock of
// its (chat, history_version, status) and retries unexpected errors with
// bounded exponential backoff until it succeeds, is fenced out, or is
// cancelled.
func (r *runner) spawn(parent context.Context, ev event, fn func(context.Context, event) error) {
	ctx, cancel := context.WithCancel(parent)
	hold := &turnHold{}
	ctx = withTurnHold(ctx, hold)
	t := &task{cancel: cancel, done: make(chan struct{})}
	r.active = t
	r.tasks = append(r.tasks, t)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(t.done)
		defer cancel()
		defer r.turns.release(hold)
		unlock, err := r.w.locks.lock(ctx, lockKey{r.chatID, ev.HistoryVersion, ev.Status})
		if err != nil {
			return
		}
		defer unlock()
		for attempt := int64(1); ; attempt++ {
			err := fn(ctx, ev)
			switch {
			case err == nil, errors.Is(err, errStale), errors.Is(err, errDeleted), ctx.Err() != nil:
				return
			}
			r.log.Warn("runner goroutine failed; retrying", "status", ev.Status, "history_version", ev.HistoryVersion, "attempt", attempt, "err", err)
			if sleep(ctx, r.w.clock, r.w.backoff(attempt)) != nil {
				return
			}
		}
	}()
}

type lockKey struct {
	chat    uuid.UUID
	history int64
	status  store.ChatStatus
}

// Fence failures: the goroutine's view of the chat is no longer current.
var (
	errStale   = errors.New("stale: the chat moved on")
	errDeleted = errors.New("the chat was deleted")
)

// fence describes what a goroutine expects of the chat when it touches it.
type fence struct {
	ev       event
	anyState bool // abandon only checks ownership
}

func (r *runner) check(c store.Chat, f fence) error {
	if c.WorkerID != (uuid.NullUUID{UUID: r.w.id, Valid: true}) || c.RunnerID != (uuid.NullUUID{UUID: r.runnerID, Valid: true}) {
		return errStale
	}
	if !f.anyState && (c.HistoryVersion != f.ev.HistoryVersion || c.Status != f.ev.Status) {
		return errStale
	}
	return nil
}

// read runs fn on one consistent snapshot after checking the fence.
func (r *runner) read(ctx context.Context, ev event, fn func(tx store.Reader, c store.Chat) error) error {
	return r.w.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
		c, err := tx.ChatGet(ctx, r.chatID)
		if errors.Is(err, store.ErrNotFound) {
			return errDeleted
		}
		if err != nil {
			return err
		}
		if err := r.check(c, fence{ev: ev}); err != nil {
			return err
		}
		return fn(tx, c)
	})
}

// commit applies transitions after locking the chat and checking the
// fence; a mismatch rolls back and reports errStale. The committed row is
// handed to the loop at once (the fast path before pubsub).
func (r *runner) commit(ctx context.Context, f fence, fn func(t *chatstate.Tx) error) error {
	var after store.Chat
	_, st := r.stage(ctx, StageCommit)
	err := r.w.deps.Machine.Do(ctx, func(t *chatstate.Tx) error {
		c, st, err := t.LockState(r.chatID)
		if err != nil {
			return err
		}
		if st == chatstate.StateN {
			return errDeleted
		}
		if err := r.check(c, f); err != nil {
			return err
		}
		if err := fn(t); err != nil {
			return err
		}
		after, err = t.Reader().ChatGet(ctx, r.chatID)
		return err
	})
	if err == nil {
		st.set(attribute.Int64("generation_attempt", after.GenerationAttempt))
	}
	st.end(stepFailure(ctx, err))
	if err == nil {
		r.turnCommitted(ctx, f, after)
		if !chatstate.HoldsSlot(after.Status, after.WorkerID) {
			// The commit gave the slot up (a finished turn, see
			// finishTurnTx; a turn waiting in requires_action): a chat
			// waiting for one can start. The bundle announced it on
			// chat:ownership for every replica; this replica need not
			// wait for the notice to come back.
			r.w.wakeAcquire()
		}
		r.notify(eventFromChat(after))
	}
	return err
}

// abandon gives the chat up (spec: "Abandon chat goroutine").
func (r *runner) abandon(ctx context.Context, ev event) error {
	err := r.commit(ctx, fence{ev: ev, anyState: true}, func(t *chatstate.Tx) error {
		_, err := t.Abandon(r.chatID)
		return err
	})
	if err == nil {
		// The chat may have become runnable again (an edit or a new message
		// raced the abandon): look for work now rather than at the next
		// timer, in case the ownership notification is lost.
		r.w.wakeAcquire()
	}
	return err
}

// resume readmits a chat that left requires_action against the concurrent
// agent limit, then generates. Over the limit it gives the chat up: it waits
// unowned, like any runnable chat, until an acquisition pass admits it (so
// answering a pending call cannot take a user past the limit).
func (r *runner) resume(ctx context.Context, ev event) error {
	admitted := true
	var after store.Chat
	err := r.w.deps.Machine.Do(ctx, func(t *chatstate.Tx) error {
		// The admission lock first, then the chat, as tryAcquire takes them.
		if err := t.LockAdmission(); err != nil {
			return err
		}
		c, st, err := t.LockState(r.chatID)
		if err != nil {
			return err
		}
		if st == chatstate.StateN {
			return errDeleted
		}
		if err := r.check(c, fence{ev: ev}); err != nil {
			return err
		}
		roots, subagents, err := t.Reader().ChatCountOwned(ctx, r.w.acquireParams())
		if err != nil {
			return err
		}
		// The chat itself is among the counted ones now.
		if c.ParentChatID.Valid {
			subagents--
		} else {
			roots--
		}
		if r.w.hasRoom(c, roots, subagents) {
			return nil
		}
		admitted = false
		res, err := t.Abandon(r.chatID)
		after = res.Chat
		return err
	})
	if err != nil {
		return err
	}
	if !admitted {
		r.log.Debug("resumed chat waits for capacity")
		r.notify(eventFromChat(after))
		r.w.wakeAcquire()
		return nil
	}
	return r.generate(ctx, ev)
}

// actionTimeout waits for the dynamic-tool deadline, then cancels the
// pending action (spec: "Dynamic tools timeout goroutine").
func (r *runner) actionTimeout(ctx context.Context, ev event) error {
	var deadline *store.Chat
	err := r.read(ctx, ev, func(tx store.Reader, c store.Chat) error {
		deadline = &c
		return nil
	})
	if err != nil {
		return err
	}
	d := deadline.RequiresActionDeadlineAt
	if d == nil {
		// No deadline: the chat waits for an operator's review of tool
		// calls with unknown effects; nothing may cancel them.
		<-ctx.Done()
		return ctx.Err()
	}
	if err := sleep(ctx, r.w.clock, d.Sub(r.w.clock.Now())); err != nil {
		return err
	}
	return r.commit(ctx, fence{ev: ev}, func(t *chatstate.Tx) error {
		_, err := t.CancelRequiresAction(r.chatID)
		return err
	})
}

// stepLog is the runner's logger for one step of a turn: the history
// version it works on and, when the turn has one, its durable request.
func (r *runner) stepLog(ev event, request uuid.NullUUID) *slog.Logger {
	if request.Valid {
		return r.log.With("history_version", ev.HistoryVersion, "request_id", request.UUID)
	}
	return r.log.With("history_version", ev.HistoryVersion)
}

// turnCommitted records the outcome of a generation step's committed
// transition that ends its turn: finished in error, or stopped to wait
// (requires_action or waiting, completed). A FinishTurn that promotes a
// queued prompt keeps the chat running; finishTurn records that one.
func (r *runner) turnCommitted(ctx context.Context, f fence, after store.Chat) {
	if f.ev.Status != store.ChatStatusRunning || f.anyState {
		return
	}
	switch after.Status {
	case store.ChatStatusError:
		r.turns.fail(ctx, chatFailure(after))
	case store.ChatStatusWaiting, store.ChatStatusRequiresAction:
		r.turns.finish(ctx, OutcomeCompleted)
	}
}
