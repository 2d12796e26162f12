package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"
)

// Error codes of projects and project memory.
const (
	// CodeProjectNotEmpty: DELETE of a project that still has chats (409).
	CodeProjectNotEmpty = "PROJECT_NOT_EMPTY"
	// CodeMemoryFull: a save of a new memory name in a project that holds
	// the maximum (409).
	CodeMemoryFull = "MEMORY_FULL"
)

// Project groups chats under shared instructions and a durable memory.
type Project struct {
	ID           uuid.UUID `json:"id"`
	Name         string    `json:"name"`
	Instructions string    `json:"instructions"`
	OwnerID      uuid.UUID `json:"owner_id"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// CreateProjectRequest is the body of POST /projects.
type CreateProjectRequest struct {
	Name         string `json:"name"`
	Instructions string `json:"instructions,omitempty"`
}

// UpdateProjectRequest is the body of PATCH /projects/{project}.
type UpdateProjectRequest struct {
	Name         *string `json:"name,omitempty"`
	Instructions *string `json:"instructions,omitempty"`
}

// ProjectMemory is one memory of a project.
type ProjectMemory struct {
	Name    string `json:"name"`
	Content string `json:"content"`
	// ChatID is the chat whose agent wrote it; null when a person did.
	ChatID    *uuid.UUID `json:"chat_id"`
	UpdatedAt time.Time  `json:"updated_at"`
}

// PutMemoryRequest is the body of PUT /projects/{project}/memories/{name}.
type PutMemoryRequest struct {
	Content string `json:"content"`
}

// ProjectSelection is PATCH /chats/{chat}'s project_id: unset (the zero
// value) leaves the chat where it is; Set with an invalid ID sends null,
// out of any project; Set with an ID moves the chat (and its family) there.
type ProjectSelection struct {
	Set bool
	ID  uuid.NullUUID
}

// SelectProject is a set selection: uuid.Nil means no project.
func SelectProject(id uuid.UUID) ProjectSelection {
	return ProjectSelection{Set: true, ID: uuid.NullUUID{UUID: id, Valid: id != uuid.Nil}}
}

// IsZero reports an unset selection, which omitzero leaves out.
func (s ProjectSelection) IsZero() bool { return !s.Set }

// MarshalJSON writes null or the id.
func (s ProjectSelection) MarshalJSON() ([]byte, error) { return json.Marshal(s.ID) }

// UnmarshalJSON reads null or an id; either sets it.
func (s *ProjectSelection) UnmarshalJSON(b []byte) error {
	var id uuid.NullUUID
	if err := json.Unmarshal(b, &id); err != nil {
		return fmt.Errorf("project_id: %w", err)
	}
	*s = ProjectSelection{Set: true, ID: id}
	return nil
}

// CreateProject creates a project (POST /projects).
func (c *Client) CreateProject(ctx context.Context, req CreateProjectRequest) (Project, error) {
	var out Project
	return out, c.Do(ctx, http.MethodPost, "/projects", req, &out)
}

// Projects lists the projects the caller may see (GET /projects).
func (c *Client) Projects(ctx context.Context) ([]Project, error) {
	var out []Project
	return out, c.Do(ctx, http.MethodGet, "/projects", nil, &out)
}

// Project reads a project (GET /projects/{project}).
func (c *Client) Project(ctx context.Context, id uuid.UUID) (Project, error) {
	var out Project
	return out, c.Do(ctx, http.MethodGet, "/projects/"+id.String(), nil, &out)
}

// UpdateProject changes a project (PATCH /projects/{project}).
func (c *Client) UpdateProject(ctx context.Context, id uuid.UUID, req UpdateProjectRequest) (Project, error) {
	var out Project
	return out, c.Do(ctx, http.MethodPatch, "/projects/"+id.String(), req, &out)
}

// DeleteProject deletes a project without chats (DELETE /projects/{project}).
func (c *Client) DeleteProject(ctx context.Context, id uuid.UUID) error {
	return c.Do(ctx, http.MethodDelete, "/projects/"+id.String(), nil, nil)
}

// Memories lists a project's memories (GET /projects/{project}/memories).
func (c *Client) Memories(ctx context.Context, project uuid.UUID) ([]ProjectMemory, error) {
	var out []ProjectMemory
	return out, c.Do(ctx, http.MethodGet, "/projects/"+project.String()+"/memories", nil, &out)
}

// Memory reads one memory (GET /projects/{project}/memories/{name}).
func (c *Client) Memory(ctx context.Context, project uuid.UUID, name string) (ProjectMemory, error) {
	var out ProjectMemory
	return out, c.Do(ctx, http.MethodGet, "/projects/"+project.String()+"/memories/"+url.PathEscape(name), nil, &out)
}

// PutMemory creates or replaces a memory (PUT /projects/{project}/memories/{name}).
func (c *Client) PutMemory(ctx context.Context, project uuid.UUID, name, content string) (ProjectMemory, error) {
	var out ProjectMemory
	return out, c.Do(ctx, http.MethodPut, "/projects/"+project.String()+"/memories/"+url.PathEscape(name), PutMemoryRequest{Content: content}, &out)
}

// DeleteMemory deletes a memory (DELETE /projects/{project}/memories/{name}).
func (c *Client) DeleteMemory(ctx context.Context, project uuid.UUID, name string) error {
	return c.Do(ctx, http.MethodDelete, "/projects/"+project.String()+"/memories/"+url.PathEscape(name), nil, nil)
}
