package postgres

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

func scanProject(row pgx.Row) (store.Project, error) {
	var p store.Project
	if err := row.Scan(&p.ID, &p.OwnerID, &p.Name, &p.Instructions, &p.CreatedAt, &p.UpdatedAt); err != nil {
		return store.Project{}, translate(err)
	}
	p.CreatedAt = utc(p.CreatedAt)
	p.UpdatedAt = utc(p.UpdatedAt)
	return p, nil
}

// ProjectInsert creates a project.
func (t *tx) ProjectInsert(ctx context.Context, p store.ProjectInsertParams) (store.Project, error) {
	pr, err := scanProject(t.tx.QueryRow(ctx,
		`INSERT INTO projects (id, owner_id, name, instructions, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $5) RETURNING `+query.ProjectColumns,
		p.ID, p.OwnerID, p.Name, p.Instructions, p.Now))
	if err != nil {
		return store.Project{}, fmt.Errorf("insert project %s: %w", p.ID, err)
	}
	return pr, nil
}

// ProjectGet reads a project.
func (t *tx) ProjectGet(ctx context.Context, id uuid.UUID) (store.Project, error) {
	p, err := scanProject(t.tx.QueryRow(ctx, query.ProjectGet, id))
	if err != nil {
		return store.Project{}, fmt.Errorf("get project %s: %w", id, err)
	}
	return p, nil
}

// ProjectList lists projects oldest first.
func (t *tx) ProjectList(ctx context.Context, p store.ProjectListParams) ([]store.Project, error) {
	var a args
	stmt := query.ProjectList
	if p.OwnerID.Valid {
		stmt += ` WHERE owner_id = ` + a.add(p.OwnerID.UUID)
	}
	stmt += ` ORDER BY created_at, id LIMIT ` + a.add(store.ListLimit(p.Limit))
	rows, err := t.tx.Query(ctx, stmt, a...)
	if err != nil {
		return nil, fmt.Errorf("list projects: %w", translate(err))
	}
	out, err := collect(rows, scanProject)
	if err != nil {
		return nil, fmt.Errorf("list projects: %w", err)
	}
	return out, nil
}

// ProjectCountChats counts the chats in a project.
func (t *tx) ProjectCountChats(ctx context.Context, id uuid.UUID) (int64, error) {
	var n int64
	if err := t.tx.QueryRow(ctx, query.ProjectCountChats, id).Scan(&n); err != nil {
		return 0, fmt.Errorf("count chats of project %s: %w", id, translate(err))
	}
	return n, nil
}

// ProjectUpdate writes the set fields of p.
func (t *tx) ProjectUpdate(ctx context.Context, id uuid.UUID, p store.ProjectPatch) (store.Project, error) {
	as := p.Assignments()
	if len(as) == 0 {
		return t.ProjectGet(ctx, id)
	}
	var a args
	sets, err := setClause(as, &a)
	if err != nil {
		return store.Project{}, fmt.Errorf("update project %s: %w", id, err)
	}
	pr, err := scanProject(t.tx.QueryRow(ctx,
		`UPDATE projects SET `+sets+` WHERE id = `+a.add(id)+` RETURNING `+query.ProjectColumns, a...))
	if err != nil {
		return store.Project{}, fmt.Errorf("update project %s: %w", id, err)
	}
	return pr, nil
}

// ProjectDelete removes a project; its memories cascade.
func (t *tx) ProjectDelete(ctx context.Context, id uuid.UUID) (int64, error) {
	tag, err := t.tx.Exec(ctx, query.ProjectDelete, id)
	if err != nil {
		return 0, fmt.Errorf("delete project %s: %w", id, translate(err))
	}
	return tag.RowsAffected(), nil
}

// memoryLockClass is the first key of the per-project memory advisory
// locks (the second is a hash of the project id); two-key locks never
// collide with the one-key admission lock.
const memoryLockClass = 0x6d656d6f // "memo"

