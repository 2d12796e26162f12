package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/wire"
	"github.com/chatd/chatd/store"
)

// claimKey is what a submission (or a lookup) must match in an existing
// claim besides its caller. Empty fields are not compared.
type claimKey struct {
	Kind   string        // the endpoint: sdk.EndpointCreateChat or sdk.EndpointSendMessage
	ChatID uuid.NullUUID // send_message: the chat in the path
	// RequestSHA256 is the hash of the whole request (sdk.RequestBinding);
	// claims admitted before it existed have none and are matched by the
	// rest.
	RequestSHA256 string
	// ContentSHA256 is the hash of the message text (sdk.ContentSHA256),
	// which clients that hash only text send to lookups.
	ContentSHA256 string
}

// matches reports whether inv was claimed for this key.
func (k claimKey) matches(inv store.Invocation) bool {
	switch {
	case k.Kind != "" && inv.Kind != k.Kind:
		return false
	case k.ChatID.Valid && inv.ChatID != k.ChatID.UUID:
		return false
	case k.RequestSHA256 != "" && inv.RequestSHA256 != "" && inv.RequestSHA256 != k.RequestSHA256:
		return false
	case k.ContentSHA256 != "" && inv.ContentSHA256 != k.ContentSHA256:
		return false
	}
	return true
}

// bindRequest is the claim key of a durable submission: its endpoint, its
// chat, request_sha256 of b and the text hash of its content.
func bindRequest(b sdk.RequestBinding, content []sdk.ChatMessagePart) (claimKey, error) {
	hash, err := b.SHA256()
	if err != nil {
		return claimKey{}, validation("body", "the request has no canonical JSON form (RFC 8785): "+err.Error())
	}
	k := claimKey{Kind: b.Endpoint, RequestSHA256: hash, ContentSHA256: sdk.ContentSHA256(content)}
	if b.ChatID != nil {
		k.ChatID = uuid.NullUUID{UUID: *b.ChatID, Valid: true}
	}
	return k, nil
}

// requestError is an error answering a request that carried a valid
// request_id: writeError puts the id into the answer.
type requestError struct {
	err error
	id  uuid.UUID
}

func (e *requestError) Error() string { return e.err.Error() }
func (e *requestError) Unwrap() error { return e.err }

// withRequestID marks err as the answer to the durable request id, so its
// error body carries request_id whatever the error is.
func withRequestID(err error, id uuid.NullUUID) error {
	if err == nil || !id.Valid {
		return err
	}
	return &requestError{err: err, id: id.UUID}
}

// decodeDurable is decodeJSON for a body that may carry request_id:
// when the body does not decode, the id is still read from it if it can
// be, so the error answer carries it.
func decodeDurable(r *http.Request, v any) error {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return decodeError(err)
	}
	r.Body = io.NopCloser(bytes.NewReader(raw))
	if err := decodeJSON(r, v); err != nil {
		var idOnly struct {
			RequestID json.RawMessage `json:"request_id"`
		}
		if json.Unmarshal(raw, &idOnly) == nil {
			if id, perr := parseRequestID(idOnly.RequestID); perr == nil {
				return withRequestID(err, id)
			}
		}
		return err
	}
	return nil
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
func claimConflict(inv store.Invocation, caller uuid.UUID, key claimKey) error {
	id := uuid.NullUUID{UUID: inv.RequestID, Valid: true}
	switch {
	case inv.CallerID != caller:
		// The audit reference is not revealed to another caller.
		return invocationError(http.StatusConflict, sdk.CodeInvocationConflict,
			"This request_id was used for a different caller or different content; use a new UUID for new work.", id, uuid.Nil)
	case !key.matches(inv):
		// The caller's own claim: its audit reference is the caller's.
		return invocationError(http.StatusConflict, sdk.CodeInvocationConflict,
			"This request_id was used for a different request (endpoint, chat or content); use a new UUID for new work.", id, inv.AuditID)
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
func (s *Server) admitDurable(w http.ResponseWriter, r *http.Request, c *caller, requestID uuid.UUID, key claimKey,
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
				RequestID: requestID, CallerID: c.user.ID, ContentSHA256: key.ContentSHA256, RequestSHA256: key.RequestSHA256,
				Kind: key.Kind, ChatID: chatID,
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
			if err := claimConflict(rep.inv, c.user.ID, key); err != nil {
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

// lookupRequest is GET /requests/{request_id}?request_sha256=HEX&content_sha256=HEX:
// a read-only lookup that never creates a claim. Either hash is optional;
// each one given must match.
func (s *Server) lookupRequest(w http.ResponseWriter, r *http.Request, c *caller) error {
	parsed, err := uuid.Parse(r.PathValue("request_id"))
	if err != nil || parsed == uuid.Nil {
		return invocationError(http.StatusBadRequest, sdk.CodeInvalidInvocationID,
			"The request id must be a non-nil UUID.", uuid.NullUUID{}, uuid.Nil)
	}
	id := uuid.NullUUID{UUID: parsed, Valid: true}
	var key claimKey
	for _, q := range []struct {
		name, what string
		into       *string
	}{
		{"request_sha256", "SHA-256 of the request's canonical JSON", &key.RequestSHA256},
		{"content_sha256", "SHA-256 of the message text", &key.ContentSHA256},
	} {
		hash := strings.ToLower(r.URL.Query().Get(q.name))
		if hash != "" {
			if b, err := hex.DecodeString(hash); err != nil || len(b) != sha256.Size {
				return withRequestID(validation(q.name, "must be 64 hex digits ("+q.what+")"), id)
			}
		}
		*q.into = hash
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
		if err := claimConflict(inv, c.user.ID, key); err != nil {
			return err
		}
		body, err = replay(r.Context(), tx, inv)
		return err
	})
	if err != nil {
		return withRequestID(err, id)
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}
