package chatstate

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// Cancellation reasons written into synthetic tool results.
const (
	reasonInterrupted   = "interrupted by the user"
	reasonNewMessage    = "a new user message arrived"
	reasonActionTimeout = "no result was submitted before the deadline"
	reasonReconciled    = "the chat was reconciled from an invalid state"
)

// UserInput is a user turn: the content of a message or queued message.
type UserInput struct {
	Content         []sdk.ChatMessagePart
	CreatedBy       uuid.NullUUID
	ModelConfigID   uuid.NullUUID
	ReasoningEffort string
	// RequestID links a durable request's claim to its message.
	RequestID uuid.NullUUID
}

func (in UserInput) encode(field string) (json.RawMessage, error) {
	if len(in.Content) == 0 {
		return nil, invalid(field, "content must have at least one part")
	}
	return EncodeParts(in.Content)
}

// --- shared mutations ---

// insertUser answers outstanding tool calls and appends a user message.
func (t *Tx) insertUser(chatID uuid.UUID, content json.RawMessage, in UserInput, queuedID *int64) (store.Message, error) {
	if err := t.answerOutstanding(chatID, reasonNewMessage); err != nil {
		return store.Message{}, err
	}
	m, err := t.tx.MessageInsert(t.ctx, store.MessageInsertParams{
		ChatID: chatID, Role: store.RoleUser, Content: content, QueuedMessageID: queuedID,
		CreatedBy: in.CreatedBy, ModelConfigID: in.ModelConfigID, ReasoningEffort: in.ReasoningEffort,
		RequestID: in.RequestID, Now: t.now,
	})
	if err != nil {
		return store.Message{}, fmt.Errorf("insert user message: %w", err)
	}
	if in.ModelConfigID.Valid || in.ReasoningEffort != "" {
		p := store.ChatPatch{}
		if in.ModelConfigID.Valid {
			p.LastModelConfigID = store.Some(in.ModelConfigID)
		}
		if in.ReasoningEffort != "" {
			p.LastReasoningEffort = store.Some(in.ReasoningEffort)
		}
		if err := t.update(chatID, p); err != nil {
			return store.Message{}, err
		}
	}
	return m, nil
}

// enqueue appends to the queue, enforcing the queue limit.
func (t *Tx) enqueue(chatID uuid.UUID, content json.RawMessage, in UserInput) (store.QueuedMessage, error) {
	n, err := t.tx.QueueCount(t.ctx, chatID)
	if err != nil {
		return store.QueuedMessage{}, err
	}
	if n >= int64(t.m.cfg.QueueLimit) {
		return store.QueuedMessage{}, fmt.Errorf("%w: %d of %d queued messages", ErrQueueFull, n, t.m.cfg.QueueLimit)
	}
	q, err := t.tx.QueueInsert(t.ctx, store.QueueInsertParams{
		ChatID: chatID, CreatedBy: in.CreatedBy, Content: content, ModelConfigID: in.ModelConfigID,
		ReasoningEffort: in.ReasoningEffort, RequestID: in.RequestID, Now: t.now,
	})
	if err != nil {
		return store.QueuedMessage{}, fmt.Errorf("queue message: %w", err)
	}
	return q, nil
}

// promoteHead moves the queue head into history. The queue row's id goes
// into queued_message_id, and deleting it must remove exactly one row.
func (t *Tx) promoteHead(chatID uuid.UUID) (store.Message, error) {
	queue, err := t.tx.QueueList(t.ctx, chatID)
	if err != nil {
		return store.Message{}, err
	}
	if len(queue) == 0 {
		return store.Message{}, errors.New("chatstate bug: promote from an empty queue")
	}
	head := queue[0]
	n, err := t.tx.QueueDelete(t.ctx, chatID, head.ID)
	if err != nil {
		return store.Message{}, err
	}
	if n != 1 {
		return store.Message{}, fmt.Errorf("promote queued message %d: deleted %d rows, want 1", head.ID, n)
	}
	m, err := t.insertUser(chatID, head.Content, UserInput{
		CreatedBy: head.CreatedBy, ModelConfigID: head.ModelConfigID, ReasoningEffort: head.ReasoningEffort,
		RequestID: head.RequestID,
	}, &head.ID)
	if err != nil {
		return m, err
	}
	return m, t.requestPromoted(m)
}

// moveToHead makes qid the queue head.
func (t *Tx) moveToHead(chatID uuid.UUID, qid int64) error {
	queue, err := t.tx.QueueList(t.ctx, chatID)
	if err != nil {
		return err
	}
	if len(queue) == 0 || queue[0].ID == qid {
		return nil
	}
	return t.tx.QueueSetPosition(t.ctx, chatID, qid, queue[0].Position-1)
}

