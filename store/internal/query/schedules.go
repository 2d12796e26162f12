package query

const (
	// ScheduleColumns lists the schedules columns in the order the drivers scan them.
	// ScheduleColumns lists the schedules columns in the order the drivers scan them.
	ScheduleColumns = `id, chat_id, owner_id, content, kind, spec, timezone, enabled, new_chat, max_runs, run_count,
	next_run_at, last_run_at, created_at, updated_at`

	ScheduleInsert = `INSERT INTO schedules (id, chat_id, owner_id, content, kind, spec, timezone, enabled, new_chat, max_runs, run_count,
			next_run_at, last_run_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING ` + ScheduleColumns
	ScheduleGet          = `SELECT ` + ScheduleColumns + ` FROM schedules WHERE id = $1`
	ScheduleCountByOwner = `SELECT count(*) FROM schedules WHERE owner_id = $1`
	ScheduleDelete       = `DELETE FROM schedules WHERE id = $1`
	ScheduleRunInsert    = `INSERT INTO schedule_runs (schedule_id, due_at, status, request_id, chat_id, detail, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`
	ScheduleRunList = `SELECT schedule_id, due_at, status, request_id, chat_id, detail, created_at
		FROM schedule_runs WHERE schedule_id = $1 ORDER BY due_at DESC LIMIT $2`
)
