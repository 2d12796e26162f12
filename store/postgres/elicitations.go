package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

func scanElicitation(row pgx.Row) (store.Elicitation, error) {
	var (
		e               store.Elicitation
		schema, content []byte
	)
	if err := row.Scan(&e.ID, &e.ChatID, &e.ToolCallID, &e.Server, &e.Mode, &e.Message, &schema, &e.URL, &e.State,
		&content, &e.CreatedAt, &e.HeldUntil, &e.AnsweredAt, &e.SlotRunnerID); err != nil {
		return store.Elicitation{}, translate(err)
	}
	if schema != nil {
		e.Schema = json.RawMessage(schema)
	}
	if content != nil {
		e.Content = json.RawMessage(content)
	}
	e.CreatedAt, e.HeldUntil, e.AnsweredAt = utc(e.CreatedAt), utc(e.HeldUntil), utcPtr(e.AnsweredAt)
	return e, nil
}

// ElicitationInsert stores a new pending question.
func (t *tx) ElicitationInsert(ctx context.Context, e store.Elicitation) (store.Elicitation, error) {
	out, err := scanElicitation(t.tx.QueryRow(ctx,
		query.ElicitationInsert,
		e.ID, e.ChatID, e.ToolCallID, e.Server, e.Mode, e.Message, nullJSONB(e.Schema), e.URL, e.CreatedAt, e.HeldUntil,
		e.SlotRunnerID))
	if err != nil {
		return store.Elicitation{}, fmt.Errorf("insert elicitation %s: %w", e.ID, err)
	}
	return out, nil
}

// ElicitationGet reads one question.
func (t *tx) ElicitationGet(ctx context.Context, id uuid.UUID) (store.Elicitation, error) {
	e, err := scanElicitation(t.tx.QueryRow(ctx, query.ElicitationGet, id))
	if err != nil {
		return store.Elicitation{}, fmt.Errorf("get elicitation %s: %w", id, err)
	}
	return e, nil
}

// ElicitationListPending lists a chat's unanswered questions.
func (t *tx) ElicitationListPending(ctx context.Context, chatID uuid.UUID) ([]store.Elicitation, error) {
	rows, err := t.tx.Query(ctx, query.ElicitationListPending, chatID)
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
	e, err := scanElicitation(t.tx.QueryRow(ctx,
		query.ElicitationAnswer,
		p.State, nullJSONB(p.Content), p.Now, id))
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
	_, err := t.tx.Exec(ctx, `UPDATE chat_elicitations SET held_until = $1
		WHERE (state = 'pending' OR slot_runner_id IS NOT NULL) AND id = ANY($2)`, heldUntil, ids)
	if err != nil {
		return fmt.Errorf("renew elicitations: %w", translate(err))
	}
	return nil
}

// ElicitationExpire cancels the pending questions whose hold ended.
func (t *tx) ElicitationExpire(ctx context.Context, now time.Time) ([]store.Elicitation, error) {
	if _, err := t.tx.Exec(ctx, query.ElicitationExpire, now); err != nil {
		return nil, fmt.Errorf("expire elicitations: %w", translate(err))
	}
	rows, err := t.tx.Query(ctx, `UPDATE chat_elicitations SET state = 'cancel', answered_at = $1, slot_runner_id = NULL
		WHERE state = 'pending' AND held_until < $1 RETURNING `+query.ElicitationColumns, now)
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
	if _, err := t.tx.Exec(ctx, query.ElicitationResumeSlot, id); err != nil {
		return fmt.Errorf("resume slot of elicitation %s: %w", id, translate(err))
	}
	return nil
}
