package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

func scanSchedule(row pgx.Row) (store.Schedule, error) {
	var s store.Schedule
	if err := row.Scan(&s.ID, &s.ChatID, &s.OwnerID, &s.Content, &s.Kind, &s.Spec, &s.Timezone, &s.Enabled, &s.NewChat,
		&s.MaxRuns, &s.RunCount, &s.NextRunAt, &s.LastRunAt, &s.CreatedAt, &s.UpdatedAt); err != nil {
		return store.Schedule{}, translate(err)
	}
	s.NextRunAt, s.LastRunAt = utcPtr(s.NextRunAt), utcPtr(s.LastRunAt)
	s.CreatedAt, s.UpdatedAt = utc(s.CreatedAt), utc(s.UpdatedAt)
	return s, nil
}

// ScheduleInsert creates a schedule.
func (t *tx) ScheduleInsert(ctx context.Context, s store.Schedule) (store.Schedule, error) {
	out, err := scanSchedule(t.tx.QueryRow(ctx,
		query.ScheduleInsert,
		s.ID, s.ChatID, s.OwnerID, s.Content, s.Kind, s.Spec, s.Timezone, s.Enabled, s.NewChat, s.MaxRuns, s.RunCount,
		s.NextRunAt, s.LastRunAt, s.CreatedAt, s.UpdatedAt))
	if err != nil {
		return store.Schedule{}, fmt.Errorf("insert schedule %s: %w", s.ID, err)
	}
	return out, nil
}

// ScheduleGet reads a schedule.
func (t *tx) ScheduleGet(ctx context.Context, id uuid.UUID) (store.Schedule, error) {
	s, err := scanSchedule(t.tx.QueryRow(ctx, query.ScheduleGet, id))
	if err != nil {
		return store.Schedule{}, fmt.Errorf("get schedule %s: %w", id, err)
	}
	return s, nil
}

// ScheduleLock reads a schedule FOR UPDATE.
func (t *tx) ScheduleLock(ctx context.Context, id uuid.UUID) (store.Schedule, error) {
	s, err := scanSchedule(t.tx.QueryRow(ctx, `SELECT `+query.ScheduleColumns+` FROM schedules WHERE id = $1 FOR UPDATE`, id))
	if err != nil {
		return store.Schedule{}, fmt.Errorf("lock schedule %s: %w", id, err)
	}
	return s, nil
}

// ScheduleList lists schedules oldest first.
func (t *tx) ScheduleList(ctx context.Context, p store.ScheduleListParams) ([]store.Schedule, error) {
	var a args
	stmt := `SELECT ` + query.ScheduleColumns + ` FROM schedules WHERE true`
	if p.ChatID.Valid {
		stmt += ` AND chat_id = ` + a.add(p.ChatID.UUID)
	}
	if p.OwnerID.Valid {
		stmt += ` AND owner_id = ` + a.add(p.OwnerID.UUID)
	}
	stmt += ` ORDER BY created_at, id LIMIT ` + a.add(store.ListLimit(p.Limit))
	rows, err := t.tx.Query(ctx, stmt, a...)
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
	if err := t.tx.QueryRow(ctx, query.ScheduleCountByOwner, ownerID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count schedules of user %s: %w", ownerID, translate(err))
	}
	return n, nil
}

// dueFrom is the schedules that may fire: enabled, with a due time, on an
// unarchived chat of an enabled user.
const dueFrom = ` FROM schedules s JOIN chats c ON c.id = s.chat_id JOIN users u ON u.id = s.owner_id
	WHERE s.enabled AND s.next_run_at IS NOT NULL AND NOT c.archived AND NOT u.disabled`

// ScheduleListDue lists the due schedules, earliest first.
func (t *tx) ScheduleListDue(ctx context.Context, now time.Time, limit int) ([]store.Schedule, error) {
	rows, err := t.tx.Query(ctx, `SELECT s.id, s.chat_id, s.owner_id, s.content, s.kind, s.spec, s.timezone, s.enabled,
		s.new_chat, s.max_runs, s.run_count, s.next_run_at, s.last_run_at, s.created_at, s.updated_at`+dueFrom+
		` AND s.next_run_at <= $1 ORDER BY s.next_run_at, s.id LIMIT $2`, now, store.ListLimit(limit))
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
	var next *time.Time
	if err := t.tx.QueryRow(ctx, `SELECT min(s.next_run_at)`+dueFrom).Scan(&next); err != nil {
		return time.Time{}, false, fmt.Errorf("next due schedule: %w", translate(err))
	}
	if next == nil {
		return time.Time{}, false, nil
	}
	return next.UTC(), true, nil
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
	s, err := scanSchedule(t.tx.QueryRow(ctx,
		`UPDATE schedules SET `+sets+` WHERE id = `+a.add(id)+` RETURNING `+query.ScheduleColumns, a...))
	if err != nil {
		return store.Schedule{}, fmt.Errorf("update schedule %s: %w", id, err)
	}
	return s, nil
}

// ScheduleDelete removes a schedule; its runs cascade.
func (t *tx) ScheduleDelete(ctx context.Context, id uuid.UUID) (int64, error) {
	tag, err := t.tx.Exec(ctx, query.ScheduleDelete, id)
	if err != nil {
		return 0, fmt.Errorf("delete schedule %s: %w", id, translate(err))
	}
	return tag.RowsAffected(), nil
}

// ScheduleRunInsert records one due time.
func (t *tx) ScheduleRunInsert(ctx context.Context, r store.ScheduleRun) error {
	_, err := t.tx.Exec(ctx, query.ScheduleRunInsert, r.ScheduleID, r.DueAt, r.Status, r.RequestID, r.ChatID, r.Detail, r.CreatedAt)
	if err != nil {
		return fmt.Errorf("record run of schedule %s due %s: %w", r.ScheduleID, r.DueAt.Format(time.RFC3339), translate(err))
	}
	return nil
}

func scanScheduleRun(row pgx.Row) (store.ScheduleRun, error) {
	var r store.ScheduleRun
	if err := row.Scan(&r.ScheduleID, &r.DueAt, &r.Status, &r.RequestID, &r.ChatID, &r.Detail, &r.CreatedAt); err != nil {
		return store.ScheduleRun{}, translate(err)
	}
	r.DueAt, r.CreatedAt = utc(r.DueAt), utc(r.CreatedAt)
	return r, nil
}

// ScheduleRunList lists a schedule's runs, latest due time first.
func (t *tx) ScheduleRunList(ctx context.Context, scheduleID uuid.UUID, limit int) ([]store.ScheduleRun, error) {
	rows, err := t.tx.Query(ctx, query.ScheduleRunList, scheduleID, store.ListLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("list runs of schedule %s: %w", scheduleID, translate(err))
	}
	out, err := collect(rows, scanScheduleRun)
	if err != nil {
		return nil, fmt.Errorf("list runs of schedule %s: %w", scheduleID, err)
	}
	return out, nil
}
