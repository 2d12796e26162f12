package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

func scanWebhook(row rowScanner) (store.Webhook, error) {
	var (
		w                       store.Webhook
		id, events, by, created string
		owner, chat             sql.NullString
	)
	if err := row.Scan(&id, &owner, &chat, &w.URL, &events, &w.Secret, &by, &created); err != nil {
		return store.Webhook{}, translate(err)
	}
	var sc scanner
	sc.uuid(&w.ID, id)
	sc.nullUUID(&w.OwnerID, owner)
	sc.nullUUID(&w.ChatID, chat)
	sc.uuid(&w.CreatedBy, by)
	sc.time(&w.CreatedAt, created)
	if sc.err != nil {
		return store.Webhook{}, sc.err
	}
	if err := json.Unmarshal([]byte(events), &w.Events); err != nil {
		return store.Webhook{}, fmt.Errorf("decode events of webhook %s: %w", w.ID, err)
	}
	return w, nil
}

// WebhookInsert creates a webhook.
func (t *tx) WebhookInsert(ctx context.Context, w store.Webhook) (store.Webhook, error) {
	events, err := json.Marshal(w.Events)
	if err != nil {
		return store.Webhook{}, fmt.Errorf("encode events: %w", err)
	}
	out, err := scanWebhook(t.tx.QueryRowContext(ctx,
		query.WebhookInsert,
		w.ID.String(), nullUUID(w.OwnerID), nullUUID(w.ChatID), w.URL, string(events), w.Secret, w.CreatedBy.String(), ts(w.CreatedAt)))
	if err != nil {
		return store.Webhook{}, fmt.Errorf("insert webhook %s: %w", w.ID, err)
	}
	return out, nil
}

// WebhookGet reads a webhook.
func (t *tx) WebhookGet(ctx context.Context, id uuid.UUID) (store.Webhook, error) {
	w, err := scanWebhook(t.tx.QueryRowContext(ctx, query.WebhookGet, id.String()))
	if err != nil {
		return store.Webhook{}, fmt.Errorf("get webhook %s: %w", id, err)
	}
	return w, nil
}

// WebhookList lists webhooks oldest first.
func (t *tx) WebhookList(ctx context.Context, p store.WebhookListParams) ([]store.Webhook, error) {
	var a args
	stmt := query.WebhookList
	if p.OwnerID.Valid {
		stmt += ` WHERE owner_id = ` + a.add(p.OwnerID.UUID.String())
	}
	stmt += ` ORDER BY created_at, id LIMIT ` + a.add(store.ListLimit(p.Limit))
	rows, err := t.tx.QueryContext(ctx, stmt, a...)
	if err != nil {
		return nil, fmt.Errorf("list webhooks: %w", translate(err))
	}
	out, err := collect(rows, scanWebhook)
	if err != nil {
		return nil, fmt.Errorf("list webhooks: %w", err)
	}
	return out, nil
}

// WebhookCountByOwner counts a user's webhooks.
func (t *tx) WebhookCountByOwner(ctx context.Context, ownerID uuid.UUID) (int64, error) {
	var n int64
	if err := t.tx.QueryRowContext(ctx, query.WebhookCountByOwner, ownerID.String()).Scan(&n); err != nil {
		return 0, fmt.Errorf("count webhooks of user %s: %w", ownerID, translate(err))
	}
	return n, nil
}

// WebhookListForChat lists the webhooks that hear of a chat's events.
func (t *tx) WebhookListForChat(ctx context.Context, ownerID, chatID uuid.UUID) ([]store.Webhook, error) {
	rows, err := t.tx.QueryContext(ctx, query.WebhookListForChat,
		ownerID.String(), chatID.String())
	if err != nil {
		return nil, fmt.Errorf("list webhooks of chat %s: %w", chatID, translate(err))
	}
	out, err := collect(rows, scanWebhook)
	if err != nil {
		return nil, fmt.Errorf("list webhooks of chat %s: %w", chatID, err)
	}
	return out, nil
}

// WebhookDelete removes a webhook; its deliveries cascade.
func (t *tx) WebhookDelete(ctx context.Context, id uuid.UUID) (int64, error) {
	n, err := t.exec(ctx, query.WebhookDelete, id.String())
	if err != nil {
		return 0, fmt.Errorf("delete webhook %s: %w", id, err)
	}
	return n, nil
}

