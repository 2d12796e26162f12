-- +goose Up
-- Completion webhooks (API.md "Webhooks"): a user's (owner_id) or, with
-- owner_id NULL, an admin's global endpoint, for one chat or all. events
-- is a JSON array of event names.
CREATE TABLE webhooks (
    id         TEXT PRIMARY KEY,
    owner_id   TEXT REFERENCES users(id) ON DELETE CASCADE,
    chat_id    TEXT REFERENCES chats(id) ON DELETE CASCADE,
    url        TEXT NOT NULL,
    events     TEXT NOT NULL,
    secret     TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX webhooks_owner_idx ON webhooks (owner_id, created_at, id);

-- The outbox: a delivery is written in the transaction of its event and
-- POSTed until it is delivered or its 24 hours are up. seq orders the
-- deliveries of one (webhook, chat): only the oldest pending one is sent.
CREATE TABLE webhook_deliveries (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT NOT NULL UNIQUE,
    webhook_id      TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    chat_id         TEXT NOT NULL,
    event           TEXT NOT NULL,
    payload         TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT NOT NULL,
    last_status     INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT NOT NULL DEFAULT '',
    created_at      TEXT NOT NULL,
    delivered_at    TEXT
);
CREATE INDEX webhook_deliveries_pending_idx ON webhook_deliveries (webhook_id, chat_id, seq) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_webhook_idx ON webhook_deliveries (webhook_id, seq);

-- +goose Down
DROP TABLE webhook_deliveries;
DROP INDEX webhooks_owner_idx;
DROP TABLE webhooks;
