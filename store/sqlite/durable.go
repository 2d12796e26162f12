package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// --- invocations ---

const invocationColumns = `request_id, caller_id, content_sha256, kind, chat_id, audit_id, state,
	message_id, queued_message_id, response, outcome, review, created_at, updated_at, completed_at`

func scanInvocation(r rowScanner) (store.Invocation, error) {
	var (
		inv                                  store.Invocation
		reqID, caller, chatID, audit         string
		created, updated                     string
		response, outcome, review, completed sql.NullString
	)
	err := r.Scan(&reqID, &caller, &inv.ContentSHA256, &inv.Kind, &chatID, &audit, &inv.State,
		&inv.MessageID, &inv.QueuedMessageID, &response, &outcome, &review, &created, &updated, &completed)
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

func nullInt(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// InvocationInsert stores a new claim.
func (t *tx) InvocationInsert(ctx context.Context, inv store.Invocation) error {
	_, err := t.exec(ctx, `INSERT INTO invocations (`+invocationColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		inv.RequestID.String(), inv.CallerID.String(), inv.ContentSHA256, inv.Kind, inv.ChatID.String(),
		inv.AuditID.String(), string(inv.State), nullInt(inv.MessageID), nullInt(inv.QueuedMessageID),
		nullJSON(inv.Response), nullJSON(inv.Outcome), nullJSON(inv.Review),
		ts(inv.CreatedAt), ts(inv.UpdatedAt), tsPtr(inv.CompletedAt))
	return err
}

// InvocationGet reads a claim.
func (t *tx) InvocationGet(ctx context.Context, requestID uuid.UUID) (store.Invocation, error) {
	return scanInvocation(t.tx.QueryRowContext(ctx, `SELECT `+invocationColumns+` FROM invocations
		WHERE request_id = ?`, requestID.String()))
}

// InvocationUpdate writes the set fields of p and updated_at.
func (t *tx) InvocationUpdate(ctx context.Context, requestID uuid.UUID, p store.InvocationPatch) (store.Invocation, error) {
	sets := []string{"updated_at = ?"}
	args := []any{ts(p.UpdatedAt)}
	set := func(col string, v any) {
		sets = append(sets, col+" = ?")
		args = append(args, v)
	}
	if p.State.Set {
		set("state", string(p.State.Value))
	}
	if p.MessageID.Set {
		set("message_id", nullInt(p.MessageID.Value))
	}
	if p.QueuedMessageID.Set {
		set("queued_message_id", nullInt(p.QueuedMessageID.Value))
	}
	if p.Response.Set {
		set("response", nullJSON(p.Response.Value))
	}
	if p.Outcome.Set {
		set("outcome", nullJSON(p.Outcome.Value))
	}
	if p.Review.Set {
		set("review", nullJSON(p.Review.Value))
	}
	if p.CompletedAt.Set {
		set("completed_at", tsPtr(p.CompletedAt.Value))
	}
	args = append(args, requestID.String())
	// No trigger touches invocations, so RETURNING shows the final row.
	return scanInvocation(t.tx.QueryRowContext(ctx, `UPDATE invocations SET `+strings.Join(sets, ", ")+
		` WHERE request_id = ? RETURNING `+invocationColumns, args...))
}

// --- tool journal ---

const journalColumns = `chat_id, tool_call_id, request_id, tool_name, effect, args, state, result,
	is_error, attempts, started_at, completed_at`

func scanJournal(r rowScanner) (store.JournalEntry, error) {
	var (
		e                              store.JournalEntry
		chatID, started                string
		reqID, args, result, completed sql.NullString
		isError                        int
	)
	err := r.Scan(&chatID, &e.ToolCallID, &reqID, &e.ToolName, &e.Effect, &args, &e.State, &result,
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

// JournalStart records a tool call before it runs. seq is MAX + 1: the
// single writer makes that safe, and a new entry sorts after all others.
func (t *tx) JournalStart(ctx context.Context, e store.JournalEntry) error {
	state := e.State
	if state == "" {
		state = store.JournalStarted
	}
	attempts := e.Attempts
	if attempts == 0 {
		attempts = 1
	}
	_, err := t.exec(ctx, `INSERT INTO tool_journal (seq, `+journalColumns+`)
		VALUES ((SELECT COALESCE(MAX(seq), 0) + 1 FROM tool_journal), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ChatID.String(), e.ToolCallID, nullUUID(e.RequestID), e.ToolName, e.Effect, nullJSON(e.Args),
		string(state), nullJSON(e.Result), boolInt(e.IsError), attempts, ts(e.StartedAt), tsPtr(e.CompletedAt))
	return err
}

// JournalGet reads a tool call's entry.
func (t *tx) JournalGet(ctx context.Context, chatID uuid.UUID, toolCallID string) (store.JournalEntry, error) {
	return scanJournal(t.tx.QueryRowContext(ctx, `SELECT `+journalColumns+` FROM tool_journal
		WHERE chat_id = ? AND tool_call_id = ?`, chatID.String(), toolCallID))
}

// JournalUpdate writes the set fields of p.
func (t *tx) JournalUpdate(ctx context.Context, chatID uuid.UUID, toolCallID string, p store.JournalPatch) (store.JournalEntry, error) {
	var sets []string
	var args []any
	set := func(col string, v any) {
		sets = append(sets, col+" = ?")
		args = append(args, v)
	}
	if p.State.Set {
		set("state", string(p.State.Value))
	}
	if p.Result.Set {
		set("result", nullJSON(p.Result.Value))
	}
	if p.IsError.Set {
		set("is_error", boolInt(p.IsError.Value))
	}
	if p.Attempts.Set {
		set("attempts", p.Attempts.Value)
	}
	if p.StartedAt.Set {
		set("started_at", ts(p.StartedAt.Value))
	}
	if p.CompletedAt.Set {
		set("completed_at", tsPtr(p.CompletedAt.Value))
	}
	if len(sets) == 0 {
		return t.JournalGet(ctx, chatID, toolCallID)
	}
	args = append(args, chatID.String(), toolCallID)
	return scanJournal(t.tx.QueryRowContext(ctx, `UPDATE tool_journal SET `+strings.Join(sets, ", ")+
		` WHERE chat_id = ? AND tool_call_id = ? RETURNING `+journalColumns, args...))
}

// JournalList lists a chat's entries in start order.
func (t *tx) JournalList(ctx context.Context, chatID uuid.UUID, requestID uuid.NullUUID) ([]store.JournalEntry, error) {
	q := `SELECT ` + journalColumns + ` FROM tool_journal WHERE chat_id = ?`
	args := []any{chatID.String()}
	if requestID.Valid {
		q += ` AND request_id = ?`
		args = append(args, requestID.UUID.String())
	}
	rows, err := t.tx.QueryContext(ctx, q+` ORDER BY seq`, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []store.JournalEntry
	for rows.Next() {
		e, err := scanJournal(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, translate(rows.Err())
}
