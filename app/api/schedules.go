package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/schedules"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// Scheduled prompts (API.md "Schedules"). The rows are app/schedules';
// the handlers check who asks and translate.

func (s *Server) scheduleRoutes(route func(method, path string, h func(http.ResponseWriter, *http.Request, *caller) error)) {
	route("POST", "/chats/{chat}/schedules", s.createSchedule)
	route("GET", "/chats/{chat}/schedules", s.listChatSchedules)
	route("PATCH", "/chats/{chat}/schedules/{id}", s.patchSchedule)
	route("DELETE", "/chats/{chat}/schedules/{id}", s.deleteSchedule)
	route("GET", "/chats/{chat}/schedules/{id}/runs", s.listScheduleRuns)
	route("GET", "/schedules", s.listSchedules)
}

var errSchedulesOff = newError(http.StatusNotFound, sdk.CodeNotFound, "Schedules are not available on this server.", "")

// scheduleError maps the errors of app/schedules.
func scheduleError(err error) error {
	var ie *schedules.InputError
	switch {
	case errors.As(err, &ie):
		return validation(ie.Field, ie.Detail)
	case errors.Is(err, schedules.ErrNotFound):
		return newError(http.StatusNotFound, sdk.CodeNotFound, "Not found.", err.Error())
	case errors.Is(err, schedules.ErrLimitReached):
		return errLimitReached(err.Error())
	}
	return err
}

func toSchedule(sc store.Schedule, chat *store.Chat, owner *store.User) sdk.Schedule {
	out := sdk.Schedule{ID: sc.ID, ChatID: sc.ChatID, OwnerID: sc.OwnerID, Timezone: sc.Timezone, Enabled: sc.Enabled,
		NewChat: sc.NewChat, MaxRuns: sc.MaxRuns, RunCount: sc.RunCount, NextRunAt: sc.NextRunAt, LastRunAt: sc.LastRunAt,
		CreatedAt: sc.CreatedAt, UpdatedAt: sc.UpdatedAt, Content: []sdk.ChatMessagePart{}}
	_ = json.Unmarshal(sc.Content, &out.Content)
	switch sc.Kind {
	case store.ScheduleCron:
		out.Cron = sc.Spec
	case store.ScheduleEvery:
		out.Every = sc.Spec
	case store.ScheduleAt:
		if at, err := time.Parse(time.RFC3339, sc.Spec); err == nil {
			out.At = &at
		}
	}
	switch {
	case !sc.Enabled:
	case chat != nil && chat.Archived:
		out.Paused = "chat_archived"
	case owner != nil && owner.Disabled:
		out.Paused = "user_disabled"
	}
	return out
}

// scheduleChat reads the chat of the path the caller may see.
func (s *Server) scheduleChat(r *http.Request, c *caller) (store.Chat, error) {
	if s.deps.Schedules == nil {
		return store.Chat{}, errSchedulesOff
	}
	id, err := pathUUID(r, "chat")
	if err != nil {
		return store.Chat{}, err
	}
	var chat store.Chat
	err = s.deps.Store.ReadTx(r.Context(), func(tx store.Reader) error {
		chat, err = s.readChat(r.Context(), c, tx, id)
		return err
	})
	return chat, err
}

func (s *Server) createSchedule(w http.ResponseWriter, r *http.Request, c *caller) error {
	chat, err := s.scheduleChat(r, c)
	if err != nil {
		return err
	}
	var req sdk.CreateScheduleRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	parts, err := s.inputParts(req.Content, false)
	if err != nil {
		return err
	}
	sc, err := s.deps.Schedules.Create(r.Context(), chat, parts, req)
	if err != nil {
		return scheduleError(err)
	}
	writeJSON(w, http.StatusCreated, toSchedule(sc, &chat, nil))
	return nil
}

func (s *Server) listChatSchedules(w http.ResponseWriter, r *http.Request, c *caller) error {
	chat, err := s.scheduleChat(r, c)
	if err != nil {
		return err
	}
	return s.writeSchedules(w, r, store.ScheduleListParams{ChatID: uuid.NullUUID{UUID: chat.ID, Valid: true}, Limit: MaxListLimit})
}

func (s *Server) listSchedules(w http.ResponseWriter, r *http.Request, c *caller) error {
	if s.deps.Schedules == nil {
		return errSchedulesOff
	}
	p := store.ScheduleListParams{Limit: MaxListLimit}
	if !c.user.Admin {
		p.OwnerID = uuid.NullUUID{UUID: c.user.ID, Valid: true}
	}
	return s.writeSchedules(w, r, p)
}

func (s *Server) writeSchedules(w http.ResponseWriter, r *http.Request, p store.ScheduleListParams) error {
	out := []sdk.Schedule{}
	err := s.deps.Store.ReadTx(r.Context(), func(tx store.Reader) error {
		list, err := tx.ScheduleList(r.Context(), p)
		if err != nil {
			return err
		}
		for _, sc := range list {
			chat, err := tx.ChatGet(r.Context(), sc.ChatID)
			if err != nil {
				return err
			}
			owner, err := tx.UserGet(r.Context(), sc.OwnerID)
			if err != nil {
				return err
			}
			out = append(out, toSchedule(sc, &chat, &owner))
		}
		return nil
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) patchSchedule(w http.ResponseWriter, r *http.Request, c *caller) error {
	chat, err := s.scheduleChat(r, c)
	if err != nil {
		return err
	}
	id, err := pathUUID(r, "id")
	if err != nil {
		return err
	}
	var req sdk.UpdateScheduleRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var parts []sdk.ChatMessagePart
	if req.Content != nil {
		if parts, err = s.inputParts(req.Content, false); err != nil {
			return err
		}
	}
	sc, err := s.deps.Schedules.Update(r.Context(), chat.ID, id, parts, req)
	if err != nil {
		return scheduleError(err)
	}
	writeJSON(w, http.StatusOK, toSchedule(sc, &chat, nil))
	return nil
}

func (s *Server) deleteSchedule(w http.ResponseWriter, r *http.Request, c *caller) error {
	chat, err := s.scheduleChat(r, c)
	if err != nil {
		return err
	}
	id, err := pathUUID(r, "id")
	if err != nil {
		return err
	}
	if err := s.deps.Schedules.Delete(r.Context(), chat.ID, id); err != nil {
		return scheduleError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) listScheduleRuns(w http.ResponseWriter, r *http.Request, c *caller) error {
	chat, err := s.scheduleChat(r, c)
	if err != nil {
		return err
	}
	id, err := pathUUID(r, "id")
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", DefaultListLimit, 1, MaxListLimit)
	if err != nil {
		return err
	}
	out := []sdk.ScheduleRun{}
	err = s.deps.Store.ReadTx(r.Context(), func(tx store.Reader) error {
		sc, err := tx.ScheduleGet(r.Context(), id)
		if errors.Is(err, store.ErrNotFound) || (err == nil && sc.ChatID != chat.ID) {
			return scheduleError(schedules.ErrNotFound)
		}
		if err != nil {
			return err
		}
		runs, err := tx.ScheduleRunList(r.Context(), id, int(limit))
		for _, run := range runs {
			o := sdk.ScheduleRun{DueAt: run.DueAt, Status: run.Status, Detail: run.Detail, CreatedAt: run.CreatedAt}
			if run.RequestID.Valid {
				o.RequestID = &run.RequestID.UUID
			}
			if run.ChatID.Valid {
				o.ChatID = &run.ChatID.UUID
			}
			out = append(out, o)
		}
		return err
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
