package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

func scanElicitation(row rowScanner) (store.Elicitation, error) {
	var (
		e                         store.Elicitation
		id, chat, created, held   string
		schema, content, answered sql.NullString
		slotRunner                sql.NullString
	)
	if err := row.Scan(&id, &chat, &e.ToolCallID, &e.Server, &e.Mode, &e.Message, &schema, &e.URL, &e.State,
		&content, &created, &held, &answered, &slotRunner); err != nil {
		return store.Elicitation{}, translate(err)
	}
	var s scanner
	s.uuid(&e.ID, id)
	s.uuid(&e.ChatID, chat)
	s.time(&e.CreatedAt, created)
	s.time(&e.HeldUntil, held)
	s.timePtr(&e.AnsweredAt, answered)
	s.nullUUID(&e.SlotRunnerID, slotRunner)
	e.Schema, e.Content = rawJSON(schema), rawJSON(content)
	return e, s.err
}

func nullText(b json.RawMessage) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// ElicitationInsert stores a new pending question.
func (t *tx) ElicitationInsert(ctx context.Context, e store.Elicitation) (store.Elicitation, error) {
	out, err := scanElicitation(t.tx.QueryRowContext(ctx,
		query.ElicitationInsert,
		e.ID.String(), e.ChatID.String(), e.ToolCallID, e.Server, e.Mode, e.Message, nullText(e.Schema), e.URL,
		ts(e.CreatedAt), ts(e.HeldUntil), nullUUID(e.SlotRunnerID)))
	if err != nil {
		return store.Elicitation{}, fmt.Errorf("insert elicitation %s: %w", e.ID, err)
	}
	return out, nil
}

// ElicitationGet reads one question.
func (t *tx) ElicitationGet(ctx context.Context, id uuid.UUID) (store.Elicitation, error) {
	e, err := scanElicitation(t.tx.QueryRowContext(ctx,
		query.ElicitationGet, id.String()))
	if err != nil {
		return store.Elicitation{}, fmt.Errorf("get elicitation %s: %w", id, err)
	}
	return e, nil
}

// ElicitationListPending lists a chat's unanswered questions.
func (t *tx) ElicitationListPending(ctx context.Context, chatID uuid.UUID) ([]store.Elicitation, error) {
	rows, err := t.tx.QueryContext(ctx, query.ElicitationListPending, chatID.String())
	if err != nil {
		return nil, fmt.Errorf("list elicitations of chat %s: %w", chatID, translate(err))
	}
	out, err := collect(rows, scanElicitation)
	if err != nil {
		return nil, fmt.Errorf("list elicitations of chat %s: %w", chatID, err)
	}
	return out, nil
}

// ElicitationAnswer answers a pending question.
func (t *tx) ElicitationAnswer(ctx context.Context, id uuid.UUID, p store.ElicitationAnswerParams) (store.Elicitation, bool, error) {
	e, err := scanElicitation(t.tx.QueryRowContext(ctx,
		query.ElicitationAnswer,
		p.State, nullText(p.Content), ts(p.Now), id.String()))
	if err == nil {
		return e, true, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return store.Elicitation{}, false, fmt.Errorf("answer elicitation %s: %w", id, err)
	}
	e, err = t.ElicitationGet(ctx, id)
	return e, false, err
}

// ElicitationRenew extends the hold of pending questions.
func (t *tx) ElicitationRenew(ctx context.Context, ids []uuid.UUID, heldUntil time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return fmt.Errorf("renew elicitations: encode ids: %w", err)
	}
	_, err = t.tx.ExecContext(ctx, `UPDATE chat_elicitations SET held_until = ?
		WHERE (state = 'pending' OR slot_runner_id IS NOT NULL) AND id IN (SELECT value FROM json_each(?))`, ts(heldUntil), string(list))
	if err != nil {
		return fmt.Errorf("renew elicitations: %w", translate(err))
	}
	return nil
}

// ElicitationExpire cancels the pending questions whose hold ended.
func (t *tx) ElicitationExpire(ctx context.Context, now time.Time) ([]store.Elicitation, error) {
	if _, err := t.tx.ExecContext(ctx, query.ElicitationExpire, ts(now)); err != nil {
		return nil, fmt.Errorf("expire elicitations: %w", translate(err))
	}
	rows, err := t.tx.QueryContext(ctx, `UPDATE chat_elicitations SET state = 'cancel', answered_at = ?, slot_runner_id = NULL
		WHERE state = 'pending' AND held_until < ? RETURNING `+query.ElicitationColumns, ts(now), ts(now))
	if err != nil {
		return nil, fmt.Errorf("expire elicitations: %w", translate(err))
	}
	out, err := collect(rows, scanElicitation)
	if err != nil {
		return nil, fmt.Errorf("expire elicitations: %w", err)
	}
	return out, nil
}

// ElicitationResumeSlot ends a question's slot release.
func (t *tx) ElicitationResumeSlot(ctx context.Context, id uuid.UUID) error {
	if _, err := t.tx.ExecContext(ctx, query.ElicitationResumeSlot, id.String()); err != nil {
		return fmt.Errorf("resume slot of elicitation %s: %w", id, translate(err))
	}
	return nil
}
