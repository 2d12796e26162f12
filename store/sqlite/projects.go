package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

func scanProject(row rowScanner) (store.Project, error) {
	var (
		p                           store.Project
		id, owner, created, updated string
	)
	if err := row.Scan(&id, &owner, &p.Name, &p.Instructions, &created, &updated); err != nil {
		return store.Project{}, translate(err)
	}
	var s scanner
	s.uuid(&p.ID, id)
	s.uuid(&p.OwnerID, owner)
	s.time(&p.CreatedAt, created)
	s.time(&p.UpdatedAt, updated)
	if s.err != nil {
		return store.Project{}, s.err
	}
	return p, nil
}

// ProjectInsert creates a project.
func (t *tx) ProjectInsert(ctx context.Context, p store.ProjectInsertParams) (store.Project, error) {
	now := ts(p.Now)
	pr, err := scanProject(t.tx.QueryRowContext(ctx,
		`INSERT INTO projects (id, owner_id, name, instructions, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?) RETURNING `+query.ProjectColumns,
		p.ID.String(), p.OwnerID.String(), p.Name, p.Instructions, now, now))
	if err != nil {
		return store.Project{}, fmt.Errorf("insert project %s: %w", p.ID, err)
	}
	return pr, nil
}

// ProjectGet reads a project.
func (t *tx) ProjectGet(ctx context.Context, id uuid.UUID) (store.Project, error) {
	p, err := scanProject(t.tx.QueryRowContext(ctx, query.ProjectGet, id.String()))
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
		stmt += ` WHERE owner_id = ` + a.add(p.OwnerID.UUID.String())
	}
	stmt += ` ORDER BY created_at, id LIMIT ` + a.add(store.ListLimit(p.Limit))
	rows, err := t.tx.QueryContext(ctx, stmt, a...)
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
	if err := t.tx.QueryRowContext(ctx, query.ProjectCountChats, id.String()).Scan(&n); err != nil {
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
	pr, err := scanProject(t.tx.QueryRowContext(ctx,
		`UPDATE projects SET `+sets+` WHERE id = `+a.add(id.String())+` RETURNING `+query.ProjectColumns, a...))
	if err != nil {
		return store.Project{}, fmt.Errorf("update project %s: %w", id, err)
	}
	return pr, nil
}

// ProjectDelete removes a project; its memories cascade.
func (t *tx) ProjectDelete(ctx context.Context, id uuid.UUID) (int64, error) {
	n, err := t.exec(ctx, query.ProjectDelete, id.String())
	if err != nil {
		return 0, fmt.Errorf("delete project %s: %w", id, err)
	}
	return n, nil
}

// ProjectLockMemory returns the project: the IMMEDIATE transaction already
// holds the database write lock, which serialises every writer.
func (t *tx) ProjectLockMemory(ctx context.Context, id uuid.UUID) (store.Project, error) {
	p, err := t.ProjectGet(ctx, id)
	if err != nil {
		return store.Project{}, fmt.Errorf("lock memory of project %s: %w", id, err)
	}
	return p, nil
}

func scanMemory(row rowScanner) (store.Memory, error) {
	var (
		m                store.Memory
		project, updated string
		chat             sql.NullString
	)
	if err := row.Scan(&project, &m.Name, &m.Content, &chat, &updated); err != nil {
		return store.Memory{}, translate(err)
	}
	var s scanner
	s.uuid(&m.ProjectID, project)
	s.nullUUID(&m.ChatID, chat)
	s.time(&m.UpdatedAt, updated)
	if s.err != nil {
		return store.Memory{}, s.err
	}
	return m, nil
}

// MemoryList lists a project's memories by name.
func (t *tx) MemoryList(ctx context.Context, projectID uuid.UUID) ([]store.Memory, error) {
	rows, err := t.tx.QueryContext(ctx,
		`SELECT `+query.MemoryColumns+` FROM project_memories WHERE project_id = ? ORDER BY name`, projectID.String())
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
	m, err := scanMemory(t.tx.QueryRowContext(ctx,
		query.MemoryGet, projectID.String(), name))
	if err != nil {
		return store.Memory{}, fmt.Errorf("get memory %q of project %s: %w", name, projectID, err)
	}
	return m, nil
}

// MemoryCount counts a project's memories.
func (t *tx) MemoryCount(ctx context.Context, projectID uuid.UUID) (int64, error) {
	var n int64
	if err := t.tx.QueryRowContext(ctx,
		query.MemoryCount, projectID.String()).Scan(&n); err != nil {
		return 0, fmt.Errorf("count memories of project %s: %w", projectID, translate(err))
	}
	return n, nil
}

// ProjectCountByOwner counts the projects a user owns.
func (t *tx) ProjectCountByOwner(ctx context.Context, ownerID uuid.UUID) (int64, error) {
	var n int64
	if err := t.tx.QueryRowContext(ctx,
		query.ProjectCountByOwner, ownerID.String()).Scan(&n); err != nil {
		return 0, fmt.Errorf("count projects of user %s: %w", ownerID, translate(err))
	}
	return n, nil
}

// MemoryCountByOwner counts the memories of a user's projects.
func (t *tx) MemoryCountByOwner(ctx context.Context, ownerID uuid.UUID) (int64, error) {
	var n int64
	if err := t.tx.QueryRowContext(ctx, query.MemoryCountByOwner, ownerID.String()).Scan(&n); err != nil {
		return 0, fmt.Errorf("count memories of user %s: %w", ownerID, translate(err))
	}
	return n, nil
}

// MemoryUpsert writes a memory by (project, name).
func (t *tx) MemoryUpsert(ctx context.Context, m store.Memory) (store.Memory, error) {
	out, err := scanMemory(t.tx.QueryRowContext(ctx, query.MemoryUpsert,
		m.ProjectID.String(), m.Name, m.Content, nullUUID(m.ChatID), ts(m.UpdatedAt)))
	if err != nil {
		return store.Memory{}, fmt.Errorf("save memory %q of project %s: %w", m.Name, m.ProjectID, err)
	}
	return out, nil
}

// MemoryDelete removes one memory.
func (t *tx) MemoryDelete(ctx context.Context, projectID uuid.UUID, name string) (int64, error) {
	n, err := t.exec(ctx, query.MemoryDelete, projectID.String(), name)
	if err != nil {
		return 0, fmt.Errorf("delete memory %q of project %s: %w", name, projectID, err)
	}
	return n, nil
}
