package postgres

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

func scanInvocation(row pgx.Row) (store.Invocation, error) {
	var (
		inv                       store.Invocation
		response, outcome, review []byte
	)
	err := row.Scan(&inv.RequestID, &inv.CallerID, &inv.ContentSHA256, &inv.Kind, &inv.ChatID,
		&inv.AuditID, &inv.State, &inv.MessageID, &inv.QueuedMessageID, &response, &outcome, &review,
		&inv.CreatedAt, &inv.UpdatedAt, &inv.CompletedAt, &inv.RequestSHA256)
	if err != nil {
		return store.Invocation{}, translate(err)
	}
	inv.Response = rawJSON(response)
	inv.Outcome = rawJSON(outcome)
	inv.Review = rawJSON(review)
	inv.CreatedAt = utc(inv.CreatedAt)
	inv.UpdatedAt = utc(inv.UpdatedAt)
	inv.CompletedAt = utcPtr(inv.CompletedAt)
	return inv, nil
}

// InvocationInsert stores a new claim; a claimed request_id (or audit_id)
// is store.ErrConflict.
func (t *tx) InvocationInsert(ctx context.Context, inv store.Invocation) error {
	_, err := t.tx.Exec(ctx, query.InvocationInsert,
		inv.RequestID, inv.CallerID, inv.ContentSHA256, inv.Kind, inv.ChatID, inv.AuditID, inv.State,
		inv.MessageID, inv.QueuedMessageID, inv.Response, inv.Outcome, inv.Review,
		inv.CreatedAt, inv.UpdatedAt, inv.CompletedAt, inv.RequestSHA256)
	if err != nil {
		return fmt.Errorf("insert invocation %s: %w", inv.RequestID, translate(err))
	}
	return nil
}

// InvocationGet reads a claim.
func (t *tx) InvocationGet(ctx context.Context, requestID uuid.UUID) (store.Invocation, error) {
	inv, err := scanInvocation(t.tx.QueryRow(ctx,
		query.InvocationGet, requestID))
	if err != nil {
		return store.Invocation{}, fmt.Errorf("get invocation %s: %w", requestID, err)
	}
	return inv, nil
}

// InvocationUpdate writes the set fields of p and updated_at.
func (t *tx) InvocationUpdate(ctx context.Context, requestID uuid.UUID, p store.InvocationPatch) (store.Invocation, error) {
	var a args
	sets, err := setClause(p.Assignments(), &a)
	if err != nil {
		return store.Invocation{}, fmt.Errorf("update invocation %s: %w", requestID, err)
	}
	stmt := `UPDATE invocations SET ` + sets +
		` WHERE request_id = ` + a.add(requestID) + ` RETURNING ` + query.InvocationColumns
	inv, err := scanInvocation(t.tx.QueryRow(ctx, stmt, a...))
	if err != nil {
		return store.Invocation{}, fmt.Errorf("update invocation %s: %w", requestID, err)
	}
	return inv, nil
}

func scanJournal(row pgx.Row) (store.JournalEntry, error) {
	var (
		e            store.JournalEntry
		args, result []byte
	)
	err := row.Scan(&e.ChatID, &e.ToolCallID, &e.RequestID, &e.ToolName, &e.Effect, &args, &e.State,
		&result, &e.IsError, &e.Attempts, &e.StartedAt, &e.CompletedAt)
	if err != nil {
		return store.JournalEntry{}, translate(err)
	}
	e.Args = rawJSON(args)
	e.Result = rawJSON(result)
	e.StartedAt = utc(e.StartedAt)
	e.CompletedAt = utcPtr(e.CompletedAt)
	return e, nil
}

// JournalStart records a tool call before it runs; seq (its identity)
// gives the start order.
func (t *tx) JournalStart(ctx context.Context, e store.JournalEntry) error {
	state := e.State
	if state == "" {
		state = store.JournalStarted
	}
	attempts := e.Attempts
	if attempts == 0 {
		attempts = 1
	}
	_, err := t.tx.Exec(ctx, `INSERT INTO tool_journal (`+query.JournalColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		e.ChatID, e.ToolCallID, e.RequestID, e.ToolName, e.Effect, e.Args, state, e.Result,
		e.IsError, attempts, e.StartedAt, e.CompletedAt)
	if err != nil {
		return fmt.Errorf("start journal entry %s of chat %s: %w", e.ToolCallID, e.ChatID, translate(err))
	}
	return nil
}

// JournalGet reads a tool call's entry.
func (t *tx) JournalGet(ctx context.Context, chatID uuid.UUID, toolCallID string) (store.JournalEntry, error) {
	e, err := scanJournal(t.tx.QueryRow(ctx,
		query.JournalGet, chatID, toolCallID))
	if err != nil {
		return store.JournalEntry{}, fmt.Errorf("get journal entry %s of chat %s: %w", toolCallID, chatID, err)
	}
	return e, nil
}

// JournalUpdate writes the set fields of p.
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
		` WHERE chat_id = ` + a.add(chatID) + ` AND tool_call_id = ` + a.add(toolCallID) +
		` RETURNING ` + query.JournalColumns
	e, err := scanJournal(t.tx.QueryRow(ctx, stmt, a...))
	if err != nil {
		return store.JournalEntry{}, fmt.Errorf("update journal entry %s of chat %s: %w", toolCallID, chatID, err)
	}
	return e, nil
}

// JournalList lists a chat's entries in start order, optionally only one
// request's.
func (t *tx) JournalList(ctx context.Context, chatID uuid.UUID, requestID uuid.NullUUID) ([]store.JournalEntry, error) {
	var a args
	stmt := `SELECT ` + query.JournalColumns + ` FROM tool_journal WHERE chat_id = ` + a.add(chatID)
	if requestID.Valid {
		stmt += ` AND request_id = ` + a.add(requestID.UUID)
	}
	rows, err := t.tx.Query(ctx, stmt+` ORDER BY seq`, a...)
	if err != nil {
		return nil, fmt.Errorf("list journal of chat %s: %w", chatID, translate(err))
	}
	entries, err := collect(rows, scanJournal)
	if err != nil {
		return nil, fmt.Errorf("list journal of chat %s: %w", chatID, err)
	}
	return entries, nil
}