// leaveAction closes a pending dynamic-tool action with synthetic results.
func (t *Tx) leaveAction(chatID uuid.UUID, reason string) error {
	if err := t.answerOutstanding(chatID, reason); err != nil {
		return err
	}
	return t.update(chatID, store.ChatPatch{RequiresActionDeadlineAt: store.Some[*time.Time](nil)})
}

func isAction(s State) bool { return s == StateA0 || s == StateA1 }
func isError(s State) bool  { return s == StateE0 || s == StateE1 }
func isInterrupting(s State) bool {
	return s == StateI0 || s == StateI1
}

// running is the patch of every transition that lands in running from
// elsewhere: errors are left behind and the one-shot compaction marker is
// dropped unless the caller carries it.
func running() store.ChatPatch {
	return store.ChatPatch{
		Status:                store.Some(store.ChatStatusRunning),
		LastError:             store.Some[json.RawMessage](nil),
		CompactionRequestedAt: store.Some[*time.Time](nil),
	}
}

// --- HTTP transitions ---

// CreateParams create a chat.
type CreateParams struct {
	ID           uuid.UUID
	OwnerID      uuid.UUID
	ParentChatID uuid.NullUUID
	Title        string
	TitleSource  store.TitleSource
	SystemPrompt string
	Labels       map[string]string
	DynamicTools json.RawMessage
	Input        UserInput // empty Content creates the chat in waiting
}

// CreateResult is the created chat and its initial history.
type CreateResult struct {
	Chat     store.Chat
	Messages []store.Message
	State    State
}

// Create applies N -> Create -> R0 (or W with no user message). The chat
// does not exist yet, so there is no row to lock; a child locks its
// family's root FOR SHARE and fails when the root is archived.
func (t *Tx) Create(p CreateParams) (CreateResult, error) {
	if p.ID == uuid.Nil {
		p.ID = uuid.New()
	}
	var root uuid.NullUUID
	if p.ParentChatID.Valid {
		parent, err := t.tx.ChatGet(t.ctx, p.ParentChatID.UUID)
		if err != nil {
			return CreateResult{}, fmt.Errorf("parent chat %s: %w", p.ParentChatID.UUID, err)
		}
		root = uuid.NullUUID{UUID: parent.Root(), Valid: true}
		rc, err := t.tx.ChatLockShared(t.ctx, root.UUID)
		if err != nil {
			return CreateResult{}, fmt.Errorf("lock root chat %s: %w", root.UUID, err)
		}
		if rc.Archived {
			rootState, err := t.classify(rc)
			if err != nil {
				return CreateResult{}, err
			}
			cause := ErrChatArchived
			if rootState == StateInvalid {
				cause = ErrInvalidState
			}
			return CreateResult{}, &TransitionError{Transition: Create, From: StateN, Cause: cause,
				Reason: "the family's root chat is archived"}
		}
	}
	status := store.ChatStatusWaiting
	var content json.RawMessage
	if len(p.Input.Content) > 0 {
		status = store.ChatStatusRunning
		var err error
		if content, err = p.Input.encode("content"); err != nil {
			return CreateResult{}, err
		}
	}
	source := p.TitleSource
	if source == "" {
		source = store.TitleSourceFallback
	}
	c, err := t.tx.ChatInsert(t.ctx, store.ChatInsertParams{
		ID: p.ID, OwnerID: p.OwnerID, ParentChatID: p.ParentChatID, RootChatID: root,
		Title: p.Title, TitleSource: source, Status: status, Labels: p.Labels,
		LastModelConfigID: p.Input.ModelConfigID, LastReasoningEffort: p.Input.ReasoningEffort,
		DynamicTools: p.DynamicTools, Now: t.now,
	})
	if err != nil {
		return CreateResult{}, fmt.Errorf("insert chat: %w", err)
	}
	t.touched = append(t.touched, c.ID)
	var msgs []store.Message
	if p.SystemPrompt != "" {
		sys, _ := EncodeParts([]sdk.ChatMessagePart{{Type: sdk.PartText, Text: p.SystemPrompt}})
		m, err := t.tx.MessageInsert(t.ctx, store.MessageInsertParams{
			ChatID: c.ID, Role: store.RoleSystem, Content: sys, Visibility: store.VisibilityModel, Now: t.now,
		})
		if err != nil {
			return CreateResult{}, fmt.Errorf("insert system prompt: %w", err)
		}
		msgs = append(msgs, m)
	}
	if content != nil {
		m, err := t.tx.MessageInsert(t.ctx, store.MessageInsertParams{
			ChatID: c.ID, Role: store.RoleUser, Content: content, CreatedBy: p.Input.CreatedBy,
			ModelConfigID: p.Input.ModelConfigID, ReasoningEffort: p.Input.ReasoningEffort,
			RequestID: p.Input.RequestID, Now: t.now,
		})
		if err != nil {
			return CreateResult{}, fmt.Errorf("insert first message: %w", err)
		}
		msgs = append(msgs, m)
	}
	if len(msgs) == 0 {
		// Create's snapshot is the chat's first history version even when
		// it inserts no message.
		if _, err := t.tx.ChatTouchHistory(t.ctx, c.ID); err != nil {
			return CreateResult{}, err
		}
	}
	s := &step{t: t, tr: Create, chat: c, from: StateN, outs: Matrix[StateN][Create]}
	to, err := s.end()
	if err != nil {
		return CreateResult{}, err
	}
	c, err = t.tx.ChatGet(t.ctx, c.ID)
	return CreateResult{Chat: c, Messages: msgs, State: to}, err
}

