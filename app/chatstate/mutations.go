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
	reasonInterrupted   = "interrupted by the user before it finished"
	reasonTurnEnded     = "the turn ended before it ran"
	reasonTurnFailed    = "the turn stopped with an error before it finished"
	reasonNewMessage    = "a new user message arrived"
	reasonActionTimeout = "no result was submitted before the deadline"
	reasonReconciled    = "the chat was reconciled from an invalid state"
	reasonForked        = "the chat was forked before it had a result"
)

// UserInput is a user turn: the content of a message or queued message.
type UserInput struct {
	Content         []sdk.ChatMessagePart
	CreatedBy       uuid.NullUUID
	ModelConfigID   uuid.NullUUID
	ReasoningEffort string
	// RequestID links a durable request's claim to its message.
	RequestID uuid.NullUUID
	// Context is the lifecycle hook context the prompt was admitted with
	// (session_start, user_prompt_submit): it enters history just before
	// the prompt, also when the prompt waits in the queue first.
	Context []HookContext
	// FileCap is the most files a chat holds (the deployment's
	// CHATD_MAX_FILES_PER_CHAT); content with file parts needs it >= 1.
	FileCap int
}

// HookContext is one piece of context a lifecycle hook returned for a
// prompt: a user message without author, model-only
// (store.VisibilityModel) or for everyone (store.VisibilityBoth).
type HookContext struct {
	Text       string `json:"text"`
	Visibility string `json:"visibility"`
}

func (in UserInput) encode(field string) (json.RawMessage, error) {
	if len(in.Content) == 0 {
		return nil, invalid(field, "content must have at least one part")
	}
	if err := checkHookContext(in.Context); err != nil {
		return nil, err
	}
	return EncodeParts(in.Content)
}

func checkHookContext(cs []HookContext) error {
	for _, c := range cs {
		if c.Text == "" || (c.Visibility != store.VisibilityModel && c.Visibility != store.VisibilityBoth) {
			return fmt.Errorf("chatstate: hook context needs text and visibility %q or %q, got %q", store.VisibilityModel, store.VisibilityBoth, c.Visibility)
		}
	}
	return nil
}

// encodeHookContext is the queue row's hook_context (nil for none).
func encodeHookContext(cs []HookContext) (json.RawMessage, error) {
	if len(cs) == 0 {
		return nil, nil
	}
	return json.Marshal(cs)
}

func decodeHookContext(raw json.RawMessage) ([]HookContext, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var cs []HookContext
	if err := json.Unmarshal(raw, &cs); err != nil {
		return nil, fmt.Errorf("decode hook context: %w", err)
	}
	return cs, checkHookContext(cs)
}

// insertHookContext appends a prompt's hook context to history.
func (t *Tx) insertHookContext(chatID uuid.UUID, cs []HookContext) error {
	for _, c := range cs {
		content, err := EncodeParts([]sdk.ChatMessagePart{{Type: sdk.PartText, Text: c.Text}})
		if err != nil {
			return err
		}
		m, err := t.insertMessage(store.MessageInsertParams{
			ChatID: chatID, Role: store.RoleUser, Content: content, Visibility: c.Visibility, Now: t.now,
		})
		if err != nil {
			return fmt.Errorf("insert hook context: %w", err)
		}
		if t.hookContext == nil {
			t.hookContext = map[int64]bool{}
		}
		t.hookContext[m.ID] = true
	}
	return nil
}

// insertMessage appends one message to history and logs it for the
// transition's Result. Every message a transition inserts goes through here.
func (t *Tx) insertMessage(p store.MessageInsertParams) (store.Message, error) {
	m, err := t.tx.MessageInsert(t.ctx, p)
	if err != nil {
		return store.Message{}, err
	}
	t.inserted = append(t.inserted, m)
	return m, nil
}

// insertUser answers outstanding tool calls and appends a user message.
func (t *Tx) insertUser(chatID uuid.UUID, content json.RawMessage, in UserInput, queuedID *int64) (store.Message, error) {
	if err := t.answerOutstanding(chatID, reasonNewMessage); err != nil {
		return store.Message{}, err
	}
	if err := t.linkFiles(chatID, in); err != nil {
		return store.Message{}, err
	}
	if err := t.insertHookContext(chatID, in.Context); err != nil {
		return store.Message{}, err
	}
	m, err := t.insertMessage(store.MessageInsertParams{
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
	if err := t.linkFiles(chatID, in); err != nil {
		return store.QueuedMessage{}, err
	}
	hookContext, err := encodeHookContext(in.Context)
	if err != nil {
		return store.QueuedMessage{}, err
	}
	q, err := t.tx.QueueInsert(t.ctx, store.QueueInsertParams{
		ChatID: chatID, CreatedBy: in.CreatedBy, Content: content, ModelConfigID: in.ModelConfigID,
		ReasoningEffort: in.ReasoningEffort, RequestID: in.RequestID, HookContext: hookContext, Now: t.now,
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
	hookContext, err := decodeHookContext(head.HookContext)
	if err != nil {
		return store.Message{}, fmt.Errorf("promote queued message %d: %w", head.ID, err)
	}
	m, err := t.insertUser(chatID, head.Content, UserInput{
		CreatedBy: head.CreatedBy, ModelConfigID: head.ModelConfigID, ReasoningEffort: head.ReasoningEffort,
		RequestID: head.RequestID, Context: hookContext,
	}, &head.ID)
	if err != nil {
		return m, err
	}
	if t.queuedAt == nil {
		t.queuedAt = map[int64]time.Time{}
	}
	t.queuedAt[m.ID] = head.CreatedAt
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

// insertSuffix appends a worker step's messages.
func (t *Tx) insertSuffix(chatID uuid.UUID, msgs []store.MessageInsertParams) ([]store.Message, error) {
	out := make([]store.Message, 0, len(msgs))
	for _, m := range msgs {
		m.ChatID = chatID
		if m.Now.IsZero() {
			m.Now = t.now
		}
		got, err := t.insertMessage(m)
		if err != nil {
			return nil, fmt.Errorf("insert step message: %w", err)
		}
		out = append(out, got)
	}
	return out, nil
}
