package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// ElicitationReader reads the questions MCP servers ask a chat's person
// during a tool call (MCP elicitation). It is part of Reader.
type ElicitationReader interface {
	// ElicitationGet reads one question (ErrNotFound when none).
	ElicitationGet(ctx context.Context, id uuid.UUID) (Elicitation, error)

	// ElicitationListPending lists a chat's unanswered questions, oldest
	// first.
	ElicitationListPending(ctx context.Context, chatID uuid.UUID) ([]Elicitation, error)
}

// ElicitationTx writes them. It is part of Tx; the writer is
// app/chatstate.
type ElicitationTx interface {
	// ElicitationInsert stores a new pending question.
	ElicitationInsert(ctx context.Context, e Elicitation) (Elicitation, error)

	// ElicitationAnswer records the answer of a pending question and
	// returns the row; a question that is not pending any more is left
	// as it is and returned with answered false.
	ElicitationAnswer(ctx context.Context, id uuid.UUID, p ElicitationAnswerParams) (e Elicitation, answered bool, err error)

	// ElicitationRenew extends the hold of questions still pending or
	// still keeping their chat's slot released: the process holding the
	// servers' requests is still waiting for them.
	ElicitationRenew(ctx context.Context, ids []uuid.UUID, heldUntil time.Time) error

	// ElicitationExpire answers "cancel" to every pending question whose
	// hold ended before now (its server request is gone with the process
	// that held it) and returns them. Every question whose hold ended
	// stops keeping its chat's slot released.
	ElicitationExpire(ctx context.Context, now time.Time) ([]Elicitation, error)

	// ElicitationResumeSlot ends the slot release of a question
	// (SlotRunnerID becomes null): its chat counts against the concurrent
	// agent limit again.
	ElicitationResumeSlot(ctx context.Context, id uuid.UUID) error
}

// Elicitation states: pending, then the person's action.
const (
	ElicitationPending = "pending"
	ElicitationAccept  = "accept"
	ElicitationDecline = "decline"
	ElicitationCancel  = "cancel"
)

// Elicitation modes (MCP): a form from a schema, or a URL to visit.
const (
	ElicitationModeForm = "form"
	ElicitationModeURL  = "url"
)

// Elicitation is one row of chat_elicitations.
type Elicitation struct {
	ID         uuid.UUID
	ChatID     uuid.UUID
	ToolCallID string
	// Server is the MCP server's name.
	Server  string
	Mode    string
	Message string
	// Schema is the requested schema of a form (nil for a URL).
	Schema json.RawMessage
	// URL is what a URL elicitation asks the person to open.
	URL string
	// State is pending or the action of the answer.
	State string
	// Content is an accepted form's answer (nil otherwise).
	Content    json.RawMessage
	CreatedAt  time.Time
	HeldUntil  time.Time
	AnsweredAt *time.Time
	// SlotRunnerID is the runner whose slot of the concurrent agent limit
	// the question released while it waits (null: none released, or the
	// chat counts again). A chat owned by that runner holds no slot.
	SlotRunnerID uuid.NullUUID
}

// ElicitationAnswerParams answer a question.
type ElicitationAnswerParams struct {
	State   string
	Content json.RawMessage
	Now     time.Time
}