// SetArchived archives or unarchives one chat (not its family; see
// SetArchivedFamily). Unarchiving a child is refused while its parent is
// archived.
func (t *Tx) SetArchived(chatID uuid.UUID, archived bool) (State, error) {
	tr := SetArchivedFalse
	if archived {
		tr = SetArchivedTrue
	}
	s, err := t.begin(chatID, tr)
	if err != nil {
		return "", err
	}
	if !archived && s.chat.ParentChatID.Valid {
		parent, err := t.tx.ChatGet(t.ctx, s.chat.ParentChatID.UUID)
		if err != nil {
			return "", fmt.Errorf("parent chat %s: %w", s.chat.ParentChatID.UUID, err)
		}
		if parent.Archived {
			return "", &TransitionError{Transition: tr, From: s.from, Reason: "its parent chat is archived"}
		}
	}
	if err := t.update(chatID, store.ChatPatch{Archived: store.Some(archived)}); err != nil {
		return "", err
	}
	return s.end()
}

// SetArchivedFamily applies SetArchived to a root chat and all its
// descendants atomically: the root's row is locked first (child creation
// takes a shared lock on it), then each descendant. Any member that cannot
// take the transition fails the whole operation. For a non-root chat it is
// SetArchived on that chat alone.
func (t *Tx) SetArchivedFamily(chatID uuid.UUID, archived bool) error {
	c, st, err := t.State(chatID)
	if err != nil {
		return err
	}
	if st == StateN || c.RootChatID.Valid {
		_, err := t.SetArchived(chatID, archived)
		return err
	}
	family, err := t.tx.ChatDescendants(t.ctx, chatID)
	if err != nil {
		return fmt.Errorf("list family of chat %s: %w", chatID, err)
	}
	// Parents go before their children, so an unarchived child never sees
	// an archived parent.
	if _, err := t.SetArchived(chatID, archived); err != nil {
		return err
	}
	for _, member := range parentsFirst(chatID, family) {
		if _, err := t.SetArchived(member.ID, archived); err != nil {
			return fmt.Errorf("chat %s in the family of %s: %w", member.ID, chatID, err)
		}
	}
	return nil
}

// parentsFirst orders a family breadth-first from the root.
func parentsFirst(root uuid.UUID, family []store.Chat) []store.Chat {
	children := map[uuid.UUID][]store.Chat{}
	for _, c := range family {
		parent := root
		if c.ParentChatID.Valid {
			parent = c.ParentChatID.UUID
		}
		children[parent] = append(children[parent], c)
	}
	out := make([]store.Chat, 0, len(family))
	for level := []uuid.UUID{root}; len(level) > 0; {
		var next []uuid.UUID
		for _, id := range level {
			for _, c := range children[id] {
				out = append(out, c)
				next = append(next, c.ID)
			}
		}
		level = next
	}
	return out
}

// BusyBehavior says what SendMessage does to a busy chat.
type BusyBehavior string

// Busy behaviours.
const (
	BusyQueue     BusyBehavior = "queue"
	BusyInterrupt BusyBehavior = "interrupt"
)

// SendResult is what SendMessage did.
type SendResult struct {
	// Message is the user message inserted into history, when m was not
	// left queued (including when it was queued and promoted at once).
	Message *store.Message
	// Queued is m's queue row while it stays queued.
	Queued *store.QueuedMessage
	// Promoted lists every message that entered history, in order.
	Promoted []store.Message
	State    State
}

