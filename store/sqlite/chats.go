package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

func scanChat(row rowScanner) (store.Chat, error) {
	var (
		c                                           store.Chat
		id, owner, titleUpdated, created, updated   string
		parent, root, worker, runner, lastErr, rs   sql.NullString
		deadline, compaction, modelID, dynamicTools sql.NullString
		mcpServers, approvals, project              sql.NullString
		labels                                      string
		archived                                    int
		status, source                              string
	)
	err := row.Scan(&id, &owner, &parent, &root, &c.Title, &source, &titleUpdated, &status,
		&archived, &worker, &runner, &lastErr, &rs, &c.SnapshotVersion, &c.HistoryVersion,
		&c.QueueVersion, &c.RetryStateVersion, &c.GenerationAttempt, &deadline, &compaction,
		&labels, &c.PinOrder, &modelID, &c.LastReasoningEffort, &dynamicTools, &mcpServers,
		&c.ToolApproval, &approvals, &created, &updated, &project)
	if err != nil {
		return store.Chat{}, translate(err)
	}
	var s scanner
	s.uuid(&c.ID, id)
	s.uuid(&c.OwnerID, owner)
	s.nullUUID(&c.ParentChatID, parent)
	s.nullUUID(&c.RootChatID, root)
	s.nullUUID(&c.WorkerID, worker)
	s.nullUUID(&c.RunnerID, runner)
	s.nullUUID(&c.LastModelConfigID, modelID)
	s.nullUUID(&c.ProjectID, project)
	s.time(&c.TitleUpdatedAt, titleUpdated)
	s.time(&c.CreatedAt, created)
	s.time(&c.UpdatedAt, updated)
	s.timePtr(&c.RequiresActionDeadlineAt, deadline)
	s.timePtr(&c.CompactionRequestedAt, compaction)
	if s.err != nil {
		return store.Chat{}, s.err
	}
	c.Status = store.ChatStatus(status)
	c.TitleSource = store.TitleSource(source)
	c.Archived = archived != 0
	c.LastError = rawJSON(lastErr)
	c.RetryState = rawJSON(rs)
	c.DynamicTools = rawJSON(dynamicTools)
	c.ToolApprovals = rawJSON(approvals)
	if err := json.Unmarshal([]byte(labels), &c.Labels); err != nil {
		return store.Chat{}, fmt.Errorf("decode labels of chat %s: %w", c.ID, err)
	}
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	if c.MCPServerIDs, err = scanIDs(mcpServers); err != nil {
		return store.Chat{}, fmt.Errorf("mcp_server_ids of chat %s: %w", c.ID, err)
	}
	return c, nil
}

// readChat reads one chat; callers add the context of their operation.
// It is served from the transaction's cache while no write ran since the
// row was last read (txcache.go).
func (t *tx) readChat(ctx context.Context, id uuid.UUID) (store.Chat, error) {
	if c, ok := t.cachedChat(id); ok {
		return c, nil
	}
	c, err := scanChat(t.tx.QueryRowContext(ctx, `SELECT `+query.ChatColumns+` FROM chats WHERE id = ?`, id.String()))
	if err != nil {
		return store.Chat{}, err
	}
	t.keepChat(c)
	return c, nil
}

// ChatInsert creates a chat; the column defaults give snapshot_version = 1
// and every other version 0.
func (t *tx) ChatInsert(ctx context.Context, p store.ChatInsertParams) (store.Chat, error) {
	labels, err := labelsJSON(p.Labels)
	if err == nil {
		err = checkJSON(p.DynamicTools)
	}
	var servers any
	if err == nil {
		servers, err = idsJSON(p.MCPServerIDs)
	}
	if err != nil {
		return store.Chat{}, fmt.Errorf("insert chat %s: %w", p.ID, err)
	}
	// An unset source is the column default: an empty string would fail
	// the check constraint.
	source := p.TitleSource
	if source == "" {
		source = store.TitleSourceFallback
	}
	now := ts(p.Now)
	row := t.tx.QueryRowContext(ctx, `
		INSERT INTO chats (
			id, owner_id, parent_chat_id, root_chat_id, title, title_source, title_updated_at,
			status, labels, last_model_config_id, last_reasoning_effort, dynamic_tools,
			mcp_server_ids, tool_approval, created_at, updated_at, project_id
		) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		RETURNING `+query.ChatColumns,
		p.ID.String(), p.OwnerID.String(), nullUUID(p.ParentChatID), nullUUID(p.RootChatID),
		p.Title, string(source), now, string(p.Status), labels, nullUUID(p.LastModelConfigID),
		p.LastReasoningEffort, nullJSON(p.DynamicTools), servers, toolApproval(p.ToolApproval), now, now, nullUUID(p.ProjectID))
	c, err := scanChat(row)
	if err != nil {
		return store.Chat{}, fmt.Errorf("insert chat %s: %w", p.ID, err)
	}
	return c, nil
}

