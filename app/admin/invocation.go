package admin

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// Invocation command names.
const (
	CmdInvocationInspect   = "invocation.inspect"
	CmdInvocationReconcile = "invocation.reconcile"
)

// InvocationTarget names what is inspected or reconciled: a durable
// request, or (for turns sent without a request id) a chat's tool call.
type InvocationTarget struct {
	RequestID  uuid.UUID `json:"request_id,omitzero"`
	ChatID     uuid.UUID `json:"chat_id,omitzero"`
	ToolCallID string    `json:"tool_call_id,omitempty"`
}

// InvocationReconcileRequest is an operator's review of a target.
type InvocationReconcileRequest struct {
	InvocationTarget
	Review sdk.ReconcileRequest `json:"review"`
}

// Inspection is what invocation.inspect reports: the claim (null for a
// tool call of a turn sent without a request id), its chat, its turn and
// its tool journal.
type Inspection struct {
	Claim   *ClaimView           `json:"claim"`
	Chat    *ChatView            `json:"chat,omitempty"`
	Turn    []sdk.ChatMessage    `json:"turn"`
	Journal []store.JournalEntry `json:"tool_journal"`
}

// ClaimView is a durable request claim as an operator sees it.
type ClaimView struct {
	RequestID       uuid.UUID       `json:"request_id"`
	AuditID         uuid.UUID       `json:"audit_id"`
	CallerID        uuid.UUID       `json:"caller_id"`
	Kind            string          `json:"kind"`
	State           string          `json:"state"`
	ContentSHA256   string          `json:"content_sha256"`
	RequestSHA256   string          `json:"request_sha256"` // "" for claims from before it existed
	ChatID          uuid.UUID       `json:"chat_id"`
	MessageID       *int64          `json:"message_id,omitempty"`
	QueuedMessageID *int64          `json:"queued_message_id,omitempty"`
	Outcome         json.RawMessage `json:"outcome,omitempty"`
	Review          json.RawMessage `json:"review,omitempty"`
	CreatedAt       string          `json:"created_at"`
	CompletedAt     *string         `json:"completed_at,omitempty"`
}

// ChatView is the claim's chat, when it still exists.
type ChatView struct {
	ID     uuid.UUID        `json:"id"`
	Title  string           `json:"title"`
	Status store.ChatStatus `json:"status"`
	State  chatstate.State  `json:"state"`
}

// Invocations inspects and reconciles durable requests and tool calls;
// the server implements it over its own state machine (so a review
// reaches its worker at once), the CLI over the database it opened.
type Invocations interface {
	Inspect(ctx context.Context, target InvocationTarget) (Inspection, error)
	Reconcile(ctx context.Context, target InvocationTarget, review sdk.ReconcileRequest) (sdk.ReconcileResponse, error)
}

// doInvocation runs an invocation.* command.
func (o *Ops) doInvocation(ctx context.Context, cmd string, body []byte) (any, error) {
	if o.Invocations == nil {
		return nil, &Error{Code: CodeNotFound, Message: "invocation commands are not served here"}
	}
	var (
		out any
		err error
	)
	switch cmd {
	case CmdInvocationInspect:
		var req InvocationTarget
		if err := decode(body, &req); err != nil {
			return nil, err
		}
		if err := targetError(req); err != nil {
			return nil, err
		}
		out, err = o.Invocations.Inspect(ctx, req)
	case CmdInvocationReconcile:
		var req InvocationReconcileRequest
		if err := decode(body, &req); err != nil {
			return nil, err
		}
		if err := targetError(req.InvocationTarget); err != nil {
			return nil, err
		}
		out, err = o.Invocations.Reconcile(ctx, req.InvocationTarget, req.Review)
	}
	var ve *chatstate.ValidationError
	switch {
	case errors.As(err, &ve):
		return nil, badRequest("%s", ve.Error())
	case errors.Is(err, chatstate.ErrTransitionNotAllowed):
		return nil, &Error{Code: CodeConflict, Message: err.Error()}
	case err != nil:
		return nil, err
	}
	return out, nil
}

func targetError(g InvocationTarget) error {
	err := chatstate.ReconcileTarget{RequestID: g.RequestID, ChatID: g.ChatID, ToolCallID: g.ToolCallID}.Validate()
	if err != nil {
		return badRequest("%v", err)
	}
	return nil
}
