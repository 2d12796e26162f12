package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

func scanChat(row pgx.Row) (store.Chat, error) {
	var (
		c                            store.Chat
		lastError, retry, dynTools   []byte
		approvals                    []byte
		labels                       map[string]string
		requiresAction, compactionAt *time.Time
	)
	err := row.Scan(
		&c.ID, &c.OwnerID, &c.ParentChatID, &c.RootChatID, &c.Title, &c.TitleSource,
		&c.TitleUpdatedAt, &c.Status, &c.Archived, &c.WorkerID, &c.RunnerID, &lastError, &retry,
		&c.SnapshotVersion, &c.HistoryVersion, &c.QueueVersion, &c.RetryStateVersion,
		&c.GenerationAttempt, &requiresAction, &compactionAt, &labels,
		&c.PinOrder, &c.LastModelConfigID, &c.LastReasoningEffort, &dynTools,
		&c.MCPServerIDs, &c.ToolApproval, &approvals, &c.CreatedAt, &c.UpdatedAt, &c.ProjectID,
	)
	if err != nil {
		return store.Chat{}, translate(err)
	}
	c.LastError = rawJSON(lastError)
	c.RetryState = rawJSON(retry)
	c.DynamicTools = rawJSON(dynTools)
	c.ToolApprovals = rawJSON(approvals)
	if labels == nil {
		labels = map[string]string{}
	}
	c.Labels = labels
	c.RequiresActionDeadlineAt = utcPtr(requiresAction)
	c.CompactionRequestedAt = utcPtr(compactionAt)
	c.TitleUpdatedAt = utc(c.TitleUpdatedAt)
	c.CreatedAt = utc(c.CreatedAt)
	c.UpdatedAt = utc(c.UpdatedAt)
	return c, nil
}

// ChatInsert creates a chat; the column defaults give snapshot_version = 1
// and every other version 0.
func (t *tx) ChatInsert(ctx context.Context, p store.ChatInsertParams) (store.Chat, error) {
	labels, err := labelsJSON(p.Labels)
	if err != nil {
		return store.Chat{}, err
	}
	// An unset source is the column default: an empty string would fail
	// the check constraint.
	source := p.TitleSource
	if source == "" {
		source = store.TitleSourceFallback
	}
	row := t.tx.QueryRow(ctx, `
		INSERT INTO chats (
			id, owner_id, parent_chat_id, root_chat_id, title, title_source, title_updated_at,
			status, labels, last_model_config_id, last_reasoning_effort, dynamic_tools,
			mcp_server_ids, tool_approval, snapshot_version, history_version, queue_version,
			retry_state_version, generation_attempt, created_at, updated_at, project_id
		) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, 1, 0, 0, 0, 0, $7, $7, $15)
		RETURNING `+query.ChatColumns,
		p.ID, p.OwnerID, p.ParentChatID, p.RootChatID, p.Title, string(source), p.Now,
		string(p.Status), labels, p.LastModelConfigID, p.LastReasoningEffort, p.DynamicTools,
		p.MCPServerIDs, toolApproval(p.ToolApproval), p.ProjectID,
	)
	c, err := scanChat(row)
	if err != nil {
		return store.Chat{}, fmt.Errorf("insert chat %s: %w", p.ID, err)
	}
	t.held(c.ID, lockExclusive)
	return c, nil
}

// ChatLock takes the chat's row lock (FOR UPDATE) for the rest of the
// transaction.
func (t *tx) ChatLock(ctx context.Context, id uuid.UUID) (store.Chat, error) {
	if c, ok := t.cachedChat(id, lockExclusive); ok {
		return c, nil // held already, and unchanged since read
	}
	c, err := scanChat(t.tx.QueryRow(ctx, `SELECT `+query.ChatColumns+` FROM chats WHERE id = $1 FOR UPDATE`, id))
	if err != nil {
		return store.Chat{}, fmt.Errorf("lock chat %s: %w", id, err)
	}
	t.held(id, lockExclusive)
	t.keepChat(c)
	return c, nil
}

// ChatLockShared takes a shared row lock (FOR SHARE): it keeps the row from
// changing without serialising other readers that lock it the same way.
func (t *tx) ChatLockShared(ctx context.Context, id uuid.UUID) (store.Chat, error) {
	if c, ok := t.cachedChat(id, lockShared); ok {
		return c, nil
	}
	c, err := scanChat(t.tx.QueryRow(ctx, `SELECT `+query.ChatColumns+` FROM chats WHERE id = $1 FOR SHARE`, id))
	if err != nil {
		return store.Chat{}, fmt.Errorf("lock chat %s shared: %w", id, err)
	}
	t.held(id, lockShared)
	t.keepChat(c)
	return c, nil
}