// ChatLock returns the chat: the IMMEDIATE transaction already holds the
// database write lock, which serialises every writer.
func (t *tx) ChatLock(ctx context.Context, id uuid.UUID) (store.Chat, error) {
	c, err := t.readChat(ctx, id)
	if err != nil {
		return store.Chat{}, fmt.Errorf("lock chat %s: %w", id, err)
	}
	return c, nil
}

// ChatLockShared returns the chat; see ChatLock.
func (t *tx) ChatLockShared(ctx context.Context, id uuid.UUID) (store.Chat, error) {
	c, err := t.readChat(ctx, id)
	if err != nil {
		return store.Chat{}, fmt.Errorf("lock chat %s shared: %w", id, err)
	}
	return c, nil
}

// ChatGet reads a chat without locking it.
func (t *tx) ChatGet(ctx context.Context, id uuid.UUID) (store.Chat, error) {
	c, err := t.readChat(ctx, id)
	if err != nil {
		return store.Chat{}, fmt.Errorf("get chat %s: %w", id, err)
	}
	return c, nil
}

// ChatGetMany reads the chats with the given ids; missing ids are skipped.
func (t *tx) ChatGetMany(ctx context.Context, ids []uuid.UUID) ([]store.Chat, error) {
	if len(ids) == 0 {
		return []store.Chat{}, nil
	}
	// One JSON array parameter, like the uuid[] on Postgres: a placeholder
	// per id would hit SQLite's limit on bound parameters.
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("get chats: encode ids: %w", err)
	}
	rows, err := t.tx.QueryContext(ctx,
		`SELECT `+query.ChatColumns+` FROM chats WHERE id IN (SELECT value FROM json_each(?))`, string(list))
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
	kept, ok := t.cachedChat(id)
	var v int64
	err := t.tx.QueryRowContext(ctx,
		query.ChatBumpSnapshot,
		id.String()).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("bump snapshot of chat %s: %w", id, translate(err))
	}
	if ok {
		// The bump writes snapshot_version alone (no trigger fires on it),
		// so the row kept before it, with the new version, is the row now.
		kept.SnapshotVersion = v
		t.keepChat(kept)
	}
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
	c, err := t.updateReturning(ctx, id, `UPDATE chats SET `+sets+` WHERE id = `+a.add(id.String()), p.RetryState.Set, a...)
	if err != nil {
		return store.Chat{}, fmt.Errorf("update chat %s: %w", id, err)
	}
	return c, nil
}

// updateReturning runs an UPDATE of one chat and returns the row as the
// statement and its triggers left it. SQLite's RETURNING shows the row
// before AFTER triggers ran, and the one AFTER trigger that writes chats
// (chats_retry_state_sync) changes only retry_state and its version, and
// only when retry_state was set before it ran (it clears it) or the
// statement changed it (it stamps the version). So a returned row whose
// retry_state is NULL, from a statement that did not write retry_state, is
// final; any other is read back.
func (t *tx) updateReturning(ctx context.Context, id uuid.UUID, update string, writesRetryState bool, args ...any) (store.Chat, error) {
	c, err := scanChat(t.tx.QueryRowContext(ctx, update+` RETURNING `+query.ChatColumns, args...))
	if err != nil {
		return store.Chat{}, translate(err)
	}
	if writesRetryState || c.RetryState != nil {
		return t.readChat(ctx, id)
	}
	t.keepChat(c)
	return c, nil
}

