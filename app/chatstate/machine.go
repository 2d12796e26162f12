package chatstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/store"
)

// Defaults for Config's zero values.
const (
	DefaultRequiresActionTimeout = 5 * time.Minute
	DefaultQueueLimit            = 20
)

// Publisher is the part of pubsub the machine needs.
type Publisher interface {
	Publish(ctx context.Context, channel string, payload []byte) error
}

// Config tunes the machine. Zero values take the Default constants.
type Config struct {
	// RequiresActionTimeout is how long a dynamic tool call may wait for its
	// result (requires_action_deadline_at = now + this).
	RequiresActionTimeout time.Duration
	// QueueLimit caps a chat's queued messages.
	QueueLimit int
	// Clock is the time source; clock.Real when nil.
	Clock clock.Clock
	// Log receives publish failures; slog.Default when nil.
	Log *slog.Logger
	// LeaseTimeout, when set (several replicas), makes an owned chat count
	// as unowned for chat:ownership once its runner's heartbeat row is older
	// than this. Without it only worker_id decides (one process: a stale
	// owner can only come from a restart, which the acquisition loop's
	// startup pass handles).
	LeaseTimeout time.Duration
	// OnOutbox, when set, hears after commit of every bundle that wrote
	// webhook deliveries, so this replica's deliverer sends them at once.
	OnOutbox func()
	// OnStorageFull, when set, hears of every bundle refused because the
	// database's storage is full (store.ErrStorageFull), so health can
	// report writes the worker makes too, not only the API's.
	OnStorageFull func(error)
}

// Machine applies transitions in transactions and publishes notifications
// after they commit.
type Machine struct {
	store store.Store
	pub   Publisher
	cfg   Config
	admit atomic.Pointer[Admitter]
}

// Admitter acquires a chat for this replica's worker inside the bundle
// that left it runnable without a live owner, at the end of Do, so its turn
// needs no acquisition transaction of its own (the worker implements it).
// Admit applies the acquisition's transitions through t, or admits nothing
// (a zero Admission) and leaves the chat to the acquisition loop, which
// the chat:ownership notification wakes as before.
type Admitter interface {
	Admit(t *Tx, c store.Chat) (Admission, error)
}

// Admission is an admitted chat's follow-up: exactly one of its functions
// runs, once the bundle has committed or once it has not.
type Admission struct {
	Committed, RolledBack func()
}

// SetAdmitter makes a the Machine's Admitter (nil: none).
func (m *Machine) SetAdmitter(a Admitter) {
	if a == nil {
		m.admit.Store(nil)
		return
	}
	m.admit.Store(&a)
}

