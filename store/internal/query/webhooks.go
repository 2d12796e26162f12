package query

const (
	// WebhookColumns lists the webhooks columns in the order the drivers scan them.
	WebhookColumns = `id, owner_id, chat_id, url, events, secret, created_by, created_at`

	// DeliveryColumns lists the webhook_deliveries columns in the order the drivers scan them.
	// DeliveryColumns lists the webhook_deliveries columns in the order the drivers scan them.
	DeliveryColumns = `seq, id, webhook_id, chat_id, event, payload, status, attempts, next_attempt_at, last_status,
	last_error, created_at, delivered_at`

	WebhookInsert = `INSERT INTO webhooks (id, owner_id, chat_id, url, events, secret, created_by, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ` + WebhookColumns
	WebhookGet          = `SELECT ` + WebhookColumns + ` FROM webhooks WHERE id = $1`
	WebhookList         = `SELECT ` + WebhookColumns + ` FROM webhooks`
	WebhookCountByOwner = `SELECT count(*) FROM webhooks WHERE owner_id = $1`
	WebhookListForChat  = `SELECT ` + WebhookColumns + ` FROM webhooks
		WHERE (owner_id = $1 OR owner_id IS NULL) AND (chat_id IS NULL OR chat_id = $2) ORDER BY created_at, id`
	WebhookDelete         = `DELETE FROM webhooks WHERE id = $1`
	WebhookDeliveryInsert = `INSERT INTO webhook_deliveries (id, webhook_id, chat_id, event, payload, status, next_attempt_at, created_at)
		VALUES ($1, $2, $3, $4, $5, 'pending', $6, $7) RETURNING ` + DeliveryColumns
	WebhookDeliveryList = `SELECT ` + DeliveryColumns + ` FROM webhook_deliveries WHERE webhook_id = $1
		ORDER BY seq DESC LIMIT $2`
	WebhookDeliveryListDue = `SELECT ` + DeliveryColumns + ` FROM webhook_deliveries d
		WHERE d.status = 'pending' AND d.next_attempt_at <= $1
		AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.status = 'pending' AND e.webhook_id = d.webhook_id
			AND e.chat_id = d.chat_id AND e.seq < d.seq)
		ORDER BY d.seq LIMIT $2`
	WebhookDeliveryNextDue = `SELECT min(next_attempt_at) FROM webhook_deliveries WHERE status = 'pending'`
	WebhookDeliveryClaim   = `UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = $1
		WHERE seq = $2 AND status = 'pending' AND next_attempt_at = $3`
)
