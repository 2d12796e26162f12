package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/wire"
	"github.com/chatd/chatd/store"
)

// Invocation kinds.
const (
	kindCreateChat  = "create_chat"
	kindSendMessage = "send_message"
)

// ContentSHA256 is the hash a durable request is bound to: the hex SHA-256
// of the message text, i.e. the text of its text parts concatenated in
// order (clients compute the same for GET /requests/{id}).
func ContentSHA256(parts []sdk.ChatMessagePart) string {
	h := sha256.New()
	for _, p := range parts {
		if p.Type == sdk.PartText {
			h.Write([]byte(p.Text))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// parseRequestID reads request_id: absent or null is "not durable"; any
// other value must be a non-nil UUID.
func parseRequestID(raw json.RawMessage) (uuid.NullUUID, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return uuid.NullUUID{}, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if id, err := uuid.Parse(s); err == nil && id != uuid.Nil {
			return uuid.NullUUID{UUID: id, Valid: true}, nil
		}
	}
	return uuid.NullUUID{}, invocationError(http.StatusBadRequest, sdk.CodeInvalidInvocationID,
		"request_id must be a non-nil UUID (keep the same one when you retry).", uuid.NullUUID{}, uuid.Nil)
}

func invocationError(status int, code, message string, requestID uuid.NullUUID, audit uuid.UUID) *apiError {
	e := newError(status, code, message, "")
	if requestID.Valid {
		id := requestID.UUID
		e.resp.RequestID = &id
	}
	if audit != uuid.Nil {
		e.resp.AuditID = &audit
	}
	return e
}

// claimConflict checks an existing claim against a new submission (or a
// lookup) and returns the error it answers with, or nil when the claim is
// completed and its outcome can be replayed.
func claimConflict(inv store.Invocation, caller uuid.UUID, hash string, chat uuid.NullUUID) error {
	id := uuid.NullUUID{UUID: inv.RequestID, Valid: true}
	switch {
	case inv.CallerID != caller || (hash != "" && inv.ContentSHA256 != hash) || (chat.Valid && inv.ChatID != chat.UUID):
		// The audit reference is not revealed to another caller.
		return invocationError(http.StatusConflict, sdk.CodeInvocationConflict,
			"This request_id was used for a different caller or different content; use a new UUID for new work.", id, uuid.Nil)
	case inv.State == store.InvocationAdmitted:
		e := invocationError(http.StatusConflict, sdk.CodeInvocationInProgress,
			"This request is admitted and still running (or queued); check again later.", id, inv.AuditID)
		// The caller may have lost the create answer: the chat id lets it
		// follow the turn and submit tool results meanwhile.
		if inv.ChatID != uuid.Nil {
			chatID := inv.ChatID
			e.resp.ChatID = &chatID
		}
		return e
	case inv.State == store.InvocationUnresolved:
		return invocationError(http.StatusConflict, sdk.CodeInvocationUnresolved,
			"This request's effects are unknown after a failure; an operator must inspect and reconcile it (chatd invocation inspect).", id, inv.AuditID)
	case inv.State == store.InvocationReconciled:
		return invocationError(http.StatusConflict, sdk.CodeInvocationReconciled,
			"An operator reconciled this request; it stays closed to execution. Use a new UUID for new work.", id, inv.AuditID)
	}
	return nil
}

// replay builds the answer for a completed claim: the original admission
// answer with replayed: true and the turn's outcome and messages.
func replay(ctx context.Context, tx store.Reader, inv store.Invocation) (map[string]any, error) {
	body := map[string]any{}
	if len(inv.Response) > 0 {
		if err := json.Unmarshal(inv.Response, &body); err != nil {
			return nil, fmt.Errorf("decode stored response: %w", err)
		}
	}
	body["request_id"] = inv.RequestID
	body["audit_id"] = inv.AuditID
	body["replayed"] = true
	var o chatstate.Outcome
	if len(inv.Outcome) > 0 {
		if err := json.Unmarshal(inv.Outcome, &o); err != nil {
			return nil, fmt.Errorf("decode stored outcome: %w", err)
		}
		body["outcome"] = o
	}
	msgs := []sdk.ChatMessage{}
	for _, id := range o.MessageIDs {
		m, err := tx.MessageGet(ctx, inv.ChatID, id)
		if errors.Is(err, store.ErrNotFound) {
			continue // the chat was deleted since
		}
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, wire.ToMessage(m))
	}
	body["messages"] = msgs
	return body, nil
}

// errReplay carries a claim found at admission out of the transaction.
type errReplay struct{ inv store.Invocation }

func (e *errReplay) Error() string { return "request already claimed" }

// admitDurable runs fn (the admission) in one transaction with the claim:
// an existing claim is answered instead (replay or an INVOCATION_* error),
// and a concurrent claim of the same id loses the race, rolls back and is
// answered from the winner's claim.
func (s *Server) admitDurable(w http.ResponseWriter, r *http.Request, c *caller, requestID uuid.UUID, hash, kind string, chat uuid.NullUUID,
	fn func(t *chatstate.Tx) (chatID uuid.UUID, msgID, queuedID *int64, status int, body any, err error)) error {
	ctx := r.Context()
	for attempt := 0; ; attempt++ {
		var (
			status int
			out    map[string]any
		)
		err := s.deps.Machine.Do(ctx, func(t *chatstate.Tx) error {
			inv, err := t.Reader().InvocationGet(ctx, requestID)
			if err == nil {
				return &errReplay{inv}
			}
			if !errors.Is(err, store.ErrNotFound) {
				return err
			}
			chatID, msgID, queuedID, st, body, err := fn(t)
			if err != nil {
				return err
			}
			raw, err := json.Marshal(body)
			if err != nil {
				return err
			}
			claim, err := t.AdmitRequest(chatstate.Claim{
				RequestID: requestID, CallerID: c.user.ID, ContentSHA256: hash, Kind: kind, ChatID: chatID,
				MessageID: msgID, QueuedMessageID: queuedID, Response: raw,
			})
			if err != nil {
				return err
			}
			if err := json.Unmarshal(raw, &out); err != nil {
				return err
			}
			out["request_id"], out["audit_id"], out["replayed"] = requestID, claim.AuditID, false
			status = st
			return nil
		})
		var rep *errReplay
		switch {
		case errors.As(err, &rep):
			if err := claimConflict(rep.inv, c.user.ID, hash, chat); err != nil {
				return err
			}
			var body map[string]any
			err := s.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
				var err error
				body, err = replay(ctx, tx, rep.inv)
				return err
			})
			if err != nil {
				return err
			}
			writeJSON(w, http.StatusOK, body)
			return nil
		case errors.Is(err, store.ErrConflict):
			if attempt == 0 {
				continue // lost the race for the claim: answer from the winner's
			}
			return invocationError(http.StatusServiceUnavailable, sdk.CodeAuditUnavailable,
				"Could not record the request; its effects are unknown. Check its outcome before retrying.",
				uuid.NullUUID{UUID: requestID, Valid: true}, uuid.Nil)
		case err != nil:
			return err
		}
		writeJSON(w, status, out)
		return nil
	}
}