// ChatIncrementGenerationAttempt adds one to generation_attempt; the retry
// trigger clears retry_state with it.
func (t *tx) ChatIncrementGenerationAttempt(ctx context.Context, id uuid.UUID) (store.Chat, error) {
	c, err := t.updateAndRead(ctx, id, `UPDATE chats SET generation_attempt = generation_attempt + 1 WHERE id = ?`)
	if err != nil {
		return store.Chat{}, fmt.Errorf("increment generation attempt of chat %s: %w", id, err)
	}
	return c, nil
}

// ChatTouchHistory records a history change without writing a message, the
// way the message trigger does: history_version catches up with
// snapshot_version and generation_attempt restarts (which, through the retry
// trigger, also clears retry_state).
func (t *tx) ChatTouchHistory(ctx context.Context, id uuid.UUID) (store.Chat, error) {
	c, err := t.updateAndRead(ctx, id, `UPDATE chats SET history_version = snapshot_version, generation_attempt = 0 WHERE id = ?`)
	if err != nil {
		return store.Chat{}, fmt.Errorf("touch history of chat %s: %w", id, err)
	}
	return c, nil
}

// updateAndRead runs an UPDATE of one chat (its only parameter is the id)
// and reads the row back after the triggers ran.
func (t *tx) updateAndRead(ctx context.Context, id uuid.UUID, update string) (store.Chat, error) {
	return t.updateReturning(ctx, id, update, false, id.String())
}

