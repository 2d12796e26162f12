-- +goose Up
-- The usage ledger: one row per provider call whose result was committed
-- (a step's assistant message, a compaction summary, a title). key is the
-- call's idempotency key (the step's chat and history version, a chat's
-- title), so a retried or taken-over step is never counted twice. user_id
-- is who pays: the chat's owner (a subagent's owner is its parent's).
-- chat_id and message_id are records, not references: deleting a chat
-- keeps what it spent.
CREATE TABLE usage_records (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    key              TEXT NOT NULL UNIQUE,
    user_id          TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    chat_id          TEXT NOT NULL,
    message_id       INTEGER,
    kind             TEXT NOT NULL,
    model_config_id  TEXT,
    provider         TEXT NOT NULL DEFAULT '',
    model            TEXT NOT NULL DEFAULT '',
    input_tokens     INTEGER NOT NULL DEFAULT 0,
    output_tokens    INTEGER NOT NULL DEFAULT 0,
    cached_tokens    INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0,
    cost_nanos       INTEGER NOT NULL DEFAULT 0,
    created_at       TEXT NOT NULL
);
CREATE INDEX usage_records_user_idx ON usage_records (user_id, created_at);
CREATE INDEX usage_records_time_idx ON usage_records (created_at);
CREATE INDEX usage_records_chat_idx ON usage_records (chat_id);

-- Per-user budget overrides set by admins (no row: the deployment's
-- defaults). A NULL column is no limit of that kind.
CREATE TABLE user_budgets (
    user_id          TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    tokens_per_day   INTEGER,
    tokens_per_month INTEGER,
    cost_per_day     REAL,
    cost_per_month   REAL,
    updated_at       TEXT NOT NULL
);

-- +goose Down
DROP TABLE user_budgets;
DROP TABLE usage_records;