// SendMessage inserts m when the chat is idle or queues it when busy; with
// BusyInterrupt it also interrupts active work or cancels a pending action.
func (t *Tx) SendMessage(chatID uuid.UUID, in UserInput, busy BusyBehavior) (SendResult, error) {
	tr := SendMessageQueue
	switch busy {
	case BusyQueue, "":
	case BusyInterrupt:
		tr = SendMessageInterrupt
	default:
		return SendResult{}, invalid("busy_behavior", "must be %q or %q, got %q", BusyQueue, BusyInterrupt, busy)
	}
	content, err := in.encode("content")
	if err != nil {
		return SendResult{}, err
	}
	s, err := t.begin(chatID, tr)
	if err != nil {
		return SendResult{}, err
	}
	var res SendResult
	switch s.from {
	case StateW, StateE0:
		m, err := t.insertUser(chatID, content, in, nil)
		if err != nil {
			return res, err
		}
		res.Message, res.Promoted = &m, []store.Message{m}
		if err := t.update(chatID, running()); err != nil {
			return res, err
		}
	case StateE1:
		// Append to the tail, promote the head, clear the error. Promoting
		// first keeps the queue length, so a full queue still accepts m.
		m, err := t.promoteHead(chatID)
		if err != nil {
			return res, err
		}
		res.Promoted = []store.Message{m}
		q, err := t.enqueue(chatID, content, in)
		if err != nil {
			return res, err
		}
		res.Queued = &q
		if err := t.update(chatID, running()); err != nil {
			return res, err
		}
	case StateR0, StateR1, StateI0, StateI1:
		q, err := t.enqueue(chatID, content, in)
		if err != nil {
			return res, err
		}
		res.Queued = &q
		if tr == SendMessageInterrupt && !isInterrupting(s.from) {
			if err := t.update(chatID, store.ChatPatch{
				Status: store.Some(store.ChatStatusInterrupting), CompactionRequestedAt: store.Some[*time.Time](nil),
			}); err != nil {
				return res, err
			}
		}
	case StateA0, StateA1:
		q, err := t.enqueue(chatID, content, in)
		if err != nil {
			return res, err
		}
		res.Queued = &q
		if tr == SendMessageInterrupt {
			if err := t.leaveAction(chatID, reasonInterrupted); err != nil {
				return res, err
			}
			if err := t.update(chatID, running()); err != nil {
				return res, err
			}
		}
	}
	if res.State, err = s.end(); err != nil {
		return res, err
	}
	// Nothing is generating on an unowned chat, so no runner would finish
	// the interruption without first taking a capacity slot: finish it now.
	if tr == SendMessageInterrupt && isInterrupting(res.State) && !s.chat.WorkerID.Valid {
		fin, err := t.FinishInterruption(chatID, nil)
		if err != nil {
			return res, err
		}
		res.Promoted = append(res.Promoted, fin.Promoted...)
		res.State = fin.State
	}
	if res.Queued != nil {
		for i := range res.Promoted {
			if p := res.Promoted[i].QueuedMessageID; p != nil && *p == res.Queued.ID {
				res.Message, res.Queued = &res.Promoted[i], nil
				break
			}
		}
	}
	return res, nil
}

// EditResult is what EditMessage did.
type EditResult struct {
	Message    store.Message
	DeletedIDs []int64
	State      State
}

// EditMessage replaces user message k: it clears the queue, drops active
// work and any pending action, soft-deletes the history suffix from k on,
// and inserts the replacement turn.
func (t *Tx) EditMessage(chatID uuid.UUID, messageID int64, in UserInput) (EditResult, error) {
	content, err := in.encode("content")
	if err != nil {
		return EditResult{}, err
	}
	s, err := t.begin(chatID, EditMessage)
	if err != nil {
		return EditResult{}, err
	}
	target, err := t.tx.MessageGet(t.ctx, chatID, messageID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && target.Deleted) {
		return EditResult{}, &notFoundError{what: fmt.Sprintf("message %d", messageID)}
	}
	if err != nil {
		return EditResult{}, err
	}
	if target.Role != store.RoleUser || target.Visibility == store.VisibilityModel {
		return EditResult{}, invalid("message", "only user messages can be edited (message %d is %s)", messageID, target.Role)
	}
	if err := t.settleRequests(chatID, messageID); err != nil {
		return EditResult{}, err
	}
	if _, err := t.tx.QueueDeleteAll(t.ctx, chatID); err != nil {
		return EditResult{}, err
	}
	deleted, err := t.tx.MessageSoftDeleteFrom(t.ctx, chatID, messageID)
	if err != nil {
		return EditResult{}, err
	}
	m, err := t.insertUser(chatID, content, in, nil)
	if err != nil {
		return EditResult{}, err
	}
	p := running()
	p.RequiresActionDeadlineAt = store.Some[*time.Time](nil)
	if err := t.update(chatID, p); err != nil {
		return EditResult{}, err
	}
	to, err := s.end()
	return EditResult{Message: m, DeletedIDs: deleted, State: to}, err
}

// DeleteQueuedMessage removes one queued message.
func (t *Tx) DeleteQueuedMessage(chatID uuid.UUID, qid int64) (State, error) {
	s, err := t.begin(chatID, DeleteQueuedMessage)
	if err != nil {
		return "", err
	}
	q, err := t.tx.QueueGet(t.ctx, chatID, qid)
	if errors.Is(err, store.ErrNotFound) {
		return "", &notFoundError{what: fmt.Sprintf("queued message %d", qid)}
	}
	if err != nil {
		return "", fmt.Errorf("queued message %d: %w", qid, err)
	}
	n, err := t.tx.QueueDelete(t.ctx, chatID, qid)
	if err != nil {
		return "", err
	}
	if n != 1 {
		return "", &notFoundError{what: fmt.Sprintf("queued message %d", qid)}
	}
	if err := t.finishRequest(q.RequestID, Outcome{Status: OutcomeCancelled}); err != nil {
		return "", err
	}
	return s.end()
}