// ChatDelete removes a chat; its messages, queue, heartbeats and child chats
// go with it (ON DELETE CASCADE).
func (t *tx) ChatDelete(ctx context.Context, id uuid.UUID) error {
	n, err := t.exec(ctx, query.ChatDelete, id.String())
	if err != nil {
		return fmt.Errorf("delete chat %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("delete chat %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// ChatDescendants returns every chat of rootID's family except the root.
func (t *tx) ChatDescendants(ctx context.Context, rootID uuid.UUID) ([]store.Chat, error) {
	rows, err := t.tx.QueryContext(ctx,
		query.ChatDescendants, rootID.String())
	if err != nil {
		return nil, fmt.Errorf("list descendants of chat %s: %w", rootID, translate(err))
	}
	chats, err := collect(rows, scanChat)
	if err != nil {
		return nil, fmt.Errorf("list descendants of chat %s: %w", rootID, err)
	}
	return chats, nil
}

// labelScanAt is where a label filter changes plan. A pair that fewer
// chats carry is read from chat_labels whole and its chats sorted into
// list order; one that more carry is checked per chat while the chats are
// read in list order (an EXISTS probe), which stops at the page's end:
// sorting half of 100,000 chats for a page of 50 took 35-40 ms.
var labelScanAt = 2000

// commonLabels reports, of p's label pairs, those more than labelScanAt
// chats carry (a bounded count on chat_labels_pair_idx).
func (t *tx) commonLabels(ctx context.Context, p store.ChatListParams) (map[string]bool, error) {
	common := map[string]bool{}
	for k, v := range p.Labels {
		var n int
		if err := t.tx.QueryRowContext(ctx,
			`SELECT count(*) FROM (SELECT 1 FROM chat_labels WHERE key = ? AND value = ? LIMIT ?)`,
			k, v, labelScanAt+1).Scan(&n); err != nil {
			return nil, fmt.Errorf("list chats: count label %q: %w", k, translate(err))
		}
		common[k] = n > labelScanAt
	}
	return common, nil
}

// listPlan is what ChatList's query depends on besides its parameters:
// the label keys whose pair is common (commonLabels), whether messages
// wait for the search index (searchPending), and whether the search term
// is rare (rareSearch).
type listPlan struct {
	common                    map[string]bool
	searchPending, rareSearch bool
}

// chatListQuery is ChatList's query. Each filter is an index range
// (migration 00018): owner and archived, archived alone, labels; common
// names the label keys whose pair is checked per chat (labelScanAt).
func chatListQuery(p store.ChatListParams, plan listPlan) (string, args, error) {
	var (
		a     args
		where []string
	)
	// With a label pair few chats carry, or a search term few messages
	// hold, the list is driven from those chats: the other terms are kept
	// from their indexes ("+column"), or the planner may walk a user's or
	// every unarchived chat probing each for the label or the term (20-40
	// ms at 100,000 chats, for none at all).
	col := func(name string) string { return name }
	for k := range p.Labels {
		if !plan.common[k] {
			col = func(name string) string { return "+" + name }
		}
	}
	if p.Query != "" && plan.rareSearch {
		col = func(name string) string { return "+" + name }
	}
	if p.OwnerID.Valid {
		where = append(where, col("owner_id")+" = "+a.add(p.OwnerID.UUID.String()))
	}
	if p.Archived != nil {
		where = append(where, col("archived")+" = "+a.add(boolInt(*p.Archived)))
	}
	if p.ProjectID.Valid {
		where = append(where, col("project_id")+" = "+a.add(p.ProjectID.UUID.String()))
	}
	if p.Query != "" {
		// Titles and message text; see search.go.
		where = append(where, searchWhere(p.Query, &a, plan.searchPending))
	}
	for k, v := range p.Labels {
		// chat_labels mirrors the labels column (triggers of migration
		// 00018), indexed by pair: a lookup, not a json_extract per chat.
		if plan.common[k] {
			where = append(where, "EXISTS (SELECT 1 FROM chat_labels l WHERE l.chat_id = chats.id AND l.key = "+a.add(k)+" AND l.value = "+a.add(v)+")")
			continue
		}
		where = append(where, "id IN (SELECT l.chat_id FROM chat_labels l WHERE l.key = "+a.add(k)+" AND l.value = "+a.add(v)+")")
	}
	if p.AfterID.Valid {
		// Row values compare like the (updated_at DESC, id DESC) order; an
		// unknown cursor compares with NULL and selects nothing.
		where = append(where,
			"(updated_at, id) < (SELECT c.updated_at, c.id FROM chats c WHERE c.id = "+a.add(p.AfterID.UUID.String())+")")
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
	var (
		plan listPlan
		err  error
	)
	if plan.common, err = t.commonLabels(ctx, p); err != nil {
		return nil, err
	}
	if p.Query != "" {
		if plan.searchPending, err = t.searchPending(ctx); err != nil {
			return nil, err
		}
		if plan.rareSearch, err = t.rareSearch(ctx, p.Query); err != nil {
			return nil, err
		}
	}
	stmt, a, err := chatListQuery(p, plan)
	if err != nil {
		return nil, err
	}
	rows, err := t.tx.QueryContext(ctx, stmt, a...)
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
	if err := t.tx.QueryRowContext(ctx,
		query.ChatCountByOwner, ownerID.String()).Scan(&n); err != nil {
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
	rows, err := t.tx.QueryContext(ctx, `SELECT `+qualified("c", query.ChatColumns)+` FROM chats c
		WHERE c.root_chat_id IS NULL AND c.archived = 0 AND c.pin_order = 0
		AND c.status NOT IN ('running', 'interrupting', 'requires_action')
		AND c.created_at < `+a.add(ts(p.Cutoff))+`
		AND NOT EXISTS (SELECT 1 FROM chats d WHERE d.root_chat_id = c.id
			AND d.status IN ('running', 'interrupting', 'requires_action'))
		AND NOT EXISTS (SELECT 1 FROM chat_messages m WHERE m.deleted = 0 AND m.created_at >= `+a.add(ts(p.Cutoff))+`
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
	var at sql.NullString
	err := t.tx.QueryRowContext(ctx, `SELECT MAX(m.created_at) FROM chat_messages m
		WHERE m.deleted = 0 AND (m.chat_id = ? OR m.chat_id IN (SELECT d.id FROM chats d WHERE d.root_chat_id = ?))`,
		rootID.String(), rootID.String()).Scan(&at)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("newest message in family of chat %s: %w", rootID, translate(err))
	}
	if !at.Valid {
		return time.Time{}, false, nil
	}
	parsed, err := parseTS(at.String)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("newest message in family of chat %s: %w", rootID, err)
	}
	return parsed, true, nil
}
