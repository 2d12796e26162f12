package chatstate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// MaxElicitationContent caps an accepted answer's JSON, in bytes.
const MaxElicitationContent = 64 << 10

// ElicitationError is an answer to a question that is no longer pending.
// It unwraps to ErrElicitationAnswered.
type ElicitationError struct {
	ID    uuid.UUID
	State string
}

func (e *ElicitationError) Error() string {
	return fmt.Sprintf("elicitation %s is not pending: it was answered %s", e.ID, e.State)
}

// Unwrap returns ErrElicitationAnswered.
func (e *ElicitationError) Unwrap() error { return ErrElicitationAnswered }

// AskElicitation records a question an MCP server asks during one of the
// chat's tool calls. It is not a transition: the call is still running
// and the chat keeps its state and its owner; the question is answered
// through AnswerElicitation, or cancelled by ExpireElicitations once the
// process holding the server's request stops renewing it.
//
// While it waits the chat holds no slot of the concurrent agent limit, as
// in requires_action: a running, owned chat's question names its runner
// (SlotRunnerID), which takes the chat out of the store's slot count, and
// the bundle announces the free slot on chat:ownership. The holder takes a
// slot back with ResumeElicitation once answered (the worker admits it).
func (t *Tx) AskElicitation(e store.Elicitation) (store.Elicitation, error) {
	c, st, err := t.Peek(e.ChatID)
	if err != nil {
		return store.Elicitation{}, err
	}
	if st == StateN {
		return store.Elicitation{}, &notFoundError{what: "chat " + e.ChatID.String()}
	}
	e.State, e.Content, e.AnsweredAt = store.ElicitationPending, nil, nil
	e.CreatedAt = t.now
	e.SlotRunnerID = uuid.NullUUID{}
	if HoldsSlot(c.Status, c.WorkerID) && c.RunnerID.Valid {
		e.SlotRunnerID = c.RunnerID
	}
	out, err := t.tx.ElicitationInsert(t.ctx, e)
	if err == nil && out.SlotRunnerID.Valid {
		t.slotReleased = append(t.slotReleased, c)
	}
	return out, err
}

// ResumeElicitation ends the slot release of a question: its chat counts
// against the concurrent agent limit again. The caller decides that there
// is room (worker.Worker.ResumeSlot, under the admission lock), or that
// the question's tool call ended.
func (t *Tx) ResumeElicitation(id uuid.UUID) error {
	return t.tx.ElicitationResumeSlot(t.ctx, id)
}

// AnswerElicitation records a person's answer to a pending question of
// the chat. Content goes with accept only and must be a JSON object (the
// server's request validates it against its schema and fills defaults).
func (t *Tx) AnswerElicitation(chatID uuid.UUID, r sdk.ElicitationResponse) (store.Elicitation, error) {
	switch r.Action {
	case sdk.ElicitationAccept, sdk.ElicitationDecline, sdk.ElicitationCancel:
	default:
		return store.Elicitation{}, invalid("action", "%q is not accept, decline or cancel", r.Action)
	}
	content := bytes.TrimSpace(r.Content)
	if len(content) == 0 || string(content) == "null" {
		content = nil
	}
	switch {
	case content != nil && r.Action != sdk.ElicitationAccept:
		return store.Elicitation{}, invalid("content", "goes with accept only")
	case len(content) > MaxElicitationContent:
		return store.Elicitation{}, invalid("content", "is larger than %d bytes", MaxElicitationContent)
	case content != nil:
		var obj map[string]json.RawMessage
		if json.Unmarshal(content, &obj) != nil || obj == nil {
			return store.Elicitation{}, invalid("content", "must be a JSON object")
		}
	case r.Action == sdk.ElicitationAccept:
		content = json.RawMessage("{}")
	}
	e, err := t.tx.ElicitationGet(t.ctx, r.ElicitationID)
	if err != nil || e.ChatID != chatID {
		return store.Elicitation{}, &notFoundError{what: "elicitation " + r.ElicitationID.String()}
	}
	if e.Mode == store.ElicitationModeURL {
		content = nil
	}
	e, answered, err := t.tx.ElicitationAnswer(t.ctx, e.ID, store.ElicitationAnswerParams{State: r.Action, Content: content, Now: t.now})
	if err != nil {
		return store.Elicitation{}, err
	}
	if !answered {
		return store.Elicitation{}, &ElicitationError{ID: e.ID, State: e.State}
	}
	return e, nil
}

// RenewElicitations extends the hold of questions whose server requests
// this process still holds.
func (t *Tx) RenewElicitations(ids []uuid.UUID, heldUntil time.Time) error {
	return t.tx.ElicitationRenew(t.ctx, ids, heldUntil)
}

// ExpireElicitations answers "cancel" to every pending question whose hold
// ended: the process that held its server request is gone (a restart or a
// crash), so nothing can deliver an answer. The tool call itself follows
// the journal's rules after a crash.
func (t *Tx) ExpireElicitations() ([]store.Elicitation, error) {
	return t.tx.ElicitationExpire(t.ctx, t.now)
}

// ElicitationOf is a stored question as the API shows it.
func ElicitationOf(e store.Elicitation) sdk.Elicitation {
	return sdk.Elicitation{
		ID: e.ID, ChatID: e.ChatID, ToolCallID: e.ToolCallID, Server: e.Server, Mode: e.Mode, Message: e.Message,
		RequestedSchema: e.Schema, URL: e.URL, State: e.State, Content: e.Content, CreatedAt: e.CreatedAt,
		AnsweredAt: e.AnsweredAt,
	}
}