// PromoteResult is what PromoteQueuedMessage did.
type PromoteResult struct {
	// Message is the promoted message when it entered history at once.
	Message *store.Message
	State   State
}

// PromoteQueuedMessage makes qid the next message to process: from E1 and
// A1 it enters history at once; from R1 and I1 it becomes the queue head
// and the chat interrupts, so FinishInterruption promotes it.
func (t *Tx) PromoteQueuedMessage(chatID uuid.UUID, qid int64) (PromoteResult, error) {
	s, err := t.begin(chatID, PromoteQueuedMessage)
	if err != nil {
		return PromoteResult{}, err
	}
	if _, err := t.tx.QueueGet(t.ctx, chatID, qid); errors.Is(err, store.ErrNotFound) {
		return PromoteResult{}, &notFoundError{what: fmt.Sprintf("queued message %d", qid)}
	} else if err != nil {
		return PromoteResult{}, fmt.Errorf("queued message %d: %w", qid, err)
	}
	if err := t.moveToHead(chatID, qid); err != nil {
		return PromoteResult{}, err
	}
	var res PromoteResult
	switch s.from {
	case StateE1, StateA1:
		if s.from == StateA1 {
			if err := t.leaveAction(chatID, reasonNewMessage); err != nil {
				return res, err
			}
		}
		m, err := t.promoteHead(chatID)
		if err != nil {
			return res, err
		}
		res.Message = &m
		if err := t.update(chatID, running()); err != nil {
			return res, err
		}
	case StateR1:
		if err := t.update(chatID, store.ChatPatch{
			Status: store.Some(store.ChatStatusInterrupting), CompactionRequestedAt: store.Some[*time.Time](nil),
		}); err != nil {
			return res, err
		}
	case StateI1:
		// Already interrupting: the new head is promoted when it finishes.
	}
	if res.State, err = s.end(); err != nil {
		return res, err
	}
	if isInterrupting(res.State) && !s.chat.WorkerID.Valid {
		fin, err := t.FinishInterruption(chatID, nil)
		if err != nil {
			return res, err
		}
		if len(fin.Promoted) > 0 {
			res.Message = &fin.Promoted[0]
		}
		res.State = fin.State
	}
	return res, nil
}

// InterruptResult is what Interrupt did.
type InterruptResult struct {
	// Promoted lists messages that entered history when the interruption
	// was finished in the same transaction.
	Promoted []store.Message
	State    State
}

// Interrupt requests cancellation of active generation or closes a pending
// action, preserving the queue. On an unowned chat nothing is generating,
// so the same transaction finishes the interruption; an unowned chat that
// is already interrupting is finished the same way.
func (t *Tx) Interrupt(chatID uuid.UUID) (InterruptResult, error) {
	c, st, err := t.State(chatID)
	if err != nil {
		return InterruptResult{}, err
	}
	if isInterrupting(st) {
		if c.WorkerID.Valid {
			return InterruptResult{}, &TransitionError{Transition: Interrupt, From: st,
				Reason: "its worker is already finishing the interruption"}
		}
		if err := t.answerOutstanding(chatID, reasonInterrupted); err != nil {
			return InterruptResult{}, err
		}
		fin, err := t.FinishInterruption(chatID, nil)
		return InterruptResult{Promoted: fin.Promoted, State: fin.State}, err
	}
	s, err := t.begin(chatID, Interrupt)
	if err != nil {
		return InterruptResult{}, err
	}
	if isAction(s.from) {
		if err := t.leaveAction(chatID, reasonInterrupted); err != nil {
			return InterruptResult{}, err
		}
		if err := t.update(chatID, running()); err != nil {
			return InterruptResult{}, err
		}
	} else if err := t.update(chatID, store.ChatPatch{
		Status: store.Some(store.ChatStatusInterrupting), CompactionRequestedAt: store.Some[*time.Time](nil),
	}); err != nil {
		return InterruptResult{}, err
	}
	to, err := s.end()
	if err != nil {
		return InterruptResult{}, err
	}
	if isInterrupting(to) && !s.chat.WorkerID.Valid {
		if err := t.answerOutstanding(chatID, reasonInterrupted); err != nil {
			return InterruptResult{}, err
		}
		fin, err := t.FinishInterruption(chatID, nil)
		return InterruptResult{Promoted: fin.Promoted, State: fin.State}, err
	}
	return InterruptResult{State: to}, nil
}

