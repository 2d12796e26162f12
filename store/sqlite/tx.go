package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// timeFormat is fixed-width so that text order is time order.
const timeFormat = "2006-01-02T15:04:05.000000Z"

type tx struct {
	tx *sql.Tx
}

var _ store.Tx = (*tx)(nil)

func (t *tx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	res, err := t.tx.ExecContext(ctx, query, args...)
	return res, translate(err)
}

// ExecRaw runs one statement and returns the affected row count.
func (t *tx) ExecRaw(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := t.exec(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// --- value conversion ---

func ts(t time.Time) string { return t.UTC().Format(timeFormat) }

func tsPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return ts(*t)
}

func parseTS(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("parse timestamp %q: %w", s, err)
	}
	return t.UTC(), nil
}

func nullUUID(u uuid.NullUUID) any {
	if !u.Valid {
		return nil
	}
	return u.UUID.String()
}

func nullJSON(b json.RawMessage) any {
	if b == nil {
		return nil
	}
	return string(b)
}

func labelsJSON(m map[string]string) (string, error) {
	if m == nil {
		return "{}", nil
	}
	b, err := json.Marshal(m)
	return string(b), err
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// scanner collects conversions that need a second step after Scan.
type scanner struct {
	err error
}

func (s *scanner) uuid(dst *uuid.UUID, src string) {
	if s.err != nil {
		return
	}
	u, err := uuid.Parse(src)
	if err != nil {
		s.err = fmt.Errorf("parse uuid %q: %w", src, err)
	}
	*dst = u
}

func (s *scanner) nullUUID(dst *uuid.NullUUID, src sql.NullString) {
	*dst = uuid.NullUUID{}
	if src.Valid {
		dst.Valid = true
		s.uuid(&dst.UUID, src.String)
	}
}

func (s *scanner) time(dst *time.Time, src string) {
	if s.err != nil {
		return
	}
	*dst, s.err = parseTS(src)
}

func (s *scanner) timePtr(dst **time.Time, src sql.NullString) {
	*dst = nil
	if src.Valid {
		var t time.Time
		s.time(&t, src.String)
		*dst = &t
	}
}

func rawJSON(src sql.NullString) json.RawMessage {
	if !src.Valid {
		return nil
	}
	return json.RawMessage(src.String)
}

// --- chats ---

const chatColumns = `id, owner_id, parent_chat_id, root_chat_id, title, title_source,
	title_updated_at, status, archived, worker_id, runner_id, last_error, retry_state,
	snapshot_version, history_version, queue_version, retry_state_version,
	generation_attempt, requires_action_deadline_at, compaction_requested_at, labels,
	pin_order, last_model_config_id, last_reasoning_effort, dynamic_tools, created_at, updated_at`

type rowScanner interface {
	Scan(dest ...any) error
}

func scanChat(r rowScanner) (store.Chat, error) {
	var (
		c                                           store.Chat
		id, owner, titleUpdated, created, updated   string
		parent, root, worker, runner, lastErr, rs   sql.NullString
		deadline, compaction, modelID, dynamicTools sql.NullString
		labels                                      string
		archived                                    int
		status, source                              string
	)
	err := r.Scan(&id, &owner, &parent, &root, &c.Title, &source, &titleUpdated, &status,
		&archived, &worker, &runner, &lastErr, &rs, &c.SnapshotVersion, &c.HistoryVersion,
		&c.QueueVersion, &c.RetryStateVersion, &c.GenerationAttempt, &deadline, &compaction,
		&labels, &c.PinOrder, &modelID, &c.LastReasoningEffort, &dynamicTools, &created, &updated)
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
	if err := json.Unmarshal([]byte(labels), &c.Labels); err != nil {
		return store.Chat{}, fmt.Errorf("decode labels of chat %s: %w", c.ID, err)
	}
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	return c, nil
}

func (t *tx) queryChats(ctx context.Context, query string, args ...any) ([]store.Chat, error) {
	rows, err := t.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []store.Chat
	for rows.Next() {
		c, err := scanChat(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, translate(rows.Err())
}

// ChatInsert creates a chat at snapshot_version 1.
func (t *tx) ChatInsert(ctx context.Context, p store.ChatInsertParams) (store.Chat, error) {
	labels, err := labelsJSON(p.Labels)
	if err != nil {
		return store.Chat{}, fmt.Errorf("encode labels: %w", err)
	}
	source := p.TitleSource
	if source == "" {
		source = store.TitleSourceFallback
	}
	now := ts(p.Now)
	row := t.tx.QueryRowContext(ctx, `INSERT INTO chats (id, owner_id, parent_chat_id, root_chat_id,
		title, title_source, title_updated_at, status, labels, last_model_config_id,
		last_reasoning_effort, dynamic_tools, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING `+chatColumns,
		p.ID.String(), p.OwnerID.String(), nullUUID(p.ParentChatID), nullUUID(p.RootChatID),
		p.Title, string(source), now, string(p.Status), labels, nullUUID(p.LastModelConfigID),
		p.LastReasoningEffort, nullJSON(p.DynamicTools), now, now)
	return scanChat(row)
}

// ChatLock returns the chat; the IMMEDIATE transaction already serialises writers.
func (t *tx) ChatLock(ctx context.Context, id uuid.UUID) (store.Chat, error) {
	return t.ChatGet(ctx, id)
}

// ChatLockShared returns the chat; see ChatLock.
func (t *tx) ChatLockShared(ctx context.Context, id uuid.UUID) (store.Chat, error) {
	return t.ChatGet(ctx, id)
}

// ChatGet reads one chat.
func (t *tx) ChatGet(ctx context.Context, id uuid.UUID) (store.Chat, error) {
	return scanChat(t.tx.QueryRowContext(ctx, `SELECT `+chatColumns+` FROM chats WHERE id = ?`, id.String()))
}

// ChatGetMany reads several chats.
func (t *tx) ChatGetMany(ctx context.Context, ids []uuid.UUID) ([]store.Chat, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id.String()
	}
	return t.queryChats(ctx, `SELECT `+chatColumns+` FROM chats WHERE id IN (`+placeholders(len(ids))+`)`, args...)
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

// ChatBumpSnapshot advances snapshot_version.
func (t *tx) ChatBumpSnapshot(ctx context.Context, id uuid.UUID) (int64, error) {
	var v int64
	err := t.tx.QueryRowContext(ctx, `UPDATE chats SET snapshot_version = snapshot_version + 1
		WHERE id = ? RETURNING snapshot_version`, id.String()).Scan(&v)
	return v, translate(err)
}

// ChatUpdate writes the set fields of p.
func (t *tx) ChatUpdate(ctx context.Context, id uuid.UUID, p store.ChatPatch) (store.Chat, error) {
	var sets []string
	var args []any
	set := func(col string, v any) {
		sets = append(sets, col+" = ?")
		args = append(args, v)
	}
	if p.Status.Set {
		set("status", string(p.Status.Value))
	}
	if p.Archived.Set {
		set("archived", boolInt(p.Archived.Value))
	}
	if p.WorkerID.Set {
		set("worker_id", nullUUID(p.WorkerID.Value))
	}
	if p.RunnerID.Set {
		set("runner_id", nullUUID(p.RunnerID.Value))
	}
	if p.LastError.Set {
		set("last_error", nullJSON(p.LastError.Value))
	}
	if p.RetryState.Set {
		set("retry_state", nullJSON(p.RetryState.Value))
	}
	if p.RequiresActionDeadlineAt.Set {
		set("requires_action_deadline_at", tsPtr(p.RequiresActionDeadlineAt.Value))
	}
	if p.CompactionRequestedAt.Set {
		set("compaction_requested_at", tsPtr(p.CompactionRequestedAt.Value))
	}
	if p.Title.Set {
		set("title", p.Title.Value)
	}
	if p.TitleSource.Set {
		set("title_source", string(p.TitleSource.Value))
	}
	if p.TitleUpdatedAt.Set {
		set("title_updated_at", ts(p.TitleUpdatedAt.Value))
	}
	if p.Labels.Set {
		labels, err := labelsJSON(p.Labels.Value)
		if err != nil {
			return store.Chat{}, fmt.Errorf("encode labels: %w", err)
		}
		set("labels", labels)
	}
	if p.PinOrder.Set {
		set("pin_order", p.PinOrder.Value)
	}
	if p.LastModelConfigID.Set {
		set("last_model_config_id", nullUUID(p.LastModelConfigID.Value))
	}
	if p.LastReasoningEffort.Set {
		set("last_reasoning_effort", p.LastReasoningEffort.Value)
	}
	if p.UpdatedAt.Set {
		set("updated_at", ts(p.UpdatedAt.Value))
	}
	if len(sets) == 0 {
		return t.ChatGet(ctx, id)
	}
	args = append(args, id.String())
	res, err := t.exec(ctx, `UPDATE chats SET `+strings.Join(sets, ", ")+` WHERE id = ?`, args...)
	if err != nil {
		return store.Chat{}, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return store.Chat{}, store.ErrNotFound
	}
	// SQLite's RETURNING shows the row before AFTER triggers ran; read it
	// back so retry_state and its version are what the triggers left.
	return t.ChatGet(ctx, id)
}

// ChatIncrementGenerationAttempt adds one to generation_attempt.
func (t *tx) ChatIncrementGenerationAttempt(ctx context.Context, id uuid.UUID) (store.Chat, error) {
	if _, err := t.exec(ctx, `UPDATE chats SET generation_attempt = generation_attempt + 1 WHERE id = ?`, id.String()); err != nil {
		return store.Chat{}, err
	}
	// Read back after the retry-state trigger has run.
	return t.ChatGet(ctx, id)
}

// ChatTouchHistory moves history_version to snapshot_version and resets
// generation_attempt.
func (t *tx) ChatTouchHistory(ctx context.Context, id uuid.UUID) (store.Chat, error) {
	res, err := t.exec(ctx, `UPDATE chats SET history_version = snapshot_version, generation_attempt = 0 WHERE id = ?`, id.String())
	if err != nil {
		return store.Chat{}, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return store.Chat{}, store.ErrNotFound
	}
	return t.ChatGet(ctx, id)
}

// HeartbeatInsert records a runner's lease.
func (t *tx) HeartbeatInsert(ctx context.Context, chatID, runnerID uuid.UUID, at time.Time) error {
	_, err := t.exec(ctx, `INSERT INTO chat_heartbeats (chat_id, runner_id, heartbeat_at) VALUES (?, ?, ?)
		ON CONFLICT (chat_id, runner_id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at`,
		chatID.String(), runnerID.String(), ts(at))
	return err
}

// HeartbeatRenew renews fresh leases of chats their runner still owns.
func (t *tx) HeartbeatRenew(ctx context.Context, leases []store.Lease, now, cutoff time.Time) ([]store.Lease, error) {
	var out []store.Lease
	for _, l := range leases {
		n, err := t.ExecRaw(ctx, `UPDATE chat_heartbeats SET heartbeat_at = ?
			WHERE chat_id = ? AND runner_id = ? AND heartbeat_at > ?
			AND EXISTS (SELECT 1 FROM chats c WHERE c.id = chat_heartbeats.chat_id
				AND c.runner_id = chat_heartbeats.runner_id AND c.worker_id IS NOT NULL)`,
			ts(now), l.ChatID.String(), l.RunnerID.String(), ts(cutoff))
		if err != nil {
			return nil, err
		}
		if n > 0 {
			out = append(out, l)
		}
	}
	return out, nil
}

// HeartbeatAt reads a lease's last heartbeat.
func (t *tx) HeartbeatAt(ctx context.Context, chatID, runnerID uuid.UUID) (time.Time, error) {
	var at string
	err := t.tx.QueryRowContext(ctx, `SELECT heartbeat_at FROM chat_heartbeats WHERE chat_id = ? AND runner_id = ?`,
		chatID.String(), runnerID.String()).Scan(&at)
	if err != nil {
		return time.Time{}, translate(err)
	}
	return parseTS(at)
}

// HeartbeatDeleteStale removes stale leases.
func (t *tx) HeartbeatDeleteStale(ctx context.Context, cutoff time.Time) (int64, error) {
	return t.ExecRaw(ctx, `DELETE FROM chat_heartbeats WHERE heartbeat_at < ?`, ts(cutoff))
}

// ownerAlive is the SQL condition "the chat's owner is alive".
func ownerAlive(p store.AcquirableParams, args *[]any) string {
	if p.LeaseCutoff != nil {
		*args = append(*args, ts(*p.LeaseCutoff))
		return `(c.worker_id IS NOT NULL AND EXISTS (SELECT 1 FROM chat_heartbeats hb
			WHERE hb.chat_id = c.id AND hb.runner_id = c.runner_id AND hb.heartbeat_at > ?))`
	}
	*args = append(*args, p.Self.String())
	return `(c.worker_id IS NOT NULL AND c.worker_id = ?)`
}

// ChatListAcquirable lists runnable chats without a live owner.
func (t *tx) ChatListAcquirable(ctx context.Context, p store.AcquirableParams) ([]store.Chat, error) {
	var args []any
	alive := ownerAlive(p, &args)
	args = append(args, listLimit(p.Limit))
	return t.queryChats(ctx, `SELECT `+prefixed("c.", chatColumns)+` FROM chats c
		WHERE c.archived = 0 AND c.status IN ('running', 'interrupting', 'requires_action')
		AND NOT `+alive+` ORDER BY c.updated_at, c.id LIMIT ?`, args...)
}

// ChatCountOwned counts chats held by a live owner.
func (t *tx) ChatCountOwned(ctx context.Context, p store.AcquirableParams) (roots, subagents int64, err error) {
	var args []any
	alive := ownerAlive(p, &args)
	err = t.tx.QueryRowContext(ctx, `SELECT
		COALESCE(SUM(CASE WHEN c.parent_chat_id IS NULL THEN 1 ELSE 0 END), 0),
		COALESCE(SUM(CASE WHEN c.parent_chat_id IS NULL THEN 0 ELSE 1 END), 0)
		FROM chats c WHERE `+alive, args...).Scan(&roots, &subagents)
	return roots, subagents, translate(err)
}

// AdmissionLock is a no-op: the IMMEDIATE transaction holds the writer lock.
func (t *tx) AdmissionLock(ctx context.Context) error { return nil }

// prefixed qualifies a comma-separated column list with a table alias.
func prefixed(alias, cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = alias + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}

// ChatDelete removes a chat and, through foreign keys, everything it owns.
func (t *tx) ChatDelete(ctx context.Context, id uuid.UUID) error {
	res, err := t.exec(ctx, `DELETE FROM chats WHERE id = ?`, id.String())
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return store.ErrNotFound
	}
	return nil
}

// ChatDescendants lists a root's family members.
func (t *tx) ChatDescendants(ctx context.Context, rootID uuid.UUID) ([]store.Chat, error) {
	return t.queryChats(ctx, `SELECT `+chatColumns+` FROM chats WHERE root_chat_id = ? ORDER BY created_at, id`, rootID.String())
}

// ChatList lists chats newest first with keyset pagination.
func (t *tx) ChatList(ctx context.Context, p store.ChatListParams) ([]store.Chat, error) {
	var where []string
	var args []any
	if p.OwnerID.Valid {
		where = append(where, "owner_id = ?")
		args = append(args, p.OwnerID.UUID.String())
	}
	if p.Archived != nil {
		where = append(where, "archived = ?")
		args = append(args, boolInt(*p.Archived))
	}
	if p.Query != "" {
		where = append(where, `chatd_fold(title) LIKE ? ESCAPE '\'`)
		args = append(args, "%"+escapeLike(strings.ToLower(p.Query))+"%")
	}
	for k, v := range p.Labels {
		where = append(where, "json_extract(labels, ?) = ?")
		args = append(args, "$."+jsonPathKey(k), v)
	}
	if p.AfterID.Valid {
		where = append(where, `(updated_at, id) < (SELECT updated_at, id FROM chats WHERE id = ?)`)
		args = append(args, p.AfterID.UUID.String())
	}
	q := `SELECT ` + chatColumns + ` FROM chats`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY updated_at DESC, id DESC LIMIT ?"
	args = append(args, listLimit(p.Limit))
	return t.queryChats(ctx, q, args...)
}

func listLimit(n int) int {
	switch {
	case n <= 0:
		return 50
	case n > 1000:
		return 1000
	}
	return n
}

// escapeLike escapes LIKE wildcards with a backslash.
func escapeLike(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}

// jsonPathKey quotes a label key for a JSON path.
func jsonPathKey(k string) string {
	b, _ := json.Marshal(k)
	return string(b)
}

// --- messages ---

const messageColumns = `id, chat_id, role, content, visibility, compressed, deleted, revision,
	queued_message_id, created_by, model_config_id, reasoning_effort, input_tokens,
	output_tokens, total_tokens, reasoning_tokens, cache_creation_tokens, cache_read_tokens,
	context_limit, request_id, created_at`

func scanMessage(r rowScanner) (store.Message, error) {
	var (
		m                         store.Message
		chatID, content, created  string
		createdBy, modelID, reqID sql.NullString
		compressed, deleted       int
		revision, queued          sql.NullInt64
		usage                     [7]sql.NullInt64
	)
	err := r.Scan(&m.ID, &chatID, &m.Role, &content, &m.Visibility, &compressed, &deleted,
		&revision, &queued, &createdBy, &modelID, &m.ReasoningEffort, &usage[0], &usage[1],
		&usage[2], &usage[3], &usage[4], &usage[5], &usage[6], &reqID, &created)
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
	if queued.Valid {
		q := queued.Int64
		m.QueuedMessageID = &q
	}
	m.Usage = usageFrom(usage)
	return m, nil
}

func usageFrom(u [7]sql.NullInt64) *store.Usage {
	any := false
	for _, v := range u {
		any = any || v.Valid
	}
	if !any {
		return nil
	}
	return &store.Usage{
		InputTokens: u[0].Int64, OutputTokens: u[1].Int64, TotalTokens: u[2].Int64,
		ReasoningTokens: u[3].Int64, CacheCreationTokens: u[4].Int64,
		CacheReadTokens: u[5].Int64, ContextLimit: u[6].Int64,
	}
}

func usageArgs(u *store.Usage) []any {
	if u == nil {
		return []any{nil, nil, nil, nil, nil, nil, nil}
	}
	return []any{u.InputTokens, u.OutputTokens, u.TotalTokens, u.ReasoningTokens,
		u.CacheCreationTokens, u.CacheReadTokens, u.ContextLimit}
}

// MessageInsert appends a message; the triggers assign revision and move
// history_version.
func (t *tx) MessageInsert(ctx context.Context, p store.MessageInsertParams) (store.Message, error) {
	vis := p.Visibility
	if vis == "" {
		vis = store.VisibilityBoth
	}
	var queued any
	if p.QueuedMessageID != nil {
		queued = *p.QueuedMessageID
	}
	args := []any{p.ChatID.String(), p.Role, string(p.Content), vis, boolInt(p.Compressed),
		queued, nullUUID(p.CreatedBy), nullUUID(p.ModelConfigID), p.ReasoningEffort}
	args = append(args, usageArgs(p.Usage)...)
	args = append(args, nullUUID(p.RequestID), ts(p.Now))
	var id int64
	err := t.tx.QueryRowContext(ctx, `INSERT INTO chat_messages (chat_id, role, content, visibility,
		compressed, queued_message_id, created_by, model_config_id, reasoning_effort,
		input_tokens, output_tokens, total_tokens, reasoning_tokens, cache_creation_tokens,
		cache_read_tokens, context_limit, request_id, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`, args...).Scan(&id)
	if err != nil {
		return store.Message{}, translate(err)
	}
	// RETURNING reports the row before AFTER triggers ran; read it back for
	// the trigger-assigned revision.
	return t.MessageGet(ctx, p.ChatID, id)
}

// MessageGet reads one message of a chat.
func (t *tx) MessageGet(ctx context.Context, chatID uuid.UUID, id int64) (store.Message, error) {
	return scanMessage(t.tx.QueryRowContext(ctx, `SELECT `+messageColumns+` FROM chat_messages
		WHERE chat_id = ? AND id = ?`, chatID.String(), id))
}

// MessageUpdate writes the set fields of p.
func (t *tx) MessageUpdate(ctx context.Context, chatID uuid.UUID, id int64, p store.MessagePatch) (store.Message, error) {
	var sets []string
	var args []any
	if p.Content.Set {
		sets, args = append(sets, "content = ?"), append(args, string(p.Content.Value))
	}
	if p.Visibility.Set {
		sets, args = append(sets, "visibility = ?"), append(args, p.Visibility.Value)
	}
	if p.Compressed.Set {
		sets, args = append(sets, "compressed = ?"), append(args, boolInt(p.Compressed.Value))
	}
	if p.Deleted.Set {
		sets, args = append(sets, "deleted = ?"), append(args, boolInt(p.Deleted.Value))
	}
	if len(sets) > 0 {
		args = append(args, chatID.String(), id)
		res, err := t.exec(ctx, `UPDATE chat_messages SET `+strings.Join(sets, ", ")+
			` WHERE chat_id = ? AND id = ?`, args...)
		if err != nil {
			return store.Message{}, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return store.Message{}, store.ErrNotFound
		}
	}
	return t.MessageGet(ctx, chatID, id)
}

// MessageList pages a chat's messages.
func (t *tx) MessageList(ctx context.Context, chatID uuid.UUID, p store.MessageListParams) ([]store.Message, error) {
	q := `SELECT ` + messageColumns + ` FROM chat_messages WHERE chat_id = ?`
	args := []any{chatID.String()}
	if !p.IncludeDeleted {
		q += " AND deleted = 0"
	}
	if p.PeopleOnly {
		q += " AND visibility <> 'model'"
	}
	if p.RevisionAfter > 0 {
		q += " AND revision > ?"
		args = append(args, p.RevisionAfter)
	}
	if p.AfterID > 0 {
		q += " AND id > ?"
		args = append(args, p.AfterID)
	}
	if p.BeforeID > 0 {
		q += " AND id < ?"
		args = append(args, p.BeforeID)
	}
	if p.Descending {
		q += " ORDER BY id DESC"
	} else {
		q += " ORDER BY id"
	}
	if p.Limit > 0 {
		q += " LIMIT ?"
		args = append(args, p.Limit)
	}
	rows, err := t.tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []store.Message
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, translate(rows.Err())
}

// MessageSoftDeleteFrom marks the suffix starting at fromID as deleted.
func (t *tx) MessageSoftDeleteFrom(ctx context.Context, chatID uuid.UUID, fromID int64) ([]int64, error) {
	rows, err := t.tx.QueryContext(ctx, `UPDATE chat_messages SET deleted = 1
		WHERE chat_id = ? AND id >= ? AND deleted = 0 RETURNING id`, chatID.String(), fromID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, translate(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	slices.Sort(ids)
	return ids, nil
}

// --- queue ---

const queueColumns = `id, chat_id, position, created_by, content, model_config_id, reasoning_effort,
	request_id, created_at`

func scanQueued(r rowScanner) (store.QueuedMessage, error) {
	var (
		q                         store.QueuedMessage
		chatID, content, created  string
		createdBy, modelID, reqID sql.NullString
	)
	if err := r.Scan(&q.ID, &chatID, &q.Position, &createdBy, &content, &modelID, &q.ReasoningEffort,
		&reqID, &created); err != nil {
		return store.QueuedMessage{}, translate(err)
	}
	var s scanner
	s.uuid(&q.ChatID, chatID)
	s.nullUUID(&q.CreatedBy, createdBy)
	s.nullUUID(&q.ModelConfigID, modelID)
	s.nullUUID(&q.RequestID, reqID)
	s.time(&q.CreatedAt, created)
	q.Content = json.RawMessage(content)
	return q, s.err
}

// QueueInsert appends at the tail.
func (t *tx) QueueInsert(ctx context.Context, p store.QueueInsertParams) (store.QueuedMessage, error) {
	var id int64
	err := t.tx.QueryRowContext(ctx, `INSERT INTO chat_queued_messages (chat_id, position, created_by,
		content, model_config_id, reasoning_effort, request_id, created_at)
		VALUES (?, (SELECT COALESCE(MAX(position), 0) + 1 FROM chat_queued_messages WHERE chat_id = ?),
		?, ?, ?, ?, ?, ?) RETURNING id`,
		p.ChatID.String(), p.ChatID.String(), nullUUID(p.CreatedBy), string(p.Content),
		nullUUID(p.ModelConfigID), p.ReasoningEffort, nullUUID(p.RequestID), ts(p.Now)).Scan(&id)
	if err != nil {
		return store.QueuedMessage{}, translate(err)
	}
	return t.QueueGet(ctx, p.ChatID, id)
}

// QueueList returns the queue in order.
func (t *tx) QueueList(ctx context.Context, chatID uuid.UUID) ([]store.QueuedMessage, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT `+queueColumns+` FROM chat_queued_messages
		WHERE chat_id = ? ORDER BY position, id`, chatID.String())
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []store.QueuedMessage
	for rows.Next() {
		q, err := scanQueued(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, translate(rows.Err())
}

// QueueGet reads one queued message.
func (t *tx) QueueGet(ctx context.Context, chatID uuid.UUID, id int64) (store.QueuedMessage, error) {
	return scanQueued(t.tx.QueryRowContext(ctx, `SELECT `+queueColumns+` FROM chat_queued_messages
		WHERE chat_id = ? AND id = ?`, chatID.String(), id))
}

// QueueSetPosition moves a queued message.
func (t *tx) QueueSetPosition(ctx context.Context, chatID uuid.UUID, id int64, position int64) error {
	res, err := t.exec(ctx, `UPDATE chat_queued_messages SET position = ? WHERE chat_id = ? AND id = ?`,
		position, chatID.String(), id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return store.ErrNotFound
	}
	return nil
}

// QueueDelete removes one queued message.
func (t *tx) QueueDelete(ctx context.Context, chatID uuid.UUID, id int64) (int64, error) {
	return t.ExecRaw(ctx, `DELETE FROM chat_queued_messages WHERE chat_id = ? AND id = ?`, chatID.String(), id)
}

// QueueDeleteAll empties a chat's queue.
func (t *tx) QueueDeleteAll(ctx context.Context, chatID uuid.UUID) (int64, error) {
	return t.ExecRaw(ctx, `DELETE FROM chat_queued_messages WHERE chat_id = ?`, chatID.String())
}

// QueueCount counts queued messages.
func (t *tx) QueueCount(ctx context.Context, chatID uuid.UUID) (int64, error) {
	var n int64
	err := t.tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM chat_queued_messages WHERE chat_id = ?`, chatID.String()).Scan(&n)
	return n, translate(err)
}

// --- users and tokens ---

func scanUser(r rowScanner) (store.User, error) {
	var (
		u           store.User
		id, created string
		admin       int
	)
	if err := r.Scan(&id, &u.Name, &admin, &created); err != nil {
		return store.User{}, translate(err)
	}
	var s scanner
	s.uuid(&u.ID, id)
	s.time(&u.CreatedAt, created)
	u.Admin = admin != 0
	return u, s.err
}

// UserInsert creates a user.
func (t *tx) UserInsert(ctx context.Context, p store.UserInsertParams) (store.User, error) {
	return scanUser(t.tx.QueryRowContext(ctx, `INSERT INTO users (id, name, admin, created_at)
		VALUES (?, ?, ?, ?) RETURNING id, name, admin, created_at`,
		p.ID.String(), p.Name, boolInt(p.Admin), ts(p.Now)))
}

// UserGet reads a user by id.
func (t *tx) UserGet(ctx context.Context, id uuid.UUID) (store.User, error) {
	return scanUser(t.tx.QueryRowContext(ctx, `SELECT id, name, admin, created_at FROM users WHERE id = ?`, id.String()))
}

// UserGetByName reads a user by name.
func (t *tx) UserGetByName(ctx context.Context, name string) (store.User, error) {
	return scanUser(t.tx.QueryRowContext(ctx, `SELECT id, name, admin, created_at FROM users WHERE name = ?`, name))
}

// ReplicaUpsert publishes a replica's relay address.
func (t *tx) ReplicaUpsert(ctx context.Context, r store.Replica) error {
	_, err := t.exec(ctx, `INSERT INTO chat_replicas (worker_id, address, token, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (worker_id) DO UPDATE SET address = excluded.address, token = excluded.token, updated_at = excluded.updated_at`,
		r.WorkerID.String(), r.Address, r.Token, ts(r.UpdatedAt))
	return err
}

// ReplicaGet reads a replica.
func (t *tx) ReplicaGet(ctx context.Context, workerID uuid.UUID) (store.Replica, error) {
	var (
		r           store.Replica
		id, updated string
	)
	err := t.tx.QueryRowContext(ctx, `SELECT worker_id, address, token, updated_at FROM chat_replicas WHERE worker_id = ?`,
		workerID.String()).Scan(&id, &r.Address, &r.Token, &updated)
	if err != nil {
		return store.Replica{}, translate(err)
	}
	var s scanner
	s.uuid(&r.WorkerID, id)
	s.time(&r.UpdatedAt, updated)
	return r, s.err
}

// ReplicaDelete removes a replica's record.
func (t *tx) ReplicaDelete(ctx context.Context, workerID uuid.UUID) error {
	_, err := t.exec(ctx, `DELETE FROM chat_replicas WHERE worker_id = ?`, workerID.String())
	return err
}

// UserSetAdmin grants or revokes admin.
func (t *tx) UserSetAdmin(ctx context.Context, id uuid.UUID, admin bool) error {
	n, err := t.ExecRaw(ctx, `UPDATE users SET admin = ? WHERE id = ?`, boolInt(admin), id.String())
	if err == nil && n == 0 {
		return store.ErrNotFound
	}
	return err
}

// UserCount counts users.
func (t *tx) UserCount(ctx context.Context) (int64, error) {
	var n int64
	err := t.tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM users`).Scan(&n)
	return n, translate(err)
}

func scanToken(r rowScanner) (store.Token, error) {
	var (
		tok               store.Token
		id, user, created string
	)
	if err := r.Scan(&id, &user, &tok.Hash, &tok.Name, &created); err != nil {
		return store.Token{}, translate(err)
	}
	var s scanner
	s.uuid(&tok.ID, id)
	s.uuid(&tok.UserID, user)
	s.time(&tok.CreatedAt, created)
	return tok, s.err
}

// TokenInsert stores a token hash.
func (t *tx) TokenInsert(ctx context.Context, p store.TokenInsertParams) (store.Token, error) {
	return scanToken(t.tx.QueryRowContext(ctx, `INSERT INTO api_tokens (id, user_id, hash, name, created_at)
		VALUES (?, ?, ?, ?, ?) RETURNING id, user_id, hash, name, created_at`,
		p.ID.String(), p.UserID.String(), p.Hash, p.Name, ts(p.Now)))
}

// TokenGetByHash finds a token by hash.
func (t *tx) TokenGetByHash(ctx context.Context, hash []byte) (store.Token, error) {
	return scanToken(t.tx.QueryRowContext(ctx, `SELECT id, user_id, hash, name, created_at
		FROM api_tokens WHERE hash = ?`, hash))
}

// TokenDeleteByHash removes one token.
func (t *tx) TokenDeleteByHash(ctx context.Context, hash []byte) (int64, error) {
	return t.ExecRaw(ctx, `DELETE FROM api_tokens WHERE hash = ?`, hash)
}

// TokenDeleteForUser removes a user's tokens.
func (t *tx) TokenDeleteForUser(ctx context.Context, userID uuid.UUID) (int64, error) {
	return t.ExecRaw(ctx, `DELETE FROM api_tokens WHERE user_id = ?`, userID.String())
}

// Pragma reads a pragma's value on the transaction's connection.
func Pragma(ctx context.Context, stx store.Tx, name string) (string, error) {
	t, ok := stx.(*tx)
	if !ok {
		return "", fmt.Errorf("not a sqlite transaction")
	}
	var v string
	err := t.tx.QueryRowContext(ctx, "PRAGMA "+name).Scan(&v)
	return v, translate(err)
}