// ChatGet reads a chat without locking it.
func (t *tx) ChatGet(ctx context.Context, id uuid.UUID) (store.Chat, error) {
	if c, ok := t.cachedChat(id, lockShared); ok {
		return c, nil
	}
	c, err := scanChat(t.tx.QueryRow(ctx, `SELECT `+query.ChatColumns+` FROM chats WHERE id = $1`, id))
	if err != nil {
		return store.Chat{}, fmt.Errorf("get chat %s: %w", id, err)
	}
	t.keepChat(c)
	return c, nil
}

// ChatGetMany reads the chats with the given ids; missing ids are skipped.
func (t *tx) ChatGetMany(ctx context.Context, ids []uuid.UUID) ([]store.Chat, error) {
	if len(ids) == 0 {
		return []store.Chat{}, nil
	}
	rows, err := t.tx.Query(ctx, `SELECT `+query.ChatColumns+` FROM chats WHERE id = ANY($1::uuid[])`, ids)
	if err != nil {
		return nil, fmt.Errorf("get chats: %w", translate(err))
	}
	chats, err := collect(rows, scanChat)
	if err != nil {
		return nil, fmt.Errorf("get chats: %w", err)
	}
	return chats, nil
}

// ChatBumpSnapshot advances snapshot_version by one and returns it.
func (t *tx) ChatBumpSnapshot(ctx context.Context, id uuid.UUID) (int64, error) {
	var v int64
	err := t.tx.QueryRow(ctx,
		query.ChatBumpSnapshot,
		id).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("bump snapshot of chat %s: %w", id, translate(err))
	}
	t.held(id, lockExclusive)
	return v, nil
}

// ChatUpdate writes only the fields set in p. The version columns are never
// written here: the triggers own them, and writing retry_state_version
// directly is refused by the database anyway.
func (t *tx) ChatUpdate(ctx context.Context, id uuid.UUID, p store.ChatPatch) (store.Chat, error) {
	as := p.Assignments()
	if len(as) == 0 {
		return t.ChatGet(ctx, id)
	}
	var a args
	sets, err := setClause(as, &a)
	if err != nil {
		return store.Chat{}, fmt.Errorf("update chat %s: %w", id, err)
	}
	stmt := `UPDATE chats SET ` + sets + ` WHERE id = ` + a.add(id) + ` RETURNING ` + query.ChatColumns
	c, err := scanChat(t.tx.QueryRow(ctx, stmt, a...))
	if err != nil {
		return store.Chat{}, fmt.Errorf("update chat %s: %w", id, err)
	}
	t.wroteChat(c)
	return c, nil
}

// wroteChat notes a row an UPDATE ... RETURNING gave back: the update
// locked it, and it is the row as it is now.
func (t *tx) wroteChat(c store.Chat) {
	t.held(c.ID, lockExclusive)
	t.keepChat(c)
}

// ChatIncrementGenerationAttempt adds one to generation_attempt; the retry
// trigger clears retry_state with it.
func (t *tx) ChatIncrementGenerationAttempt(ctx context.Context, id uuid.UUID) (store.Chat, error) {
	c, err := scanChat(t.tx.QueryRow(ctx,
		`UPDATE chats SET generation_attempt = generation_attempt + 1 WHERE id = $1 RETURNING `+query.ChatColumns, id))
	if err != nil {
		return store.Chat{}, fmt.Errorf("increment generation attempt of chat %s: %w", id, err)
	}
	t.wroteChat(c)
	return c, nil
}

// ChatTouchHistory records a history change without writing a message, the
// way the message trigger does: history_version catches up with
// snapshot_version and generation_attempt restarts (which, through the retry
// trigger, also clears retry_state).
func (t *tx) ChatTouchHistory(ctx context.Context, id uuid.UUID) (store.Chat, error) {
	c, err := scanChat(t.tx.QueryRow(ctx,
		`UPDATE chats SET history_version = snapshot_version, generation_attempt = 0 WHERE id = $1 RETURNING `+query.ChatColumns, id))
	if err != nil {
		return store.Chat{}, fmt.Errorf("touch history of chat %s: %w", id, err)
	}
	t.wroteChat(c)
	return c, nil
}