// CompleteRequiresAction inserts the submitted results of the pending
// dynamic tool calls and resumes running. Every pending call needs exactly
// one result.
func (t *Tx) CompleteRequiresAction(chatID uuid.UUID, results []sdk.ToolResult, createdBy uuid.NullUUID) (State, error) {
	s, err := t.begin(chatID, CompleteRequiresAction)
	if err != nil {
		return "", err
	}
	pending, err := t.OutstandingToolCalls(chatID)
	if err != nil {
		return "", err
	}
	byID := map[string]ToolCall{}
	for _, c := range pending {
		byID[c.ID] = c
	}
	seen := map[string]bool{}
	parts := make([]sdk.ChatMessagePart, 0, len(results))
	for i, r := range results {
		field := fmt.Sprintf("results[%d].tool_call_id", i)
		call, ok := byID[r.ToolCallID]
		if !ok {
			return "", invalid(field, "%q is not a pending tool call", r.ToolCallID)
		}
		if seen[r.ToolCallID] {
			return "", invalid(field, "%q has more than one result", r.ToolCallID)
		}
		seen[r.ToolCallID] = true
		output := r.Output
		if len(output) == 0 {
			output = json.RawMessage("null")
		}
		if !json.Valid(output) {
			return "", invalid(fmt.Sprintf("results[%d].output", i), "must be valid JSON")
		}
		parts = append(parts, sdk.ChatMessagePart{
			Type: sdk.PartToolResult, ToolCallID: r.ToolCallID, ToolName: call.Name, Result: output, IsError: r.IsError,
		})
	}
	for _, c := range pending {
		if !seen[c.ID] {
			return "", invalid("results", "missing a result for tool call %q (%s)", c.ID, c.Name)
		}
	}
	content, err := EncodeParts(parts)
	if err != nil {
		return "", err
	}
	if _, err := t.tx.MessageInsert(t.ctx, store.MessageInsertParams{
		ChatID: chatID, Role: store.RoleTool, Content: content, CreatedBy: createdBy, Now: t.now,
	}); err != nil {
		return "", fmt.Errorf("insert tool results: %w", err)
	}
	p := running()
	p.RequiresActionDeadlineAt = store.Some[*time.Time](nil)
	if err := t.update(chatID, p); err != nil {
		return "", err
	}
	return s.end()
}

// RequestCompaction records a manual compaction request and lands in
// running without inserting history; it still moves history_version so the
// compaction turn gets a fresh retry budget and episode keys.
func (t *Tx) RequestCompaction(chatID uuid.UUID) (State, error) {
	s, err := t.begin(chatID, RequestCompaction)
	if err != nil {
		return "", err
	}
	ok, err := t.HasSomethingToCompact(chatID)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", ErrNothingToCompact
	}
	p := running()
	now := t.now
	p.CompactionRequestedAt = store.Some(&now)
	if err := t.update(chatID, p); err != nil {
		return "", err
	}
	if _, err := t.tx.ChatTouchHistory(t.ctx, chatID); err != nil {
		return "", err
	}
	return s.end()
}

// ClearContext commits a clear boundary triplet synchronously and lands in
// waiting; the transcript stays, future prompts start after the boundary.
func (t *Tx) ClearContext(chatID uuid.UUID, createdBy uuid.NullUUID) (State, error) {
	s, err := t.begin(chatID, ClearContext)
	if err != nil {
		return "", err
	}
	ok, err := t.hasSomethingToClear(chatID)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", ErrNothingToClear
	}
	// The anchor is a user row: answer outstanding calls first.
	if err := t.answerOutstanding(chatID, reasonNewMessage); err != nil {
		return "", err
	}
	triplet, err := BoundaryTriplet(chatID,
		"The user cleared the conversation context. Earlier messages are not available; continue from here.",
		ToolChatCleared, json.RawMessage(`{}`), json.RawMessage(`{"cleared":true}`))
	if err != nil {
		return "", err
	}
	for _, m := range triplet {
		m.Now, m.CreatedBy = t.now, createdBy
		if _, err := t.tx.MessageInsert(t.ctx, m); err != nil {
			return "", fmt.Errorf("insert clear boundary: %w", err)
		}
	}
	if err := t.update(chatID, store.ChatPatch{
		Status:                store.Some(store.ChatStatusWaiting),
		LastError:             store.Some[json.RawMessage](nil),
		CompactionRequestedAt: store.Some[*time.Time](nil),
	}); err != nil {
		return "", err
	}
	return s.end()
}

