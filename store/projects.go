package store

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// ProjectReader reads projects and their memories (spec: "Project
// memory"). It is part of Reader.
type ProjectReader interface {
	// ProjectGet reads a project.
	ProjectGet(ctx context.Context, id uuid.UUID) (Project, error)

	// ProjectList lists projects oldest first (created_at, id): every
	// owner's, or one owner's when p.OwnerID is set.
	ProjectList(ctx context.Context, p ProjectListParams) ([]Project, error)

	// ProjectCountChats counts the chats in a project, archived ones included.
	ProjectCountChats(ctx context.Context, id uuid.UUID) (int64, error)

	// MemoryList lists a project's memories by name.
	MemoryList(ctx context.Context, projectID uuid.UUID) ([]Memory, error)

	// MemoryGet reads one memory (ErrNotFound when none).
	MemoryGet(ctx context.Context, projectID uuid.UUID, name string) (Memory, error)

	// MemoryCount counts a project's memories.
	MemoryCount(ctx context.Context, projectID uuid.UUID) (int64, error)

	// ProjectCountByOwner counts the projects a user owns (the per-user cap).
	ProjectCountByOwner(ctx context.Context, ownerID uuid.UUID) (int64, error)

	// MemoryCountByOwner counts the memories of every project a user owns
	// (the per-user cap).
	MemoryCountByOwner(ctx context.Context, ownerID uuid.UUID) (int64, error)
}

// ProjectTx writes projects and their memories. It is part of Tx; the
// writer is app/projects (projects are not chat state).
type ProjectTx interface {
	// ProjectInsert creates a project.
	ProjectInsert(ctx context.Context, p ProjectInsertParams) (Project, error)

	// ProjectUpdate writes the fields set in p and returns the row.
	ProjectUpdate(ctx context.Context, id uuid.UUID, p ProjectPatch) (Project, error)

	// ProjectDelete removes a project and its memories and reports whether
	// it existed; ErrForeignKey while chats are still in it.
	ProjectDelete(ctx context.Context, id uuid.UUID) (int64, error)

	// ProjectLockMemory serialises memory writes of one project until the
	// transaction ends (a Postgres advisory lock; SQLite's writer lock
	// already does) and returns the project.
	ProjectLockMemory(ctx context.Context, id uuid.UUID) (Project, error)

	// MemoryUpsert writes a memory by (project, name), replacing its
	// content, chat and time when it exists.
	MemoryUpsert(ctx context.Context, m Memory) (Memory, error)

	// MemoryDelete removes one memory and reports whether it existed.
	MemoryDelete(ctx context.Context, projectID uuid.UUID, name string) (int64, error)
}

// Project is one row of projects.
type Project struct {
	ID           uuid.UUID
	OwnerID      uuid.UUID
	Name         string
	Instructions string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// ProjectInsertParams create a project.
type ProjectInsertParams struct {
	ID           uuid.UUID
	OwnerID      uuid.UUID
	Name         string
	Instructions string
	Now          time.Time
}

// ProjectPatch names the project columns an update writes.
type ProjectPatch struct {
	Name         Opt[string]
	Instructions Opt[string]
	UpdatedAt    Opt[time.Time]
}

// Assignments lists the projects columns p writes, in a fixed order.
func (p ProjectPatch) Assignments() []Assignment {
	var as []Assignment
	as = set(as, "name", p.Name)
	as = set(as, "instructions", p.Instructions)
	as = set(as, "updated_at", p.UpdatedAt)
	return as
}

// ProjectListParams select projects.
type ProjectListParams struct {
	OwnerID uuid.NullUUID // unset lists every owner's (admins)
	Limit   int           // see ListLimit
}

// Memory is one row of project_memories.
type Memory struct {
	ProjectID uuid.UUID
	Name      string
	Content   string
	// ChatID is the chat that wrote it; unset when a person did.
	ChatID    uuid.NullUUID
	UpdatedAt time.Time
}