// ChatDelete removes a chat; its messages, queue, heartbeats and child chats
// go with it (ON DELETE CASCADE).
func (t *tx) ChatDelete(ctx context.Context, id uuid.UUID) error {
	tag, err := t.tx.Exec(ctx, query.ChatDelete, id)
	if err != nil {
		return fmt.Errorf("delete chat %s: %w", id, translate(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete chat %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// ChatDescendants returns every chat of rootID's family except the root.
func (t *tx) ChatDescendants(ctx context.Context, rootID uuid.UUID) ([]store.Chat, error) {
	rows, err := t.tx.Query(ctx,
		query.ChatDescendants, rootID)
	if err != nil {
		return nil, fmt.Errorf("list descendants of chat %s: %w", rootID, translate(err))
	}
	chats, err := collect(rows, scanChat)
	if err != nil {
		return nil, fmt.Errorf("list descendants of chat %s: %w", rootID, err)
	}
	return chats, nil
}

// chatListQuery is ChatList's query. Each filter is an index range
// (migration 00018): owner and archived, archived alone, labels.
func chatListQuery(p store.ChatListParams) (string, args, error) {
	var (
		a     args
		where []string
	)
	if p.OwnerID.Valid {
		where = append(where, "owner_id = "+a.add(p.OwnerID.UUID))
	}
	if p.Archived != nil {
		where = append(where, "archived = "+a.add(*p.Archived))
	}
	if p.ProjectID.Valid {
		where = append(where, "project_id = "+a.add(p.ProjectID.UUID))
	}
	if p.Query != "" {
		// Titles and message text; see search.go.
		where = append(where, searchWhere(p.Query, &a))
	}
	if len(p.Labels) > 0 {
		labels, err := labelsJSON(p.Labels)
		if err != nil {
			return "", nil, err
		}
		where = append(where, "labels @> "+a.add(labels)+"::jsonb")
	}
	if p.AfterID.Valid {
		// Row comparison matches the (updated_at DESC, id DESC) order and
		// the index; an unknown cursor compares with NULL and selects nothing.
		where = append(where,
			"(updated_at, id) < (SELECT c.updated_at, c.id FROM chats c WHERE c.id = "+a.add(p.AfterID.UUID)+")")
	}
	stmt := query.ChatList
	if len(where) > 0 {
		stmt += ` WHERE ` + strings.Join(where, " AND ")
	}
	stmt += ` ORDER BY updated_at DESC, id DESC LIMIT ` + a.add(store.ListLimit(p.Limit))
	return stmt, a, nil
}

// ChatList lists chats newest first by (updated_at, id), paging by keyset
// after p.AfterID. A cursor whose chat no longer exists yields an empty page.
func (t *tx) ChatList(ctx context.Context, p store.ChatListParams) ([]store.Chat, error) {
	stmt, a, err := chatListQuery(p)
	if err != nil {
		return nil, err
	}
	rows, err := t.tx.Query(ctx, stmt, a...)
	if err != nil {
		return nil, fmt.Errorf("list chats: %w", translate(err))
	}
	chats, err := collect(rows, scanChat)
	if err != nil {
		return nil, fmt.Errorf("list chats: %w", err)
	}
	return chats, nil
}

// ChatCountByOwner counts the chats a user owns.
func (t *tx) ChatCountByOwner(ctx context.Context, ownerID uuid.UUID) (int64, error) {
	var n int64
	if err := t.tx.QueryRow(ctx,
		query.ChatCountByOwner, ownerID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count chats of owner %s: %w", ownerID, translate(err))
	}
	return n, nil
}

// toolApproval is the column value of a new chat's policy: the column
// default for an unset one (an empty string would fail its check).
func toolApproval(p string) string {
	if p == "" {
		return store.ApprovalNever
	}
	return p
}

// ChatListArchivable lists the auto-archive candidates: old, unused root
// chat families (see store.Reader).
func (t *tx) ChatListArchivable(ctx context.Context, p store.ArchivableParams) ([]store.Chat, error) {
	var a args
	cutoff := a.add(p.Cutoff)
	rows, err := t.tx.Query(ctx, `SELECT `+qualified("c", query.ChatColumns)+` FROM chats c
		WHERE c.root_chat_id IS NULL AND NOT c.archived AND c.pin_order = 0
		AND c.status NOT IN ('running', 'interrupting', 'requires_action')
		AND c.created_at < `+cutoff+`
		AND NOT EXISTS (SELECT 1 FROM chats d WHERE d.root_chat_id = c.id
			AND d.status IN ('running', 'interrupting', 'requires_action'))
		AND NOT EXISTS (SELECT 1 FROM chat_messages m WHERE NOT m.deleted AND m.created_at >= `+cutoff+`
			AND (m.chat_id = c.id OR m.chat_id IN (SELECT d.id FROM chats d WHERE d.root_chat_id = c.id)))
		ORDER BY c.created_at, c.id
		LIMIT `+a.add(store.ListLimit(p.Limit)), a...)
	if err != nil {
		return nil, fmt.Errorf("list archivable chats: %w", translate(err))
	}
	chats, err := collect(rows, scanChat)
	if err != nil {
		return nil, fmt.Errorf("list archivable chats: %w", err)
	}
	return chats, nil
}

// MessageNewestInFamily reads the newest non-deleted message time of a
// root chat's family.
func (t *tx) MessageNewestInFamily(ctx context.Context, rootID uuid.UUID) (time.Time, bool, error) {
	var at *time.Time
	err := t.tx.QueryRow(ctx, `SELECT MAX(m.created_at) FROM chat_messages m
		WHERE NOT m.deleted AND (m.chat_id = $1 OR m.chat_id IN (SELECT d.id FROM chats d WHERE d.root_chat_id = $1))`,
		rootID).Scan(&at)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("newest message in family of chat %s: %w", rootID, translate(err))
	}
	if at == nil {
		return time.Time{}, false, nil
	}
	return at.UTC(), true, nil
}