// New returns a Machine over s that publishes on pub.
func New(s store.Store, pub Publisher, cfg Config) *Machine {
	if cfg.RequiresActionTimeout == 0 {
		cfg.RequiresActionTimeout = DefaultRequiresActionTimeout
	}
	if cfg.QueueLimit == 0 {
		cfg.QueueLimit = DefaultQueueLimit
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Machine{store: s, pub: pub, cfg: cfg}
}

// Tx is one transition bundle: every transition applied through it commits
// or rolls back together. The first touch of a chat locks its row and bumps
// its snapshot_version, once per transaction, before any mutation.
type Tx struct {
	ctx     context.Context
	m       *Machine
	tx      store.Tx
	now     time.Time
	touched []uuid.UUID
	// heldSlot marks the touched chats that held a slot when the bundle
	// first locked them (HoldsSlot): one that no longer does after it, or
	// is deleted, frees its slot for a chat waiting for one.
	heldSlot map[uuid.UUID]bool
	// titled lists chats whose title a write changed (WriteTitle), or
	// whose pin (UpdateMetadata): only their owner's watch channel is
	// told, after commit.
	titled []uuid.UUID
	// deleted holds the last row of every chat Delete removed, for its
	// notification.
	deleted map[uuid.UUID]store.Chat
	// inserted logs every message the bundle appended to history, so a
	// transition's Result can report its own.
	inserted []store.Message
	// hookContext marks the inserted messages that are lifecycle hook
	// context of a prompt: they are not user turns (Result.Promoted).
	hookContext map[int64]bool
	// outbox marks a bundle that wrote webhook deliveries (webhooks.go).
	outbox bool
	// queuedAt is the queue row's created_at of each message the bundle
	// promoted from the queue, by message id (the worker's queue_wait).
	queuedAt map[int64]time.Time
	// slotReleased lists the chats whose slot a question released
	// (AskElicitation): announced on chat:ownership after commit.
	slotReleased []store.Chat
}

// Do runs fn as one transaction and, once it has committed, publishes
// chat:update (and chat:watch:{owner}) for every chat it touched and
// chat:ownership for those left runnable and unowned and for those that
// gave up a slot of the concurrent agent limiter (HoldsSlot before, not
// after: a finished, failed, interrupted or deleted turn, one that waits
// in requires_action, a release), so every replica's acquisition loop
// starts a chat waiting for the slot at once. A rejected transition or any
// error rolls back everything and publishes nothing.
func (m *Machine) Do(ctx context.Context, fn func(t *Tx) error) error {
	var (
		final    []notice
		outbox   bool
		admitted []Admission
		admitter Admitter
	)
	if a := m.admit.Load(); a != nil {
		admitter = *a
	}
	// An admission is answered exactly once: committed below, or rolled
	// back here (an error, a panic, or the goroutine ending in fn).
	committed := false
	defer func() {
		if !committed {
			rollBack(admitted)
		}
	}()
	err := m.store.InTx(ctx, func(stx store.Tx) error {
		rollBack(admitted) // a store that runs fn again starts over
		admitted = nil
		t := &Tx{ctx: ctx, m: m, tx: stx, now: m.cfg.Clock.Now().UTC(), deleted: map[uuid.UUID]store.Chat{}, heldSlot: map[uuid.UUID]bool{}}
		if err := fn(t); err != nil {
			return err
		}
		outbox = t.outbox
		final = final[:0]
		for _, c := range t.slotReleased {
			final = append(final, notice{chat: c, slotFreed: true, ownershipOnly: true})
		}
		for _, id := range t.touched {
			if last, ok := t.deleted[id]; ok {
				final = append(final, notice{chat: last, deleted: true, slotFreed: t.heldSlot[id]})
				continue
			}
			c, err := stx.ChatGet(ctx, id)
			if err != nil {
				return fmt.Errorf("read chat %s after transition: %w", id, err)
			}
			orphan, err := m.needsOwner(ctx, stx, c, t.now)
			if err != nil {
				return err
			}
			if orphan && admitter != nil {
				a, err := admitter.Admit(t, c)
				if a.Committed != nil {
					admitted = append(admitted, a)
				}
				if err != nil {
					return fmt.Errorf("admit chat %s: %w", id, err)
				}
				if a.Committed != nil {
					if c, err = stx.ChatGet(ctx, id); err != nil {
						return fmt.Errorf("read chat %s after admission: %w", id, err)
					}
					orphan = false
				}
			}
			freed := t.heldSlot[id] && !HoldsSlot(c.Status, c.WorkerID)
			final = append(final, notice{chat: c, needsOwner: orphan, slotFreed: freed})
		}
		for _, id := range t.titled {
			if slices.Contains(t.touched, id) {
				continue // its chat:update notice reaches the watch too
			}
			c, err := stx.ChatGet(ctx, id)
			if err != nil {
				return fmt.Errorf("read chat %s after title write: %w", id, err)
			}
			final = append(final, notice{chat: c, watchOnly: true})
		}
		return nil
	})
	if err != nil {
		if m.cfg.OnStorageFull != nil && errors.Is(err, store.ErrStorageFull) {
			m.cfg.OnStorageFull(err)
		}
		return err
	}
	committed = true
	for _, a := range admitted {
		a.Committed()
	}
	for _, n := range final {
		m.publish(ctx, n)
	}
	if outbox && m.cfg.OnOutbox != nil {
		m.cfg.OnOutbox()
	}
	return nil
}

func rollBack(admitted []Admission) {
	for _, a := range admitted {
		a.RolledBack()
	}
}

// notice is what Do publishes for one chat after commit.
type notice struct {
	chat       store.Chat
	needsOwner bool
	slotFreed  bool
	deleted    bool
	watchOnly  bool // a title write: only the owner's watch channel
	// ownershipOnly: only chat:ownership (a question released the slot
	// of a chat the bundle did not touch).
	ownershipOnly bool
}

// needsOwner: the chat is runnable and no live worker owns it (spec:
// "Notification emission rules").
func (m *Machine) needsOwner(ctx context.Context, tx store.Tx, c store.Chat, now time.Time) (bool, error) {
	if RunnableWithoutOwner(c.Status, c.Archived, c.WorkerID, c.RunnerID) {
		return true, nil
	}
	if c.Archived || !isRunnableStatus(c.Status) || m.cfg.LeaseTimeout == 0 {
		return false, nil // not runnable, or owned and leases are in memory
	}
	fresh, err := m.leaseFresh(ctx, tx, c, now)
	if err != nil {
		return false, err
	}
	return !fresh, nil
}

// UpdatePayload is the chat:update:{chat_id} payload: the committed values
// receivers use as a hint.
type UpdatePayload struct {
	ChatID            uuid.UUID        `json:"chat_id"`
	SnapshotVersion   int64            `json:"snapshot_version"`
	WorkerID          *uuid.UUID       `json:"worker_id"`
	RunnerID          *uuid.UUID       `json:"runner_id"`
	HistoryVersion    int64            `json:"history_version"`
	QueueVersion      int64            `json:"queue_version"`
	RetryStateVersion int64            `json:"retry_state_version"`
	GenerationAttempt int64            `json:"generation_attempt"`
	Status            store.ChatStatus `json:"status"`
	Archived          bool             `json:"archived"`
	// Deleted: the chat is gone; the other fields are its last row.
	Deleted bool `json:"deleted,omitempty"`
}

// OwnershipPayload is the chat:ownership payload: the chat needs an owner,
// or (SlotFreed) it gave up a slot of the concurrent agent limiter that a
// chat waiting for one can take. Either way receivers run an acquisition
// pass.
type OwnershipPayload struct {
	ChatID          uuid.UUID `json:"chat_id"`
	SnapshotVersion int64     `json:"snapshot_version"`
	SlotFreed       bool      `json:"slot_freed,omitempty"`
}

// NewUpdatePayload projects a chat row to its notification payload.
func NewUpdatePayload(c store.Chat) UpdatePayload {
	p := UpdatePayload{
		ChatID: c.ID, SnapshotVersion: c.SnapshotVersion, HistoryVersion: c.HistoryVersion,
		QueueVersion: c.QueueVersion, RetryStateVersion: c.RetryStateVersion,
		GenerationAttempt: c.GenerationAttempt, Status: c.Status, Archived: c.Archived,
	}
	if c.WorkerID.Valid {
		p.WorkerID = &c.WorkerID.UUID
	}
	if c.RunnerID.Valid {
		p.RunnerID = &c.RunnerID.UUID
	}
	return p
}

func (m *Machine) publish(ctx context.Context, n notice) {
	// Notifications are best-effort hints: a failure is logged, never
	// returned, because the transaction has already committed.
	ctx = context.WithoutCancel(ctx)
	c := n.chat
	if n.ownershipOnly {
		m.publishOwnership(ctx, c, n.slotFreed)
		return
	}
	up := NewUpdatePayload(c)
	up.Deleted = n.deleted
	payload, _ := json.Marshal(up)
	if !n.watchOnly {
		if err := m.pub.Publish(ctx, pubsub.ChannelUpdate(c.ID.String()), payload); err != nil {
			m.cfg.Log.Warn("publish chat update", "chat_id", c.ID, "err", err)
		}
	}
	if err := m.pub.Publish(ctx, pubsub.ChannelWatch(c.OwnerID.String()), payload); err != nil {
		m.cfg.Log.Warn("publish chat watch", "chat_id", c.ID, "err", err)
	}
	if n.needsOwner || n.slotFreed {
		m.publishOwnership(ctx, c, n.slotFreed)
	}
}

// publishOwnership asks every replica's acquisition loop for a pass: c
// needs an owner, or (slotFreed) gave up its slot.
func (m *Machine) publishOwnership(ctx context.Context, c store.Chat, slotFreed bool) {
	ctx = context.WithoutCancel(ctx)
	payload, _ := json.Marshal(OwnershipPayload{ChatID: c.ID, SnapshotVersion: c.SnapshotVersion, SlotFreed: slotFreed})
	if err := m.pub.Publish(ctx, pubsub.ChannelOwnership, payload); err != nil {
		m.cfg.Log.Warn("publish chat ownership", "chat_id", c.ID, "err", err)
	}
}

func isRunnableStatus(s store.ChatStatus) bool {
	return s == store.ChatStatusRunning || s == store.ChatStatusInterrupting || s == store.ChatStatusRequiresAction
}

// Now is the transaction's clock reading.
func (t *Tx) Now() time.Time { return t.now }

// Context is the context the bundle's statements run with.
func (t *Tx) Context() context.Context { return t.ctx }

// Reader is a read-only view of the underlying store transaction, for
// reads inside a bundle. Every write goes through a Tx method.
func (t *Tx) Reader() store.Reader { return t.tx }

// lock locks and bumps the chat on first touch. A missing chat is state N.
func (t *Tx) lock(id uuid.UUID) (store.Chat, bool, error) {
	if slices.Contains(t.touched, id) {
		c, err := t.tx.ChatGet(t.ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return store.Chat{}, false, nil
		}
		return c, err == nil, err
	}
	c, err := t.tx.ChatLock(t.ctx, id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return store.Chat{}, false, nil
		}
		return store.Chat{}, false, fmt.Errorf("lock chat %s: %w", id, err)
	}
	// The bump writes snapshot_version and nothing else (a store suite
	// case holds the stores to it), so the locked row with the new
	// version is the row as it is now.
	v, err := t.tx.ChatBumpSnapshot(t.ctx, id)
	if err != nil {
		return store.Chat{}, false, fmt.Errorf("bump snapshot of chat %s: %w", id, err)
	}
	t.touched = append(t.touched, id)
	t.heldSlot[id] = HoldsSlot(c.Status, c.WorkerID)
	c.SnapshotVersion = v
	return c, true, nil
}

