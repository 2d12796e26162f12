package api

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/projects"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// Projects and their memory (API.md "Projects and memory"). The rows are
// app/projects'; the handlers only check who asks and translate.

func (s *Server) projectRoutes(route func(method, path string, h func(http.ResponseWriter, *http.Request, *caller) error)) {
	route("POST", "/projects", s.createProject)
	route("GET", "/projects", s.listProjects)
	route("GET", "/projects/{project}", s.getProject)
	route("PATCH", "/projects/{project}", s.patchProject)
	route("DELETE", "/projects/{project}", s.deleteProject)
	route("GET", "/projects/{project}/memories", s.listMemories)
	route("GET", "/projects/{project}/memories/{name}", s.getMemory)
	route("PUT", "/projects/{project}/memories/{name}", s.putMemory)
	route("DELETE", "/projects/{project}/memories/{name}", s.deleteMemory)
}

var errProjectsOff = newError(http.StatusNotFound, sdk.CodeNotFound, "Projects are not available on this server.", "")

func (c *caller) viewer() projects.Viewer {
	return projects.Viewer{UserID: c.user.ID, Admin: c.user.Admin}
}

// projectError maps the errors of app/projects.
func projectError(err error) (*apiError, bool) {
	var ie *projects.InputError
	switch {
	case errors.As(err, &ie):
		return validation(ie.Field, ie.Detail), true
	case errors.Is(err, projects.ErrNotFound):
		return newError(http.StatusNotFound, sdk.CodeNotFound, "Not found.", err.Error()), true
	case errors.Is(err, projects.ErrNotEmpty):
		return newError(http.StatusConflict, sdk.CodeProjectNotEmpty,
			"The project still has chats; delete them or move them out of the project first.", err.Error()), true
	case errors.Is(err, projects.ErrLimitReached):
		return errLimitReached(err.Error()), true
	case errors.Is(err, projects.ErrMemoryFull):
		return newError(http.StatusConflict, sdk.CodeMemoryFull,
			"The project's memory is full; delete a memory or fold this one into an existing one.", err.Error()), true
	}
	return nil, false
}

// ToProject is a project's wire form.
func toProject(p store.Project) sdk.Project {
	return sdk.Project{ID: p.ID, Name: p.Name, Instructions: p.Instructions, OwnerID: p.OwnerID, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

func toMemory(m store.Memory) sdk.ProjectMemory {
	out := sdk.ProjectMemory{Name: m.Name, Content: m.Content, UpdatedAt: m.UpdatedAt}
	if m.ChatID.Valid {
		id := m.ChatID.UUID
		out.ChatID = &id
	}
	return out
}

func (s *Server) createProject(w http.ResponseWriter, r *http.Request, c *caller) error {
	if s.deps.Projects == nil {
		return errProjectsOff
	}
	var req sdk.CreateProjectRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	p, err := s.deps.Projects.Create(r.Context(), c.user.ID, req.Name, req.Instructions)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toProject(p))
	return nil
}

func (s *Server) listProjects(w http.ResponseWriter, r *http.Request, c *caller) error {
	if s.deps.Projects == nil {
		return errProjectsOff
	}
	limit, err := queryInt(r, "limit", DefaultListLimit, 1, MaxListLimit)
	if err != nil {
		return err
	}
	ps, err := s.deps.Projects.List(r.Context(), c.viewer(), int(limit))
	if err != nil {
		return err
	}
	out := make([]sdk.Project, 0, len(ps))
	for _, p := range ps {
		out = append(out, toProject(p))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// project reads the path's project, which the caller must see.
func (s *Server) project(r *http.Request, c *caller) (store.Project, error) {
	if s.deps.Projects == nil {
		return store.Project{}, errProjectsOff
	}
	id, err := pathUUID(r, "project")
	if err != nil {
		return store.Project{}, err
	}
	return s.deps.Projects.Get(r.Context(), c.viewer(), id)
}

func (s *Server) getProject(w http.ResponseWriter, r *http.Request, c *caller) error {
	p, err := s.project(r, c)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toProject(p))
	return nil
}

func (s *Server) patchProject(w http.ResponseWriter, r *http.Request, c *caller) error {
	p, err := s.project(r, c)
	if err != nil {
		return err
	}
	var req sdk.UpdateProjectRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	p, err = s.deps.Projects.Update(r.Context(), c.viewer(), p.ID, projects.Change{Name: req.Name, Instructions: req.Instructions})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toProject(p))
	return nil
}

func (s *Server) deleteProject(w http.ResponseWriter, r *http.Request, c *caller) error {
	p, err := s.project(r, c)
	if err != nil {
		return err
	}
	if err := s.deps.Projects.Delete(r.Context(), c.viewer(), p.ID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) listMemories(w http.ResponseWriter, r *http.Request, c *caller) error {
	p, err := s.project(r, c)
	if err != nil {
		return err
	}
	ms, err := s.deps.Projects.Memories(r.Context(), p.ID)
	if err != nil {
		return err
	}
	out := make([]sdk.ProjectMemory, 0, len(ms))
	for _, m := range ms {
		out = append(out, toMemory(m))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getMemory(w http.ResponseWriter, r *http.Request, c *caller) error {
	p, err := s.project(r, c)
	if err != nil {
		return err
	}
	m, err := s.deps.Projects.Memory(r.Context(), p.ID, r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toMemory(m))
	return nil
}

// putMemory creates (201) or replaces (200) a memory as a person: the
// memory's chat_id is null.
func (s *Server) putMemory(w http.ResponseWriter, r *http.Request, c *caller) error {
	p, err := s.project(r, c)
	if err != nil {
		return err
	}
	var req sdk.PutMemoryRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	res, err := s.deps.Projects.SaveMemory(r.Context(), p.ID, r.PathValue("name"), req.Content, uuid.NullUUID{})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	writeJSON(w, status, toMemory(res.Memory))
	return nil
}

func (s *Server) deleteMemory(w http.ResponseWriter, r *http.Request, c *caller) error {
	p, err := s.project(r, c)
	if err != nil {
		return err
	}
	existed, _, err := s.deps.Projects.DeleteMemory(r.Context(), p.ID, r.PathValue("name"))
	if err != nil {
		return err
	}
	if !existed {
		return newError(http.StatusNotFound, sdk.CodeNotFound, "Not found.", "memory "+r.PathValue("name")+" does not exist")
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// parseProjectID reads a chat body's project_id: absent is unset, null
// is set to none, else an id.
func parseProjectID(raw json.RawMessage) (store.Opt[uuid.NullUUID], error) {
	if raw == nil {
		return store.Opt[uuid.NullUUID]{}, nil
	}
	var sel sdk.ProjectSelection
	if err := json.Unmarshal(raw, &sel); err != nil {
		return store.Opt[uuid.NullUUID]{}, validation("project_id", "project_id must be null or a project id")
	}
	return store.Some(sel.ID), nil
}
