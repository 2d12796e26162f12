package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

func scanInvocation(row rowScanner) (store.Invocation, error) {
	var (
		inv                                  store.Invocation
		reqID, caller, chatID, audit         string
		created, updated                     string
		response, outcome, review, completed sql.NullString
	)
	err := row.Scan(&reqID, &caller, &inv.ContentSHA256, &inv.Kind, &chatID, &audit, &inv.State,
		&inv.MessageID, &inv.QueuedMessageID, &response, &outcome, &review, &created, &updated, &completed,
		&inv.RequestSHA256)
	if err != nil {
		return store.Invocation{}, translate(err)
	}
	var s scanner
	s.uuid(&inv.RequestID, reqID)
	s.uuid(&inv.CallerID, caller)
	s.uuid(&inv.ChatID, chatID)
	s.uuid(&inv.AuditID, audit)
	s.time(&inv.CreatedAt, created)
	s.time(&inv.UpdatedAt, updated)
	s.timePtr(&inv.CompletedAt, completed)
	if s.err != nil {
		return store.Invocation{}, s.err
	}
	inv.Response = rawJSON(response)
	inv.Outcome = rawJSON(outcome)
	inv.Review = rawJSON(review)
	return inv, nil
}

// InvocationInsert stores a new claim; a claimed request_id (or audit_id)
// is store.ErrConflict.
func (t *tx) InvocationInsert(ctx context.Context, inv store.Invocation) error {
	if err := checkJSON(inv.Response, inv.Outcome, inv.Review); err != nil {
		return fmt.Errorf("insert invocation %s: %w", inv.RequestID, err)
	}
	_, err := t.exec(ctx, query.InvocationInsert,
		inv.RequestID.String(), inv.CallerID.String(), inv.ContentSHA256, inv.Kind, inv.ChatID.String(),
		inv.AuditID.String(), inv.State, nullInt(inv.MessageID), nullInt(inv.QueuedMessageID),
		nullJSON(inv.Response), nullJSON(inv.Outcome), nullJSON(inv.Review),
		ts(inv.CreatedAt), ts(inv.UpdatedAt), tsPtr(inv.CompletedAt), inv.RequestSHA256)
	if err != nil {
		return fmt.Errorf("insert invocation %s: %w", inv.RequestID, err)
	}
	return nil
}

// InvocationGet reads a claim.
func (t *tx) InvocationGet(ctx context.Context, requestID uuid.UUID) (store.Invocation, error) {
	inv, err := scanInvocation(t.tx.QueryRowContext(ctx,
		query.InvocationGet, requestID.String()))
	if err != nil {
		return store.Invocation{}, fmt.Errorf("get invocation %s: %w", requestID, err)
	}
	return inv, nil
}

// InvocationUpdate writes the set fields of p and updated_at. No trigger
// touches invocations, so RETURNING shows the final row.
func (t *tx) InvocationUpdate(ctx context.Context, requestID uuid.UUID, p store.InvocationPatch) (store.Invocation, error) {
	var a args
	sets, err := setClause(p.Assignments(), &a)
	if err != nil {
		return store.Invocation{}, fmt.Errorf("update invocation %s: %w", requestID, err)
	}
	stmt := `UPDATE invocations SET ` + sets +
		` WHERE request_id = ` + a.add(requestID.String()) + ` RETURNING ` + query.InvocationColumns
	inv, err := scanInvocation(t.tx.QueryRowContext(ctx, stmt, a...))
	if err != nil {
		return store.Invocation{}, fmt.Errorf("update invocation %s: %w", requestID, err)
	}
	return inv, nil
}

func scanJournal(row rowScanner) (store.JournalEntry, error) {
	var (
		e                              store.JournalEntry
		chatID, started                string
		reqID, args, result, completed sql.NullString
		isError                        int
	)
	err := row.Scan(&chatID, &e.ToolCallID, &reqID, &e.ToolName, &e.Effect, &args, &e.State, &result,
		&isError, &e.Attempts, &started, &completed)
	if err != nil {
		return store.JournalEntry{}, translate(err)
	}
	var s scanner
	s.uuid(&e.ChatID, chatID)
	s.nullUUID(&e.RequestID, reqID)
	s.time(&e.StartedAt, started)
	s.timePtr(&e.CompletedAt, completed)
	if s.err != nil {
		return store.JournalEntry{}, s.err
	}
	e.Args = rawJSON(args)
	e.Result = rawJSON(result)
	e.IsError = isError != 0
	return e, nil
}