// lookupRequest is GET /requests/{request_id}?content_sha256=HEX: a
// read-only lookup that never creates a claim.
func (s *Server) lookupRequest(w http.ResponseWriter, r *http.Request, c *caller) error {
	parsed, err := uuid.Parse(r.PathValue("request_id"))
	if err != nil || parsed == uuid.Nil {
		return invocationError(http.StatusBadRequest, sdk.CodeInvalidInvocationID,
			"The request id must be a non-nil UUID.", uuid.NullUUID{}, uuid.Nil)
	}
	id := uuid.NullUUID{UUID: parsed, Valid: true}
	hash := strings.ToLower(r.URL.Query().Get("content_sha256"))
	if hash != "" {
		if b, err := hex.DecodeString(hash); err != nil || len(b) != sha256.Size {
			return validation("content_sha256", "must be 64 hex digits (SHA-256 of the message text)")
		}
	}
	var body map[string]any
	err = s.deps.Store.ReadTx(r.Context(), func(tx store.Reader) error {
		inv, err := tx.InvocationGet(r.Context(), id.UUID)
		if errors.Is(err, store.ErrNotFound) {
			return invocationError(http.StatusNotFound, sdk.CodeInvocationNotFound,
				"No request with this id was admitted; nothing was submitted by this lookup.", id, uuid.Nil)
		}
		if err != nil {
			return err
		}
		if err := claimConflict(inv, c.user.ID, hash, uuid.NullUUID{}); err != nil {
			return err
		}
		body, err = replay(r.Context(), tx, inv)
		return err
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}
