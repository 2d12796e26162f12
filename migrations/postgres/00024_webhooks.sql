-- +goose Up
-- Completion webhooks (API.md "Webhooks"): a user's (owner_id) or, with
-- owner_id NULL, an admin's global endpoint, for one chat or all. events
-- is a JSON array of event names.
CREATE TABLE webhooks (
    id         uuid PRIMARY KEY,
    owner_id   uuid REFERENCES users(id) ON DELETE CASCADE,
    chat_id    uuid REFERENCES chats(id) ON DELETE CASCADE,
    url        text NOT NULL,
    events     jsonb NOT NULL,
    secret     text NOT NULL,
    created_by uuid NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX webhooks_owner_idx ON webhooks (owner_id, created_at, id);

-- The outbox: a delivery is written in the transaction of its event and
-- POSTed until it is delivered or its 24 hours are up. seq orders the
-- deliveries of one (webhook, chat): only the oldest pending one is sent.
CREATE TABLE webhook_deliveries (
    seq             bigserial PRIMARY KEY,
    id              uuid NOT NULL UNIQUE,
    webhook_id      uuid NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    chat_id         uuid NOT NULL,
    event           text NOT NULL,
    payload         text NOT NULL,
    status          text NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    last_status     integer NOT NULL DEFAULT 0,
    last_error      text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL,
    delivered_at    timestamptz
);
CREATE INDEX webhook_deliveries_pending_idx ON webhook_deliveries (webhook_id, chat_id, seq) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_webhook_idx ON webhook_deliveries (webhook_id, seq);

-- +goose Down
DROP TABLE webhook_deliveries;
DROP INDEX webhooks_owner_idx;
DROP TABLE webhooks;
