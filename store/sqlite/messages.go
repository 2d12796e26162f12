package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// messageColumns lists the chat_messages columns in the order scanMessage
// reads them.
const messageColumns = `id, chat_id, role, content, visibility, compressed, deleted, revision,
	queued_message_id, created_by, model_config_id, reasoning_effort,
	input_tokens, output_tokens, total_tokens, reasoning_tokens,
	cache_creation_tokens, cache_read_tokens, context_limit, request_id, created_at,
	parent_id, pruned, ` + siblingsColumn

func scanMessage(row rowScanner) (store.Message, error) {
	var (
		m                         store.Message
		chatID, content, created  string
		createdBy, modelID, reqID sql.NullString
		compressed, deleted       int
		revision, queued          sql.NullInt64
		usage                     [7]sql.NullInt64
		parent                    sql.NullInt64
		pruned                    int
		siblings                  sql.NullString
	)
	err := row.Scan(&m.ID, &chatID, &m.Role, &content, &m.Visibility, &compressed, &deleted,
		&revision, &queued, &createdBy, &modelID, &m.ReasoningEffort, &usage[0], &usage[1],
		&usage[2], &usage[3], &usage[4], &usage[5], &usage[6], &reqID, &created,
		&parent, &pruned, &siblings)
	if err != nil {
		return store.Message{}, translate(err)
	}
	var s scanner
	s.uuid(&m.ChatID, chatID)
	s.nullUUID(&m.CreatedBy, createdBy)
	s.nullUUID(&m.ModelConfigID, modelID)
	s.nullUUID(&m.RequestID, reqID)
	s.time(&m.CreatedAt, created)
	if s.err != nil {
		return store.Message{}, s.err
	}
	m.Content = json.RawMessage(content)
	m.Compressed = compressed != 0
	m.Deleted = deleted != 0
	m.Revision = revision.Int64
	if parent.Valid {
		p := parent.Int64
		m.ParentID = &p
	}
	m.Pruned = pruned != 0
	if m.SiblingIDs, err = parseIDs(siblings.String); err != nil {
		return store.Message{}, err
	}
	if queued.Valid {
		q := queued.Int64
		m.QueuedMessageID = &q
	}
	// Usage is written as a whole or not at all; any non-NULL column means
	// the message carried usage.
	for _, v := range usage {
		if v.Valid {
			m.Usage = &store.Usage{
				InputTokens:         usage[0].Int64,
				OutputTokens:        usage[1].Int64,
				TotalTokens:         usage[2].Int64,
				ReasoningTokens:     usage[3].Int64,
				CacheCreationTokens: usage[4].Int64,
				CacheReadTokens:     usage[5].Int64,
				ContextLimit:        usage[6].Int64,
			}
			break
		}
	}
	return m, nil
}

// readMessage reads one message; callers add the context of their operation.
func (t *tx) readMessage(ctx context.Context, chatID uuid.UUID, id int64) (store.Message, error) {
	return scanMessage(t.tx.QueryRowContext(ctx,
		`SELECT `+messageColumns+` FROM chat_messages WHERE chat_id = ? AND id = ?`, chatID.String(), id))
}

// MessageInsert appends a message. revision is never sent: the insert
// trigger assigns it from the chat's snapshot_version and moves
// history_version.
func (t *tx) MessageInsert(ctx context.Context, p store.MessageInsertParams) (store.Message, error) {
	if err := checkJSON(p.Content); err != nil {
		return store.Message{}, fmt.Errorf("insert message in chat %s: %w", p.ChatID, err)
	}
	visibility := p.Visibility
	if visibility == "" {
		visibility = store.VisibilityBoth
	}
	var usage [7]any
	if u := p.Usage; u != nil {
		usage = [7]any{
			u.InputTokens, u.OutputTokens, u.TotalTokens, u.ReasoningTokens,
			u.CacheCreationTokens, u.CacheReadTokens, u.ContextLimit,
		}
	}
	var id int64
	err := t.tx.QueryRowContext(ctx, `
		INSERT INTO chat_messages (
			chat_id, role, content, visibility, compressed, queued_message_id, created_by,
			model_config_id, reasoning_effort, input_tokens, output_tokens, total_tokens,
			reasoning_tokens, cache_creation_tokens, cache_read_tokens, context_limit, request_id,
			created_at, parent_id
		) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,
			(SELECT max(id) FROM chat_messages WHERE chat_id = ?1 AND deleted = 0))
		RETURNING id`,
		p.ChatID.String(), p.Role, nullJSON(p.Content), visibility, boolInt(p.Compressed),
		nullInt(p.QueuedMessageID), nullUUID(p.CreatedBy), nullUUID(p.ModelConfigID), p.ReasoningEffort,
		usage[0], usage[1], usage[2], usage[3], usage[4], usage[5], usage[6],
		nullUUID(p.RequestID), ts(p.Now),
	).Scan(&id)
	if err != nil {
		return store.Message{}, fmt.Errorf("insert message in chat %s: %w", p.ChatID, translate(err))
	}
	// RETURNING reports the row before AFTER triggers ran; read it back for
	// the trigger-assigned revision.
	m, err := t.readMessage(ctx, p.ChatID, id)
	if err != nil {
		return store.Message{}, fmt.Errorf("insert message in chat %s: %w", p.ChatID, err)
	}
	return m, nil
}

// MessageGet reads one message of a chat.
func (t *tx) MessageGet(ctx context.Context, chatID uuid.UUID, id int64) (store.Message, error) {
	m, err := t.readMessage(ctx, chatID, id)
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
		` WHERE chat_id = ` + a.add(chatID.String()) + ` AND id = ` + a.add(id)
	n, err := t.exec(ctx, stmt, a...)
	if err == nil && n == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Message{}, fmt.Errorf("update message %d of chat %s: %w", id, chatID, err)
	}
	// Read back after the revision trigger ran.
	m, err := t.readMessage(ctx, chatID, id)
	if err != nil {
		return store.Message{}, fmt.Errorf("update message %d of chat %s: %w", id, chatID, err)
	}
	return m, nil
}

// MessageList returns a chat's messages in id order (newest first when
// p.Descending).
func (t *tx) MessageList(ctx context.Context, chatID uuid.UUID, p store.MessageListParams) ([]store.Message, error) {
	var a args
	stmt := `SELECT ` + messageColumns + ` FROM chat_messages WHERE chat_id = ` + a.add(chatID.String())
	if !p.IncludeDeleted {
		stmt += ` AND deleted = 0`
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
	rows, err := t.tx.QueryContext(ctx, stmt, a...)
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
	rows, err := t.tx.QueryContext(ctx, `
		UPDATE chat_messages SET deleted = 1
		WHERE chat_id = ? AND id >= ? AND deleted = 0
		RETURNING id`, chatID.String(), fromID)
	if err != nil {
		return nil, fmt.Errorf("soft-delete messages of chat %s from %d: %w", chatID, fromID, translate(err))
	}
	ids, err := collect(rows, func(row rowScanner) (int64, error) {
		var id int64
		err := row.Scan(&id)
		return id, translate(err)
	})
	if err != nil {
		return nil, fmt.Errorf("soft-delete messages of chat %s from %d: %w", chatID, fromID, err)
	}
	// RETURNING has no ORDER BY (and SQLite has no data-modifying CTE).
	slices.Sort(ids)
	return ids, nil
}