// ReconcileInvalidState moves a chat in an invalid state to E0 or E1.
func (t *Tx) ReconcileInvalidState(chatID uuid.UUID) (State, error) {
	s, err := t.begin(chatID, ReconcileInvalidState)
	if err != nil {
		return "", err
	}
	if err := t.answerOutstanding(chatID, reasonReconciled); err != nil {
		return "", err
	}
	ce := sdk.ChatError{
		Message: "The chat was in an invalid state and has been reset. Send a new message or edit the history to continue.",
		Kind:    sdk.ChatErrorInvalidState,
	}
	if err := t.finishTurnRequest(chatID, OutcomeError, &ce); err != nil {
		return "", err
	}
	lastErr, _ := json.Marshal(ce)
	if err := t.update(chatID, store.ChatPatch{
		Archived:                 store.Some(false),
		Status:                   store.Some(store.ChatStatusError),
		LastError:                store.Some(json.RawMessage(lastErr)),
		RequiresActionDeadlineAt: store.Some[*time.Time](nil),
		CompactionRequestedAt:    store.Some[*time.Time](nil),
	}); err != nil {
		return "", err
	}
	return s.end()
}

// --- worker transitions ---

// Acquire gives the chat to (worker, runner) and records the initial
// heartbeat. It only changes ownership.
func (t *Tx) Acquire(chatID, workerID, runnerID uuid.UUID) (store.Chat, error) {
	c, st, err := t.State(chatID)
	if err != nil {
		return store.Chat{}, err
	}
	if st == StateN {
		return store.Chat{}, &TransitionError{Transition: Acquire, From: st}
	}
	if _, ok := OwnershipMatrix[OwnershipOf(c)][Acquire]; !ok {
		return store.Chat{}, &TransitionError{Transition: Acquire, From: st}
	}
	if _, err := t.tx.ChatUpdate(t.ctx, chatID, store.ChatPatch{
		WorkerID: store.Some(uuid.NullUUID{UUID: workerID, Valid: true}),
		RunnerID: store.Some(uuid.NullUUID{UUID: runnerID, Valid: true}),
	}); err != nil {
		return store.Chat{}, err
	}
	if err := t.recordLease(chatID, runnerID); err != nil {
		return store.Chat{}, err
	}
	return t.tx.ChatGet(t.ctx, chatID)
}

// Abandon clears the chat's ownership.
func (t *Tx) Abandon(chatID uuid.UUID) (store.Chat, error) {
	c, st, err := t.State(chatID)
	if err != nil {
		return store.Chat{}, err
	}
	if _, ok := OwnershipMatrix[OwnershipOf(c)][Abandon]; !ok || st == StateN {
		return store.Chat{}, &TransitionError{Transition: Abandon, From: st, Reason: "the chat is not owned"}
	}
	return t.tx.ChatUpdate(t.ctx, chatID, store.ChatPatch{
		WorkerID: store.Some(uuid.NullUUID{}), RunnerID: store.Some(uuid.NullUUID{}),
	})
}

// Step is one durable message suffix committed by the worker.
type Step struct {
	Messages []store.MessageInsertParams
	// Compaction marks a compaction step: it consumes the one-shot
	// compaction request in the same transaction.
	Compaction bool
}

func (t *Tx) insertSuffix(chatID uuid.UUID, msgs []store.MessageInsertParams) ([]store.Message, error) {
	out := make([]store.Message, 0, len(msgs))
	for _, m := range msgs {
		m.ChatID = chatID
		if m.Now.IsZero() {
			m.Now = t.now
		}
		got, err := t.tx.MessageInsert(t.ctx, m)
		if err != nil {
			return nil, fmt.Errorf("insert step message: %w", err)
		}
		out = append(out, got)
	}
	return out, nil
}

// CommitStep inserts one step's messages while remaining running.
func (t *Tx) CommitStep(chatID uuid.UUID, st Step) ([]store.Message, error) {
	s, err := t.begin(chatID, CommitStep)
	if err != nil {
		return nil, err
	}
	msgs, err := t.insertSuffix(chatID, st.Messages)
	if err != nil {
		return nil, err
	}
	if st.Compaction {
		if err := t.update(chatID, store.ChatPatch{CompactionRequestedAt: store.Some[*time.Time](nil)}); err != nil {
			return nil, err
		}
	} else if err := t.update(chatID, store.ChatPatch{}); err != nil {
		return nil, err
	}
	_, err = s.end()
	return msgs, err
}

// EnterRequiresAction parks the chat until the client submits results for
// the committed dynamic tool calls, with a deadline.
func (t *Tx) EnterRequiresAction(chatID uuid.UUID) (State, error) {
	s, err := t.begin(chatID, EnterRequiresAction)
	if err != nil {
		return "", err
	}
	deadline := t.now.Add(t.m.cfg.RequiresActionTimeout)
	if err := t.update(chatID, store.ChatPatch{
		Status:                   store.Some(store.ChatStatusRequiresAction),
		RequiresActionDeadlineAt: store.Some(&deadline),
		CompactionRequestedAt:    store.Some[*time.Time](nil),
	}); err != nil {
		return "", err
	}
	return s.end()
}

// FinishResult is what a turn-ending transition did.
type FinishResult struct {
	Promoted []store.Message
	State    State
}

