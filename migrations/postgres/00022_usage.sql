-- +goose Up
-- The usage ledger: one row per provider call whose result was committed
-- (a step's assistant message, a compaction summary, a title). key is the
-- call's idempotency key (the step's chat and history version, a chat's
-- title), so a retried or taken-over step is never counted twice. user_id
-- is who pays: the chat's owner (a subagent's owner is its parent's).
-- chat_id and message_id are records, not references: deleting a chat
-- keeps what it spent.
CREATE TABLE usage_records (
    id               bigserial PRIMARY KEY,
    key              text NOT NULL UNIQUE,
    user_id          uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    chat_id          uuid NOT NULL,
    message_id       bigint,
    kind             text NOT NULL,
    model_config_id  uuid,
    provider         text NOT NULL DEFAULT '',
    model            text NOT NULL DEFAULT '',
    input_tokens     bigint NOT NULL DEFAULT 0,
    output_tokens    bigint NOT NULL DEFAULT 0,
    cached_tokens    bigint NOT NULL DEFAULT 0,
    reasoning_tokens bigint NOT NULL DEFAULT 0,
    cost_nanos       bigint NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL
);
CREATE INDEX usage_records_user_idx ON usage_records (user_id, created_at);
CREATE INDEX usage_records_time_idx ON usage_records (created_at);
CREATE INDEX usage_records_chat_idx ON usage_records (chat_id);

-- Per-user budget overrides set by admins (no row: the deployment's
-- defaults). A NULL column is no limit of that kind.
CREATE TABLE user_budgets (
    user_id          uuid PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    tokens_per_day   bigint,
    tokens_per_month bigint,
    cost_per_day     double precision,
    cost_per_month   double precision,
    updated_at       timestamptz NOT NULL
);

-- +goose Down
DROP TABLE user_budgets;
DROP TABLE usage_records;
