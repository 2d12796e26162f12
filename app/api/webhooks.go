package api

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/webhooks"
	"github.com/chatd/chatd/store"
)

// Completion webhooks (API.md "Webhooks"). The rows are app/webhooks';
// the handlers check who asks and translate.

func (s *Server) webhookRoutes(route func(method, path string, h func(http.ResponseWriter, *http.Request, *caller) error)) {
	route("POST", "/webhooks", s.createWebhook)
	route("GET", "/webhooks", s.listWebhooks)
	route("DELETE", "/webhooks/{id}", s.deleteWebhook)
	route("GET", "/webhooks/{id}/deliveries", s.listWebhookDeliveries)
}

var errWebhooksOff = newError(http.StatusNotFound, sdk.CodeNotFound, "Webhooks are not available on this server.", "")

// webhookError maps the errors of app/webhooks.
func webhookError(err error) error {
	var ie *webhooks.InputError
	switch {
	case errors.As(err, &ie):
		return validation(ie.Field, ie.Detail)
	case errors.Is(err, webhooks.ErrNotFound):
		return newError(http.StatusNotFound, sdk.CodeNotFound, "Not found.", err.Error())
	case errors.Is(err, webhooks.ErrLimitReached):
		return errLimitReached(err.Error())
	}
	return err
}

func toWebhook(w store.Webhook) sdk.Webhook {
	out := sdk.Webhook{ID: w.ID, URL: w.URL, Events: w.Events, CreatedAt: w.CreatedAt}
	if w.ChatID.Valid {
		out.ChatID = &w.ChatID.UUID
	}
	if w.OwnerID.Valid {
		out.OwnerID = &w.OwnerID.UUID
	}
	return out
}

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request, c *caller) error {
	if s.deps.Webhooks == nil {
		return errWebhooksOff
	}
	var req sdk.CreateWebhookRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	reg := webhooks.Registration{URL: req.URL, Events: req.Events, Secret: req.Secret, CreatedBy: c.user.ID,
		Owner: uuid.NullUUID{UUID: c.user.ID, Valid: true}}
	if req.Global {
		if !c.user.Admin {
			return errAdminOnly
		}
		reg.Owner = uuid.NullUUID{}
	}
	if req.ChatID != nil {
		var chat store.Chat
		err := s.deps.Store.ReadTx(r.Context(), func(tx store.Reader) error {
			var err error
			chat, err = s.readChat(r.Context(), c, tx, *req.ChatID)
			return err
		})
		if err != nil {
			return err
		}
		reg.Chat = uuid.NullUUID{UUID: chat.ID, Valid: true}
		if !req.Global {
			// A chat's events reach its owner's webhooks.
			reg.Owner = uuid.NullUUID{UUID: chat.OwnerID, Valid: true}
		}
	}
	hook, err := s.deps.Webhooks.Create(r.Context(), reg)
	if err != nil {
		return webhookError(err)
	}
	out := toWebhook(hook)
	out.Secret = hook.Secret // shown once
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request, c *caller) error {
	if s.deps.Webhooks == nil {
		return errWebhooksOff
	}
	p := store.WebhookListParams{Limit: MaxListLimit}
	if !c.user.Admin {
		p.OwnerID = uuid.NullUUID{UUID: c.user.ID, Valid: true}
	}
	out := []sdk.Webhook{}
	err := s.deps.Store.ReadTx(r.Context(), func(tx store.Reader) error {
		list, err := tx.WebhookList(r.Context(), p)
		for _, h := range list {
			out = append(out, toWebhook(h))
		}
		return err
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request, c *caller) error {
	if s.deps.Webhooks == nil {
		return errWebhooksOff
	}
	id, err := pathUUID(r, "id")
	if err != nil {
		return err
	}
	if err := s.deps.Webhooks.Delete(r.Context(), id, c.user.ID, c.user.Admin); err != nil {
		return webhookError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) listWebhookDeliveries(w http.ResponseWriter, r *http.Request, c *caller) error {
	if s.deps.Webhooks == nil {
		return errWebhooksOff
	}
	id, err := pathUUID(r, "id")
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", DefaultListLimit, 1, MaxListLimit)
	if err != nil {
		return err
	}
	if _, err := s.deps.Webhooks.Get(r.Context(), id, c.user.ID, c.user.Admin); err != nil {
		return webhookError(err)
	}
	out := []sdk.WebhookDelivery{}
	err = s.deps.Store.ReadTx(r.Context(), func(tx store.Reader) error {
		ds, err := tx.WebhookDeliveryList(r.Context(), id, int(limit))
		for _, d := range ds {
			o := sdk.WebhookDelivery{ID: d.ID, Event: d.Event, ChatID: d.ChatID, Status: d.Status, Attempts: d.Attempts,
				LastStatus: d.LastStatus, LastError: d.LastError, CreatedAt: d.CreatedAt, DeliveredAt: d.DeliveredAt}
			var ev sdk.WebhookEvent
			if json.Unmarshal(d.Payload, &ev) == nil {
				o.Payload = &ev
			}
			if d.Status == store.WebhookDeliveryPending {
				at := d.NextAttemptAt
				o.NextAttemptAt = &at
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
