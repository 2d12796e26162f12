package postgres

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chatd/chatd/store"
)

// rowColumns lists the chat_messages columns in the order scanMessage
// reads them, before SiblingIDs.
const rowColumns = `id, chat_id, role, content, visibility, compressed, deleted, revision,
	queued_message_id, created_by, model_config_id, reasoning_effort,
	input_tokens, output_tokens, total_tokens, reasoning_tokens,
	cache_creation_tokens, cache_read_tokens, context_limit, request_id, created_at,
	parent_id, pruned`

// messageColumns is what a SELECT reads: the row and its SiblingIDs.
const messageColumns = rowColumns + `, ` + siblingsColumn

// returningColumns is what an INSERT or UPDATE returns: a RETURNING
// subquery sees the table as it was before the statement, so the siblings
// are read after it (withSiblings).
const returningColumns = rowColumns + `, NULL::bigint[]`

func scanMessage(row pgx.Row) (store.Message, error) {
	var (
		m       store.Message
		content []byte
		usage   [7]*int64
	)
	err := row.Scan(
		&m.ID, &m.ChatID, &m.Role, &content, &m.Visibility, &m.Compressed, &m.Deleted, &m.Revision,
		&m.QueuedMessageID, &m.CreatedBy, &m.ModelConfigID, &m.ReasoningEffort,
		&usage[0], &usage[1], &usage[2], &usage[3], &usage[4], &usage[5], &usage[6],
		&m.RequestID, &m.CreatedAt, &m.ParentID, &m.Pruned, &m.SiblingIDs,
	)
	if err != nil {
		return store.Message{}, translate(err)
	}
	m.Content = rawJSON(content)
	m.CreatedAt = utc(m.CreatedAt)
	// Usage is written as a whole or not at all; any non-NULL column means
	// the message carried usage.
	for _, v := range usage {
		if v != nil {
			m.Usage = &store.Usage{
				InputTokens:         deref(usage[0]),
				OutputTokens:        deref(usage[1]),
				TotalTokens:         deref(usage[2]),
				ReasoningTokens:     deref(usage[3]),
				CacheCreationTokens: deref(usage[4]),
				CacheReadTokens:     deref(usage[5]),
				ContextLimit:        deref(usage[6]),
			}
			break
		}
	}
	return m, nil
}

func deref(v *int64) int64 {
	if v == nil {
		return 0
	}
	return *v
}

// MessageInsert appends a message. revision is never sent: the insert
// trigger assigns it from the chat's snapshot_version and moves
// history_version.
func (t *tx) MessageInsert(ctx context.Context, p store.MessageInsertParams) (store.Message, error) {
	visibility := p.Visibility
	if visibility == "" {
		visibility = store.VisibilityBoth
	}
	var usage [7]*int64
	if u := p.Usage; u != nil {
		usage = [7]*int64{
			&u.InputTokens, &u.OutputTokens, &u.TotalTokens, &u.ReasoningTokens,
			&u.CacheCreationTokens, &u.CacheReadTokens, &u.ContextLimit,
		}
	}
	row := t.tx.QueryRow(ctx, `
		INSERT INTO chat_messages (
			chat_id, role, content, visibility, compressed, queued_message_id, created_by,
			model_config_id, reasoning_effort, input_tokens, output_tokens, total_tokens,
			reasoning_tokens, cache_creation_tokens, cache_read_tokens, context_limit, request_id,
			created_at, parent_id
		) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
			(SELECT max(id) FROM chat_messages WHERE chat_id = $1 AND NOT deleted))
		RETURNING `+returningColumns,
		p.ChatID, p.Role, p.Content, visibility, p.Compressed, p.QueuedMessageID, p.CreatedBy,
		p.ModelConfigID, p.ReasoningEffort, usage[0], usage[1], usage[2],
		usage[3], usage[4], usage[5], usage[6], p.RequestID, p.Now,
	)
	m, err := t.withSiblings(ctx, row)
	if err != nil {
		return store.Message{}, fmt.Errorf("insert message in chat %s: %w", p.ChatID, err)
	}
	return m, nil
}

