package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

func scanSchedule(row rowScanner) (store.Schedule, error) {
	var (
		s                        store.Schedule
		id, chat, owner, content string
		created, updated         string
		next, last               sql.NullString
		enabled, newChat         int
	)
	if err := row.Scan(&id, &chat, &owner, &content, &s.Kind, &s.Spec, &s.Timezone, &enabled, &newChat, &s.MaxRuns, &s.RunCount,
		&next, &last, &created, &updated); err != nil {
		return store.Schedule{}, translate(err)
	}
	var sc scanner
	sc.uuid(&s.ID, id)
	sc.uuid(&s.ChatID, chat)
	sc.uuid(&s.OwnerID, owner)
	sc.timePtr(&s.NextRunAt, next)
	sc.timePtr(&s.LastRunAt, last)
	sc.time(&s.CreatedAt, created)
	sc.time(&s.UpdatedAt, updated)
	if sc.err != nil {
		return store.Schedule{}, sc.err
	}
	s.Content, s.Enabled, s.NewChat = []byte(content), enabled != 0, newChat != 0
	return s, nil
}

// ScheduleInsert creates a schedule.
func (t *tx) ScheduleInsert(ctx context.Context, s store.Schedule) (store.Schedule, error) {
	if err := checkJSON(s.Content); err != nil {
		return store.Schedule{}, fmt.Errorf("insert schedule %s: %w", s.ID, err)
	}
	out, err := scanSchedule(t.tx.QueryRowContext(ctx,
		query.ScheduleInsert,
		s.ID.String(), s.ChatID.String(), s.OwnerID.String(), string(s.Content), s.Kind, s.Spec, s.Timezone,
		boolInt(s.Enabled), boolInt(s.NewChat), s.MaxRuns, s.RunCount, tsPtr(s.NextRunAt), tsPtr(s.LastRunAt),
		ts(s.CreatedAt), ts(s.UpdatedAt)))
	if err != nil {
		return store.Schedule{}, fmt.Errorf("insert schedule %s: %w", s.ID, err)
	}
	return out, nil
}

// ScheduleGet reads a schedule.
func (t *tx) ScheduleGet(ctx context.Context, id uuid.UUID) (store.Schedule, error) {
	s, err := scanSchedule(t.tx.QueryRowContext(ctx, query.ScheduleGet, id.String()))
	if err != nil {
		return store.Schedule{}, fmt.Errorf("get schedule %s: %w", id, err)
	}
	return s, nil
}

// ScheduleLock reads a schedule: the IMMEDIATE transaction already holds
// the database write lock.
func (t *tx) ScheduleLock(ctx context.Context, id uuid.UUID) (store.Schedule, error) {
	return t.ScheduleGet(ctx, id)
}

// ScheduleList lists schedules oldest first.
func (t *tx) ScheduleList(ctx context.Context, p store.ScheduleListParams) ([]store.Schedule, error) {
	var a args
	stmt := `SELECT ` + query.ScheduleColumns + ` FROM schedules WHERE 1 = 1`
	if p.ChatID.Valid {
		stmt += ` AND chat_id = ` + a.add(p.ChatID.UUID.String())
	}
	if p.OwnerID.Valid {
		stmt += ` AND owner_id = ` + a.add(p.OwnerID.UUID.String())
	}
	stmt += ` ORDER BY created_at, id LIMIT ` + a.add(store.ListLimit(p.Limit))
	rows, err := t.tx.QueryContext(ctx, stmt, a...)
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", translate(err))
	}
	out, err := collect(rows, scanSchedule)
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	return out, nil
}

// ScheduleCountByOwner counts a user's schedules.
func (t *tx) ScheduleCountByOwner(ctx context.Context, ownerID uuid.UUID) (int64, error) {
	var n int64
	if err := t.tx.QueryRowContext(ctx, query.ScheduleCountByOwner, ownerID.String()).Scan(&n); err != nil {
		return 0, fmt.Errorf("count schedules of user %s: %w", ownerID, translate(err))
	}
	return n, nil
}

// dueFrom is the schedules that may fire: enabled, with a due time, on an
// unarchived chat of an enabled user.
const dueFrom = ` FROM schedules s JOIN chats c ON c.id = s.chat_id JOIN users u ON u.id = s.owner_id
	WHERE s.enabled = 1 AND s.next_run_at IS NOT NULL AND c.archived = 0 AND u.disabled = 0`

