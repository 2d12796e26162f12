-- +goose Up
-- Scheduled prompts (API.md "Schedules"): a schedule sends content to its
-- chat (or to a fresh chat like it) at each due time. next_run_at is the
-- due time not yet fired (NULL: none left, or disabled); the runner of any
-- replica fires it in the transaction that advances it, so a due time
-- runs once.
CREATE TABLE schedules (
    id          uuid PRIMARY KEY,
    chat_id     uuid NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
    owner_id    uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    content     jsonb NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('cron', 'every', 'at')),
    spec        text NOT NULL,
    timezone    text NOT NULL DEFAULT 'UTC',
    enabled     boolean NOT NULL DEFAULT true,
    new_chat    boolean NOT NULL DEFAULT false,
    max_runs    bigint NOT NULL DEFAULT 0,
    run_count   bigint NOT NULL DEFAULT 0,
    next_run_at timestamptz,
    last_run_at timestamptz,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL
);
CREATE INDEX schedules_chat_idx ON schedules (chat_id, created_at, id);
CREATE INDEX schedules_owner_idx ON schedules (owner_id, created_at, id);
CREATE INDEX schedules_due_idx ON schedules (next_run_at) WHERE enabled AND next_run_at IS NOT NULL;

-- One row per due time: fired, or skipped (missed while every replica was
-- down), denied (a lifecycle hook) or failed (the chat refused it). The
-- primary key makes a due time run at most once.
CREATE TABLE schedule_runs (
    schedule_id uuid NOT NULL REFERENCES schedules(id) ON DELETE CASCADE,
    due_at      timestamptz NOT NULL,
    status      text NOT NULL CHECK (status IN ('fired', 'skipped', 'denied', 'failed')),
    request_id  uuid,
    chat_id     uuid,
    detail      text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (schedule_id, due_at)
);

-- +goose Down
DROP TABLE schedule_runs;
DROP INDEX schedules_due_idx;
DROP INDEX schedules_owner_idx;
DROP INDEX schedules_chat_idx;
DROP TABLE schedules;