// JournalStart records a tool call before it runs. seq is MAX + 1 (Postgres
// has an identity): the single writer makes that safe, and a new entry
// sorts after all others.
func (t *tx) JournalStart(ctx context.Context, e store.JournalEntry) error {
	if err := checkJSON(e.Args, e.Result); err != nil {
		return fmt.Errorf("start journal entry %s of chat %s: %w", e.ToolCallID, e.ChatID, err)
	}
	state := e.State
	if state == "" {
		state = store.JournalStarted
	}
	attempts := e.Attempts
	if attempts == 0 {
		attempts = 1
	}
	_, err := t.exec(ctx, `INSERT INTO tool_journal (seq, `+query.JournalColumns+`)
		VALUES ((SELECT COALESCE(MAX(seq), 0) + 1 FROM tool_journal), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ChatID.String(), e.ToolCallID, nullUUID(e.RequestID), e.ToolName, e.Effect, nullJSON(e.Args),
		state, nullJSON(e.Result), boolInt(e.IsError), attempts, ts(e.StartedAt), tsPtr(e.CompletedAt))
	if err != nil {
		return fmt.Errorf("start journal entry %s of chat %s: %w", e.ToolCallID, e.ChatID, err)
	}
	return nil
}

// JournalGet reads a tool call's entry.
func (t *tx) JournalGet(ctx context.Context, chatID uuid.UUID, toolCallID string) (store.JournalEntry, error) {
	e, err := scanJournal(t.tx.QueryRowContext(ctx,
		query.JournalGet, chatID.String(), toolCallID))
	if err != nil {
		return store.JournalEntry{}, fmt.Errorf("get journal entry %s of chat %s: %w", toolCallID, chatID, err)
	}
	return e, nil
}

// JournalUpdate writes the set fields of p. No trigger touches the
// journal, so RETURNING shows the final row.
func (t *tx) JournalUpdate(ctx context.Context, chatID uuid.UUID, toolCallID string, p store.JournalPatch) (store.JournalEntry, error) {
	as := p.Assignments()
	if len(as) == 0 {
		return t.JournalGet(ctx, chatID, toolCallID)
	}
	var a args
	sets, err := setClause(as, &a)
	if err != nil {
		return store.JournalEntry{}, fmt.Errorf("update journal entry %s of chat %s: %w", toolCallID, chatID, err)
	}
	stmt := `UPDATE tool_journal SET ` + sets +
		` WHERE chat_id = ` + a.add(chatID.String()) + ` AND tool_call_id = ` + a.add(toolCallID) +
		` RETURNING ` + query.JournalColumns
	e, err := scanJournal(t.tx.QueryRowContext(ctx, stmt, a...))
	if err != nil {
		return store.JournalEntry{}, fmt.Errorf("update journal entry %s of chat %s: %w", toolCallID, chatID, err)
	}
	return e, nil
}

// JournalList lists a chat's entries in start order, optionally only one
// request's.
func (t *tx) JournalList(ctx context.Context, chatID uuid.UUID, requestID uuid.NullUUID) ([]store.JournalEntry, error) {
	var a args
	stmt := `SELECT ` + query.JournalColumns + ` FROM tool_journal WHERE chat_id = ` + a.add(chatID.String())
	if requestID.Valid {
		stmt += ` AND request_id = ` + a.add(requestID.UUID.String())
	}
	rows, err := t.tx.QueryContext(ctx, stmt+` ORDER BY seq`, a...)
	if err != nil {
		return nil, fmt.Errorf("list journal of chat %s: %w", chatID, translate(err))
	}
	entries, err := collect(rows, scanJournal)
	if err != nil {
		return nil, fmt.Errorf("list journal of chat %s: %w", chatID, err)
	}
	return entries, nil
}