// ScheduleListDue lists the due schedules, earliest first.
func (t *tx) ScheduleListDue(ctx context.Context, now time.Time, limit int) ([]store.Schedule, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT s.id, s.chat_id, s.owner_id, s.content, s.kind, s.spec, s.timezone, s.enabled,
		s.new_chat, s.max_runs, s.run_count, s.next_run_at, s.last_run_at, s.created_at, s.updated_at`+dueFrom+
		` AND s.next_run_at <= ? ORDER BY s.next_run_at, s.id LIMIT ?`, ts(now), store.ListLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("list due schedules: %w", translate(err))
	}
	out, err := collect(rows, scanSchedule)
	if err != nil {
		return nil, fmt.Errorf("list due schedules: %w", err)
	}
	return out, nil
}

// ScheduleNextDue reads the earliest due time.
func (t *tx) ScheduleNextDue(ctx context.Context) (time.Time, bool, error) {
	var next sql.NullString
	if err := t.tx.QueryRowContext(ctx, `SELECT min(s.next_run_at)`+dueFrom).Scan(&next); err != nil {
		return time.Time{}, false, fmt.Errorf("next due schedule: %w", translate(err))
	}
	if !next.Valid {
		return time.Time{}, false, nil
	}
	at, err := parseTS(next.String)
	return at, err == nil, err
}

// ScheduleUpdate writes the set fields of p.
func (t *tx) ScheduleUpdate(ctx context.Context, id uuid.UUID, p store.SchedulePatch) (store.Schedule, error) {
	as := p.Assignments()
	if len(as) == 0 {
		return t.ScheduleGet(ctx, id)
	}
	var a args
	sets, err := setClause(as, &a)
	if err != nil {
		return store.Schedule{}, fmt.Errorf("update schedule %s: %w", id, err)
	}
	s, err := scanSchedule(t.tx.QueryRowContext(ctx,
		`UPDATE schedules SET `+sets+` WHERE id = `+a.add(id.String())+` RETURNING `+query.ScheduleColumns, a...))
	if err != nil {
		return store.Schedule{}, fmt.Errorf("update schedule %s: %w", id, err)
	}
	return s, nil
}

// ScheduleDelete removes a schedule; its runs cascade.
func (t *tx) ScheduleDelete(ctx context.Context, id uuid.UUID) (int64, error) {
	n, err := t.exec(ctx, query.ScheduleDelete, id.String())
	if err != nil {
		return 0, fmt.Errorf("delete schedule %s: %w", id, err)
	}
	return n, nil
}

// ScheduleRunInsert records one due time.
func (t *tx) ScheduleRunInsert(ctx context.Context, r store.ScheduleRun) error {
	_, err := t.exec(ctx, query.ScheduleRunInsert, r.ScheduleID.String(), ts(r.DueAt), r.Status, nullUUID(r.RequestID), nullUUID(r.ChatID),
		r.Detail, ts(r.CreatedAt))
	if err != nil {
		return fmt.Errorf("record run of schedule %s due %s: %w", r.ScheduleID, r.DueAt.Format(time.RFC3339), err)
	}
	return nil
}

func scanScheduleRun(row rowScanner) (store.ScheduleRun, error) {
	var (
		r                store.ScheduleRun
		id, due, created string
		request, chat    sql.NullString
	)
	if err := row.Scan(&id, &due, &r.Status, &request, &chat, &r.Detail, &created); err != nil {
		return store.ScheduleRun{}, translate(err)
	}
	var sc scanner
	sc.uuid(&r.ScheduleID, id)
	sc.time(&r.DueAt, due)
	sc.nullUUID(&r.RequestID, request)
	sc.nullUUID(&r.ChatID, chat)
	sc.time(&r.CreatedAt, created)
	return r, sc.err
}

// ScheduleRunList lists a schedule's runs, latest due time first.
func (t *tx) ScheduleRunList(ctx context.Context, scheduleID uuid.UUID, limit int) ([]store.ScheduleRun, error) {
	rows, err := t.tx.QueryContext(ctx, query.ScheduleRunList, scheduleID.String(), store.ListLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("list runs of schedule %s: %w", scheduleID, translate(err))
	}
	out, err := collect(rows, scanScheduleRun)
	if err != nil {
		return nil, fmt.Errorf("list runs of schedule %s: %w", scheduleID, err)
	}
	return out, nil
}
