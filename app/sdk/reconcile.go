package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/google/uuid"
)

// CodeToolCallUnderReview answers POST /tool-results for a tool call
// stopped for review after a crash: only an operator's reconcile gives it
// a result.
const CodeToolCallUnderReview = "TOOL_CALL_UNDER_REVIEW"

// ReconcileRequest is an operator's review of unresolved tool calls: the
// body of POST /requests/{request_id}/reconcile and
// POST /chats/{chat}/tool-calls/{tool_call_id}/reconcile, and the
// --review FILE.json of `chatd invocation reconcile`.
type ReconcileRequest struct {
	// Assessment says what the operator found (required).
	Assessment string `json:"assessment"`
	// Result becomes the result of each reviewed tool call, so the model
	// learns what happened; {"reviewed": assessment} when absent.
	Result json.RawMessage `json:"result,omitempty"`
	// IsError marks the result as a failure.
	IsError bool `json:"is_error,omitempty"`
}

// Validate reports what is wrong with a review, naming the field.
func (r ReconcileRequest) Validate() error {
	if r.Assessment == "" {
		return errors.New(`"assessment" is required`)
	}
	if len(r.Result) > 0 && !json.Valid(r.Result) {
		return errors.New(`"result" must be JSON`)
	}
	return nil
}

// ReconcileResponse is the answer to a reconcile: the chat after it (in
// review until no call of it is under review) and, for a request, its id
// and audit reference.
type ReconcileResponse struct {
	RequestID *uuid.UUID `json:"request_id,omitempty"`
	AuditID   *uuid.UUID `json:"audit_id,omitempty"`
	// State is the request's state after the review ("reconciled").
	State string `json:"state,omitempty"`
	// ToolCallIDs are the calls that got the reviewed result.
	ToolCallIDs []string `json:"tool_call_ids"`
	Chat        *Chat    `json:"chat,omitempty"`
}

// ReconcileRequestID records an operator's review of an unresolved durable
// request (admins only).
func (c *Client) ReconcileRequestID(ctx context.Context, id uuid.UUID, r ReconcileRequest) (ReconcileResponse, error) {
	var out ReconcileResponse
	err := c.Do(ctx, http.MethodPost, "/requests/"+id.String()+"/reconcile", r, &out)
	return out, err
}

// ReconcileToolCall records an operator's review of one unresolved tool
// call, for turns sent without a request id (admins only).
func (c *Client) ReconcileToolCall(ctx context.Context, chatID uuid.UUID, toolCallID string, r ReconcileRequest) (ReconcileResponse, error) {
	var out ReconcileResponse
	err := c.Do(ctx, http.MethodPost, "/chats/"+chatID.String()+"/tool-calls/"+url.PathEscape(toolCallID)+"/reconcile", r, &out)
	return out, err
}