// LockState locks the chat and bumps its snapshot_version (once per
// transaction, on first touch), then classifies it. Use Peek to classify
// without either.
func (t *Tx) LockState(id uuid.UUID) (store.Chat, State, error) {
	c, exists, err := t.lock(id)
	if err != nil || !exists {
		return c, StateN, err
	}
	st, err := t.classify(c)
	return c, st, err
}

// Peek classifies a chat without locking it or bumping its snapshot, for
// callers that only change metadata.
func (t *Tx) Peek(id uuid.UUID) (store.Chat, State, error) {
	c, err := t.tx.ChatGet(t.ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.Chat{}, StateN, nil
	}
	if err != nil {
		return store.Chat{}, "", err
	}
	st, err := t.classify(c)
	return c, st, err
}

func (t *Tx) classify(c store.Chat) (State, error) {
	n, err := t.tx.QueueCount(t.ctx, c.ID)
	if err != nil {
		return "", fmt.Errorf("count queue of chat %s: %w", c.ID, err)
	}
	return Classify(true, c.Status, c.Archived, n > 0), nil
}

// step is one transition in progress: where it started and what it may reach.
type step struct {
	t    *Tx
	tr   Transition
	id   uuid.UUID
	chat store.Chat // as it was when the step began (zero for Create)
	from State
	outs []State
	// owners is where an ownership transition may leave the owner (nil
	// for execution-state transitions).
	owners []Ownership
	// mark is where this transition's messages start in t.inserted.
	mark int
}

