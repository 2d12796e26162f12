package postgres

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chatd/chatd/store"
)

// siblingsColumn is a message read's SiblingIDs (store/versions.go): the
// ids of the rows with the same parent that are not pruned, oldest first.
// It names the outer table chat_messages, so every message read selects
// from it unaliased.
const siblingsColumn = `CASE WHEN NOT chat_messages.pruned THEN
	CASE WHEN chat_messages.parent_id IS NULL THEN
		ARRAY(SELECT s.id FROM chat_messages s
		      WHERE s.chat_id = chat_messages.chat_id AND s.parent_id IS NULL AND NOT s.pruned ORDER BY s.id)
	ELSE
		ARRAY(SELECT s.id FROM chat_messages s
		      WHERE s.chat_id = chat_messages.chat_id AND s.parent_id = chat_messages.parent_id AND NOT s.pruned ORDER BY s.id)
	END
	END`

// withSiblings fills the SiblingIDs of a row an INSERT or UPDATE returned.
func (t *tx) withSiblings(ctx context.Context, row pgx.Row) (store.Message, error) {
	m, err := scanMessage(row)
	if err != nil || m.Pruned {
		return m, err
	}
	err = t.tx.QueryRow(ctx, `SELECT `+siblingsColumn+` FROM chat_messages WHERE chat_id = $1 AND id = $2`,
		m.ChatID, m.ID).Scan(&m.SiblingIDs)
	if err != nil {
		return store.Message{}, fmt.Errorf("read versions of message %d: %w", m.ID, translate(err))
	}
	return m, nil
}

// MessageTree returns every message of the chat that is not pruned, in id
// order.
func (t *tx) MessageTree(ctx context.Context, chatID uuid.UUID) ([]store.MessageNode, error) {
	rows, err := t.tx.Query(ctx, `SELECT id, parent_id, role, deleted FROM chat_messages
		WHERE chat_id = $1 AND NOT pruned ORDER BY id`, chatID)
	if err != nil {
		return nil, fmt.Errorf("read message tree of chat %s: %w", chatID, translate(err))
	}
	nodes, err := collect(rows, func(row pgx.Row) (store.MessageNode, error) {
		var n store.MessageNode
		err := row.Scan(&n.ID, &n.ParentID, &n.Role, &n.Deleted)
		return n, translate(err)
	})
	if err != nil {
		return nil, fmt.Errorf("read message tree of chat %s: %w", chatID, err)
	}
	return nodes, nil
}
