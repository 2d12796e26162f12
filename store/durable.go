package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// DurableReader reads durable request claims (invocations) and the tool
// journal. It is part of Reader.
type DurableReader interface {
	// InvocationGet reads a claim (ErrNotFound when none).
	InvocationGet(ctx context.Context, requestID uuid.UUID) (Invocation, error)

	// JournalGet reads a tool call's entry (ErrNotFound when none).
	JournalGet(ctx context.Context, chatID uuid.UUID, toolCallID string) (JournalEntry, error)

	// JournalList lists a chat's entries in start order; with requestID set,
	// only that request's.
	JournalList(ctx context.Context, chatID uuid.UUID, requestID uuid.NullUUID) ([]JournalEntry, error)
}

// DurableTx writes durable request claims and the tool journal. It is
// part of Tx; only app/chatstate calls it (DESIGN.md rule 1).
type DurableTx interface {
	// InvocationInsert stores a new request claim; ErrConflict when the
	// request_id is already claimed.
	InvocationInsert(ctx context.Context, inv Invocation) error

	// InvocationUpdate writes the set fields of p and updated_at, and
	// returns the row (ErrNotFound when none).
	InvocationUpdate(ctx context.Context, requestID uuid.UUID, p InvocationPatch) (Invocation, error)

	// JournalStart records that a tool call is about to run; ErrConflict
	// when the call already has an entry. An empty State is
	// JournalStarted and a zero Attempts is 1.
	JournalStart(ctx context.Context, e JournalEntry) error

	// JournalUpdate writes the set fields of p and returns the entry
	// (ErrNotFound when none).
	JournalUpdate(ctx context.Context, chatID uuid.UUID, toolCallID string, p JournalPatch) (JournalEntry, error)
}

// InvocationState is the invocations.state column: where a durable request
// is in its life. Which changes are allowed is app/chatstate's table.
type InvocationState string

// Invocation states of a durable request.
const (
	// InvocationAdmitted: the message is in history or queued; its turn
	// has not finished.
	InvocationAdmitted InvocationState = "admitted"
	// InvocationCompleted: the turn finished and its outcome is durable.
	InvocationCompleted InvocationState = "completed"
	// InvocationUnresolved: an effectful tool call of its turn was started
	// and never recorded as done; effects are unknown until reviewed.
	InvocationUnresolved InvocationState = "unresolved"
	// InvocationReconciled: an operator recorded an assessment.
	InvocationReconciled InvocationState = "reconciled"
)

// AllInvocationStates lists every invocation state, for validation and tests.
var AllInvocationStates = []InvocationState{
	InvocationAdmitted, InvocationCompleted, InvocationUnresolved, InvocationReconciled,
}

// Invocation is a durable request claim (spec: durable-messages).
type Invocation struct {
	RequestID     uuid.UUID
	CallerID      uuid.UUID
	ContentSHA256 string // hex SHA-256 of the message text
	// RequestSHA256 is the hex SHA-256 of the whole request's canonical
	// JSON (docs/API.md); empty on claims admitted before it existed.
	RequestSHA256 string
	Kind          string // "create_chat" or "send_message"
	ChatID        uuid.UUID
	AuditID       uuid.UUID
	State         InvocationState
	// MessageID is the request's user message once it is in history;
	// QueuedMessageID while it waits in the queue.
	MessageID       *int64
	QueuedMessageID *int64
	Response        json.RawMessage // the admission answer, replayed verbatim
	Outcome         json.RawMessage // set once the turn's result is durable
	Review          json.RawMessage // the operator's assessment
	CreatedAt       time.Time
	UpdatedAt       time.Time
	CompletedAt     *time.Time
}

// InvocationPatch names the invocation columns an update writes.
type InvocationPatch struct {
	State           Opt[InvocationState]
	MessageID       Opt[*int64]
	QueuedMessageID Opt[*int64]
	Response        Opt[json.RawMessage]
	Outcome         Opt[json.RawMessage]
	Review          Opt[json.RawMessage]
	CompletedAt     Opt[*time.Time]
	UpdatedAt       time.Time
}

// Effect classes of tools.
const (
	EffectPure       = "pure"
	EffectIdempotent = "idempotent"
	EffectEffectful  = "effectful"
)

// JournalState is the tool_journal.state column: where a server-side tool
// call is in its life. Which changes are allowed is app/chatstate's table.
type JournalState string

// Journal states of a tool call.
const (
	// JournalStarted: the call is about to run or running (or a crash
	// interrupted it).
	JournalStarted JournalState = "started"
	// JournalCompleted: its result is durable in history.
	JournalCompleted JournalState = "completed"
	// JournalUnresolved: an effectful call that may have run before a
	// crash; its effects are unknown until reviewed.
	JournalUnresolved JournalState = "unresolved"
	// JournalReconciled: an operator recorded its result.
	JournalReconciled JournalState = "reconciled"
)

// AllJournalStates lists every journal state, for validation and tests.
var AllJournalStates = []JournalState{
	JournalStarted, JournalCompleted, JournalUnresolved, JournalReconciled,
}

// JournalEntry records one server-side tool call.
type JournalEntry struct {
	ChatID      uuid.UUID
	ToolCallID  string
	RequestID   uuid.NullUUID
	ToolName    string
	Effect      string
	Args        json.RawMessage
	State       JournalState
	Result      json.RawMessage
	IsError     bool
	Attempts    int64
	StartedAt   time.Time
	CompletedAt *time.Time
}

// JournalPatch names the journal columns an update writes.
type JournalPatch struct {
	State       Opt[JournalState]
	Result      Opt[json.RawMessage]
	IsError     Opt[bool]
	Attempts    Opt[int64]
	StartedAt   Opt[time.Time]
	CompletedAt Opt[*time.Time]
}