// begin guards every transition: it locks the chat, classifies it and
// rejects the transition when its diagram does not allow it from there.
// Ownership transitions (Acquire, Abandon) are checked against the
// ownership diagram and keep the execution state; a missing chat has no
// owner to change.
func (t *Tx) begin(id uuid.UUID, tr Transition) (*step, error) {
	c, from, err := t.LockState(id)
	if err != nil {
		return nil, err
	}
	s := &step{t: t, tr: tr, id: id, chat: c, from: from, mark: len(t.inserted)}
	if isOwnershipTransition(tr) {
		owners, ok := ownershipMatrix[OwnershipOf(c)][tr]
		switch {
		case from == StateN:
			return nil, &TransitionError{Transition: tr, From: from}
		case !ok:
			reason := "the chat is owned"
			if OwnershipOf(c) == OwnershipU {
				reason = "the chat is not owned"
			}
			return nil, &TransitionError{Transition: tr, From: from, Reason: reason}
		}
		s.outs, s.owners = []State{from}, owners
		return s, nil
	}
	outs, ok := Allowed(from, tr)
	if !ok {
		return nil, &TransitionError{Transition: tr, From: from}
	}
	s.outs = outs
	return s, nil
}

// end re-classifies the chat and checks that it landed where the diagram
// says this transition may land. A mismatch is a bug in this package; it
// rolls the transaction back rather than commit a state the diagram
// forbids. The result reports the chat as it landed and the messages the
// transition appended.
func (s *step) end() (Result, error) {
	c, err := s.t.tx.ChatGet(s.t.ctx, s.id)
	if err != nil {
		return Result{}, fmt.Errorf("read chat %s after %s: %w", s.id, s.tr, err)
	}
	to, err := s.t.classify(c)
	if err != nil {
		return Result{}, err
	}
	if !slices.Contains(s.outs, to) {
		return Result{}, fmt.Errorf("chatstate bug: %s from %s landed in %s, allowed %v", s.tr, s.from, to, s.outs)
	}
	if s.owners != nil && !slices.Contains(s.owners, OwnershipOf(c)) {
		return Result{}, fmt.Errorf("chatstate bug: %s from %s left the chat %s, allowed %v", s.tr, OwnershipOf(s.chat), OwnershipOf(c), s.owners)
	}
	return s.result(Result{Chat: c, State: to}), nil
}

// result completes r with the messages appended since the step began,
// including those of transitions the step applied after it ended (an
// interruption finished in the same bundle).
func (s *step) result(r Result) Result {
	r.Messages = slices.Clone(s.t.inserted[s.mark:])
	r.Promoted = nil
	for _, m := range r.Messages {
		if m.Role == store.RoleUser && m.Visibility != store.VisibilityModel && !s.t.hookContext[m.ID] {
			r.Promoted = append(r.Promoted, m)
		}
		if at, ok := s.t.queuedAt[m.ID]; ok {
			r.PromotedQueuedAt = &at
		}
	}
	return r
}

// then is the result of a step that, having ended, applied next in the
// same bundle: the chat and state are next's, the messages are both.
func (s *step) then(r, next Result) Result {
	r.Chat, r.State = next.Chat, next.State
	return s.result(r)
}

// update writes a chat patch, stamping updated_at.
func (t *Tx) update(id uuid.UUID, p store.ChatPatch) error {
	p.UpdatedAt = store.Some(t.now)
	_, err := t.tx.ChatUpdate(t.ctx, id, p)
	if err != nil {
		return fmt.Errorf("update chat %s: %w", id, err)
	}
	return nil
}