// finishPromoting lands in waiting with an empty queue, or promotes the
// queue head and keeps running.
func (t *Tx) finishPromoting(s *step, outcome string) (FinishResult, error) {
	if err := t.finishTurnRequest(s.chat.ID, outcome, nil); err != nil {
		return FinishResult{}, err
	}
	n, err := t.tx.QueueCount(t.ctx, s.chat.ID)
	if err != nil {
		return FinishResult{}, err
	}
	var res FinishResult
	p := store.ChatPatch{Status: store.Some(store.ChatStatusWaiting), CompactionRequestedAt: store.Some[*time.Time](nil)}
	if n > 0 {
		m, err := t.promoteHead(s.chat.ID)
		if err != nil {
			return res, err
		}
		res.Promoted = []store.Message{m}
		p = running()
	}
	if err := t.update(s.chat.ID, p); err != nil {
		return res, err
	}
	res.State, err = s.end()
	return res, err
}

// FinishInterruption commits the interrupted partial step, if any, and
// lands in waiting, or promotes the queue head and runs it.
func (t *Tx) FinishInterruption(chatID uuid.UUID, partial []store.MessageInsertParams) (FinishResult, error) {
	s, err := t.begin(chatID, FinishInterruption)
	if err != nil {
		return FinishResult{}, err
	}
	if _, err := t.insertSuffix(chatID, partial); err != nil {
		return FinishResult{}, err
	}
	return t.finishPromoting(s, OutcomeInterrupted)
}

// RecordGenerationAttempt counts one more provider call for this history.
func (t *Tx) RecordGenerationAttempt(chatID uuid.UUID) (store.Chat, error) {
	if _, err := t.begin(chatID, RecordGenerationAttempt); err != nil {
		return store.Chat{}, err
	}
	return t.tx.ChatIncrementGenerationAttempt(t.ctx, chatID)
}

// RecordRetryState stores the retry payload clients see while backing off.
func (t *Tx) RecordRetryState(chatID uuid.UUID, retry sdk.ChatRetry) (store.Chat, error) {
	if _, err := t.begin(chatID, RecordRetryState); err != nil {
		return store.Chat{}, err
	}
	raw, err := json.Marshal(retry)
	if err != nil {
		return store.Chat{}, err
	}
	return t.tx.ChatUpdate(t.ctx, chatID, store.ChatPatch{RetryState: store.Some(json.RawMessage(raw))})
}

// FinishTurn completes the turn: waiting with an empty queue, otherwise the
// queue head enters history and the chat keeps running.
func (t *Tx) FinishTurn(chatID uuid.UUID) (FinishResult, error) {
	s, err := t.begin(chatID, FinishTurn)
	if err != nil {
		return FinishResult{}, err
	}
	return t.finishPromoting(s, OutcomeCompleted)
}

// FinishError parks the chat in error with last_error = e.
func (t *Tx) FinishError(chatID uuid.UUID, e sdk.ChatError) (State, error) {
	s, err := t.begin(chatID, FinishError)
	if err != nil {
		return "", err
	}
	raw, err := json.Marshal(e)
	if err != nil {
		return "", err
	}
	if err := t.finishTurnRequest(chatID, OutcomeError, &e); err != nil {
		return "", err
	}
	if err := t.update(chatID, store.ChatPatch{
		Status:                store.Some(store.ChatStatusError),
		LastError:             store.Some(json.RawMessage(raw)),
		CompactionRequestedAt: store.Some[*time.Time](nil),
	}); err != nil {
		return "", err
	}
	return s.end()
}

// CancelRequiresAction closes pending dynamic tool calls with synthetic
// cancellations (the deadline passed) and resumes running.
func (t *Tx) CancelRequiresAction(chatID uuid.UUID) (State, error) {
	s, err := t.begin(chatID, CancelRequiresAction)
	if err != nil {
		return "", err
	}
	if err := t.leaveAction(chatID, reasonActionTimeout); err != nil {
		return "", err
	}
	if err := t.update(chatID, running()); err != nil {
		return "", err
	}
	return s.end()
}

// Delete removes a chat and everything it owns. Deleting is not a state
// transition; it is here so the row lock orders it with transitions.
func (t *Tx) Delete(chatID uuid.UUID) error {
	_, st, err := t.State(chatID)
	if err != nil {
		return err
	}
	if st == StateN {
		return fmt.Errorf("chat %s: %w", chatID, ErrNotFound)
	}
	// Requests whose turn never finished end with the chat.
	if err := t.finishTurnRequest(chatID, OutcomeCancelled, nil); err != nil {
		return err
	}
	queue, err := t.tx.QueueList(t.ctx, chatID)
	if err != nil {
		return err
	}
	for _, q := range queue {
		if err := t.finishRequest(q.RequestID, Outcome{Status: OutcomeCancelled}); err != nil {
			return err
		}
	}
	t.deleted[chatID] = true
	return t.tx.ChatDelete(t.ctx, chatID)
}
