package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// siblingsColumn is a message read's SiblingIDs (store/versions.go): the
// ids of the rows with the same parent that are not pruned, as a list
// parseIDs reads. It names the outer table chat_messages, so every message
// read selects from it unaliased.
const siblingsColumn = `CASE WHEN chat_messages.pruned = 0 THEN
	(SELECT group_concat(s.id) FROM chat_messages s
	 WHERE s.chat_id = chat_messages.chat_id AND s.parent_id IS chat_messages.parent_id AND s.pruned = 0)
	END`

// parseIDs reads group_concat's comma-separated ids, sorted (group_concat
// promises no order).
func parseIDs(list string) ([]int64, error) {
	if list == "" {
		return nil, nil
	}
	fields := strings.Split(list, ",")
	ids := make([]int64, len(fields))
	for i, f := range fields {
		id, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("read sibling ids %q: %w", list, err)
		}
		ids[i] = id
	}
	slices.Sort(ids)
	return ids, nil
}

// MessageTree returns every message of the chat that is not pruned, in id
// order.
func (t *tx) MessageTree(ctx context.Context, chatID uuid.UUID) ([]store.MessageNode, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT id, parent_id, role, deleted FROM chat_messages
		WHERE chat_id = ? AND pruned = 0 ORDER BY id`, chatID.String())
	if err != nil {
		return nil, fmt.Errorf("read message tree of chat %s: %w", chatID, translate(err))
	}
	nodes, err := collect(rows, func(row rowScanner) (store.MessageNode, error) {
		var (
			n       store.MessageNode
			parent  sql.NullInt64
			deleted int
		)
		if err := row.Scan(&n.ID, &parent, &n.Role, &deleted); err != nil {
			return n, translate(err)
		}
		if parent.Valid {
			p := parent.Int64
			n.ParentID = &p
		}
		n.Deleted = deleted != 0
		return n, nil
	})
	if err != nil {
		return nil, fmt.Errorf("read message tree of chat %s: %w", chatID, err)
	}
	return nodes, nil
}