// MessageGet reads one message of a chat.
func (t *tx) MessageGet(ctx context.Context, chatID uuid.UUID, id int64) (store.Message, error) {
	m, err := scanMessage(t.tx.QueryRow(ctx,
		`SELECT `+messageColumns+` FROM chat_messages WHERE chat_id = $1 AND id = $2`, chatID, id))
	if err != nil {
		return store.Message{}, fmt.Errorf("get message %d of chat %s: %w", id, chatID, err)
	}
	return m, nil
}

// MessageUpdate writes the fields set in p. An update that changes nothing
// leaves revision and history_version alone (the trigger compares rows).
func (t *tx) MessageUpdate(ctx context.Context, chatID uuid.UUID, id int64, p store.MessagePatch) (store.Message, error) {
	as := p.Assignments()
	if len(as) == 0 {
		return t.MessageGet(ctx, chatID, id)
	}
	var a args
	sets, err := setClause(as, &a)
	if err != nil {
		return store.Message{}, fmt.Errorf("update message %d of chat %s: %w", id, chatID, err)
	}
	stmt := `UPDATE chat_messages SET ` + sets +
		` WHERE chat_id = ` + a.add(chatID) + ` AND id = ` + a.add(id) +
		` RETURNING ` + returningColumns
	m, err := t.withSiblings(ctx, t.tx.QueryRow(ctx, stmt, a...))
	if err != nil {
		return store.Message{}, fmt.Errorf("update message %d of chat %s: %w", id, chatID, err)
	}
	return m, nil
}

// MessageList returns a chat's messages in id order (newest first when
// p.Descending).
func (t *tx) MessageList(ctx context.Context, chatID uuid.UUID, p store.MessageListParams) ([]store.Message, error) {
	var a args
	stmt := `SELECT ` + messageColumns + ` FROM chat_messages WHERE chat_id = ` + a.add(chatID)
	if !p.IncludeDeleted {
		stmt += ` AND NOT deleted`
	}
	if p.PeopleOnly {
		stmt += ` AND visibility <> 'model'`
	}
	if p.RevisionAfter > 0 {
		stmt += ` AND revision > ` + a.add(p.RevisionAfter)
	}
	if p.AfterID > 0 {
		stmt += ` AND id > ` + a.add(p.AfterID)
	}
	if p.BeforeID > 0 {
		stmt += ` AND id < ` + a.add(p.BeforeID)
	}
	if p.Descending {
		stmt += ` ORDER BY id DESC`
	} else {
		stmt += ` ORDER BY id`
	}
	if p.Limit > 0 {
		stmt += ` LIMIT ` + a.add(p.Limit)
	}
	rows, err := t.tx.Query(ctx, stmt, a...)
	if err != nil {
		return nil, fmt.Errorf("list messages of chat %s: %w", chatID, translate(err))
	}
	msgs, err := collect(rows, scanMessage)
	if err != nil {
		return nil, fmt.Errorf("list messages of chat %s: %w", chatID, err)
	}
	return msgs, nil
}

// MessageSoftDeleteFrom marks every live message with id >= fromID as
// deleted and returns their ids in ascending order.
func (t *tx) MessageSoftDeleteFrom(ctx context.Context, chatID uuid.UUID, fromID int64) ([]int64, error) {
	// RETURNING has no ORDER BY; sort in a CTE so the order is guaranteed.
	rows, err := t.tx.Query(ctx, `
		WITH gone AS (
			UPDATE chat_messages SET deleted = true
			WHERE chat_id = $1 AND id >= $2 AND NOT deleted
			RETURNING id
		)
		SELECT id FROM gone ORDER BY id`, chatID, fromID)
	if err != nil {
		return nil, fmt.Errorf("soft-delete messages of chat %s from %d: %w", chatID, fromID, translate(err))
	}
	ids, err := collect(rows, func(row pgx.Row) (int64, error) {
		var id int64
		err := row.Scan(&id)
		return id, translate(err)
	})
	if err != nil {
		return nil, fmt.Errorf("soft-delete messages of chat %s from %d: %w", chatID, fromID, err)
	}
	return ids, nil
}