// ProjectLockMemory takes the project's transaction-scoped memory lock,
// waiting at most 5 seconds, and returns the project.
func (t *tx) ProjectLockMemory(ctx context.Context, id uuid.UUID) (store.Project, error) {
	if _, err := t.tx.Exec(ctx, `SET LOCAL lock_timeout = '5s'`); err != nil {
		return store.Project{}, fmt.Errorf("set lock_timeout: %w", translate(err))
	}
	if _, err := t.tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, int32(memoryLockClass), id.String()); err != nil {
		return store.Project{}, fmt.Errorf("lock memory of project %s: %w", id, translate(err))
	}
	p, err := t.ProjectGet(ctx, id)
	if err != nil {
		return store.Project{}, fmt.Errorf("lock memory of project %s: %w", id, err)
	}
	return p, nil
}

func scanMemory(row pgx.Row) (store.Memory, error) {
	var m store.Memory
	if err := row.Scan(&m.ProjectID, &m.Name, &m.Content, &m.ChatID, &m.UpdatedAt); err != nil {
		return store.Memory{}, translate(err)
	}
	m.UpdatedAt = utc(m.UpdatedAt)
	return m, nil
}

// MemoryList lists a project's memories by name.
func (t *tx) MemoryList(ctx context.Context, projectID uuid.UUID) ([]store.Memory, error) {
	rows, err := t.tx.Query(ctx,
		`SELECT `+query.MemoryColumns+` FROM project_memories WHERE project_id = $1 ORDER BY name COLLATE "C"`, projectID)
	if err != nil {
		return nil, fmt.Errorf("list memories of project %s: %w", projectID, translate(err))
	}
	out, err := collect(rows, scanMemory)
	if err != nil {
		return nil, fmt.Errorf("list memories of project %s: %w", projectID, err)
	}
	return out, nil
}

// MemoryGet reads one memory.
func (t *tx) MemoryGet(ctx context.Context, projectID uuid.UUID, name string) (store.Memory, error) {
	m, err := scanMemory(t.tx.QueryRow(ctx,
		query.MemoryGet, projectID, name))
	if err != nil {
		return store.Memory{}, fmt.Errorf("get memory %q of project %s: %w", name, projectID, err)
	}
	return m, nil
}

// MemoryCount counts a project's memories.
func (t *tx) MemoryCount(ctx context.Context, projectID uuid.UUID) (int64, error) {
	var n int64
	if err := t.tx.QueryRow(ctx,
		query.MemoryCount, projectID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count memories of project %s: %w", projectID, translate(err))
	}
	return n, nil
}

// ProjectCountByOwner counts the projects a user owns.
func (t *tx) ProjectCountByOwner(ctx context.Context, ownerID uuid.UUID) (int64, error) {
	var n int64
	if err := t.tx.QueryRow(ctx,
		query.ProjectCountByOwner, ownerID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count projects of user %s: %w", ownerID, translate(err))
	}
	return n, nil
}

// MemoryCountByOwner counts the memories of a user's projects.
func (t *tx) MemoryCountByOwner(ctx context.Context, ownerID uuid.UUID) (int64, error) {
	var n int64
	if err := t.tx.QueryRow(ctx, query.MemoryCountByOwner, ownerID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count memories of user %s: %w", ownerID, translate(err))
	}
	return n, nil
}

// MemoryUpsert writes a memory by (project, name).
func (t *tx) MemoryUpsert(ctx context.Context, m store.Memory) (store.Memory, error) {
	out, err := scanMemory(t.tx.QueryRow(ctx, query.MemoryUpsert,
		m.ProjectID, m.Name, m.Content, m.ChatID, m.UpdatedAt))
	if err != nil {
		return store.Memory{}, fmt.Errorf("save memory %q of project %s: %w", m.Name, m.ProjectID, err)
	}
	return out, nil
}

// MemoryDelete removes one memory.
func (t *tx) MemoryDelete(ctx context.Context, projectID uuid.UUID, name string) (int64, error) {
	tag, err := t.tx.Exec(ctx, query.MemoryDelete, projectID, name)
	if err != nil {
		return 0, fmt.Errorf("delete memory %q of project %s: %w", name, projectID, err)
	}
	return tag.RowsAffected(), nil
}