func scanDelivery(row rowScanner) (store.WebhookDelivery, error) {
	var (
		d                                  store.WebhookDelivery
		id, hook, chat, payload, next, cre string
		delivered                          sql.NullString
	)
	if err := row.Scan(&d.Seq, &id, &hook, &chat, &d.Event, &payload, &d.Status, &d.Attempts, &next, &d.LastStatus,
		&d.LastError, &cre, &delivered); err != nil {
		return store.WebhookDelivery{}, translate(err)
	}
	var sc scanner
	sc.uuid(&d.ID, id)
	sc.uuid(&d.WebhookID, hook)
	sc.uuid(&d.ChatID, chat)
	sc.time(&d.NextAttemptAt, next)
	sc.time(&d.CreatedAt, cre)
	sc.timePtr(&d.DeliveredAt, delivered)
	d.Payload = json.RawMessage(payload)
	return d, sc.err
}

// WebhookDeliveryInsert appends a pending delivery.
func (t *tx) WebhookDeliveryInsert(ctx context.Context, d store.WebhookDelivery) (store.WebhookDelivery, error) {
	out, err := scanDelivery(t.tx.QueryRowContext(ctx,
		query.WebhookDeliveryInsert,
		d.ID.String(), d.WebhookID.String(), d.ChatID.String(), d.Event, string(d.Payload), ts(d.NextAttemptAt), ts(d.CreatedAt)))
	if err != nil {
		return store.WebhookDelivery{}, fmt.Errorf("insert delivery %s: %w", d.ID, err)
	}
	return out, nil
}

// WebhookDeliveryList lists a webhook's deliveries, newest first.
func (t *tx) WebhookDeliveryList(ctx context.Context, webhookID uuid.UUID, limit int) ([]store.WebhookDelivery, error) {
	rows, err := t.tx.QueryContext(ctx, query.WebhookDeliveryList, webhookID.String(), store.ListLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("list deliveries of webhook %s: %w", webhookID, translate(err))
	}
	out, err := collect(rows, scanDelivery)
	if err != nil {
		return nil, fmt.Errorf("list deliveries of webhook %s: %w", webhookID, err)
	}
	return out, nil
}

// WebhookDeliveryListDue lists the due heads of each (webhook, chat).
func (t *tx) WebhookDeliveryListDue(ctx context.Context, now time.Time, limit int) ([]store.WebhookDelivery, error) {
	rows, err := t.tx.QueryContext(ctx, query.WebhookDeliveryListDue, ts(now), store.ListLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("list due deliveries: %w", translate(err))
	}
	out, err := collect(rows, scanDelivery)
	if err != nil {
		return nil, fmt.Errorf("list due deliveries: %w", err)
	}
	return out, nil
}

// WebhookDeliveryNextDue reads the earliest next attempt.
func (t *tx) WebhookDeliveryNextDue(ctx context.Context) (time.Time, bool, error) {
	var next sql.NullString
	if err := t.tx.QueryRowContext(ctx, query.WebhookDeliveryNextDue).Scan(&next); err != nil {
		return time.Time{}, false, fmt.Errorf("next due delivery: %w", translate(err))
	}
	if !next.Valid {
		return time.Time{}, false, nil
	}
	at, err := parseTS(next.String)
	return at, err == nil, err
}

// WebhookDeliveryClaim takes a pending delivery for one attempt.
func (t *tx) WebhookDeliveryClaim(ctx context.Context, seq int64, due, until time.Time) (bool, error) {
	n, err := t.exec(ctx, query.WebhookDeliveryClaim, ts(until), seq, ts(due))
	if err != nil {
		return false, fmt.Errorf("claim delivery %d: %w", seq, err)
	}
	return n == 1, nil
}

// WebhookDeliveryUpdate writes the set fields of p.
func (t *tx) WebhookDeliveryUpdate(ctx context.Context, seq int64, p store.WebhookDeliveryPatch) (store.WebhookDelivery, error) {
	var a args
	sets, err := setClause(p.Assignments(), &a)
	if err != nil || sets == "" {
		return store.WebhookDelivery{}, fmt.Errorf("update delivery %d: nothing to write (%v)", seq, err)
	}
	d, err := scanDelivery(t.tx.QueryRowContext(ctx,
		`UPDATE webhook_deliveries SET `+sets+` WHERE seq = `+a.add(seq)+` RETURNING `+query.DeliveryColumns, a...))
	if err != nil {
		return store.WebhookDelivery{}, fmt.Errorf("update delivery %d: %w", seq, err)
	}
	return d, nil
}
