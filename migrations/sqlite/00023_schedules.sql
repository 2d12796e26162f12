-- +goose Up
-- Scheduled prompts (API.md "Schedules"): a schedule sends content to its
-- chat (or to a fresh chat like it) at each due time. next_run_at is the
-- due time not yet fired (NULL: none left, or disabled); the runner of any
-- replica fires it in the transaction that advances it, so a due time
-- runs once.
CREATE TABLE schedules (
    id          TEXT PRIMARY KEY,
    chat_id     TEXT NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
    owner_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    content     TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('cron', 'every', 'at')),
    spec        TEXT NOT NULL,
    timezone    TEXT NOT NULL DEFAULT 'UTC',
    enabled     INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    new_chat    INTEGER NOT NULL DEFAULT 0 CHECK (new_chat IN (0, 1)),
    max_runs    INTEGER NOT NULL DEFAULT 0,
    run_count   INTEGER NOT NULL DEFAULT 0,
    next_run_at TEXT,
    last_run_at TEXT,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE INDEX schedules_chat_idx ON schedules (chat_id, created_at, id);
CREATE INDEX schedules_owner_idx ON schedules (owner_id, created_at, id);
CREATE INDEX schedules_due_idx ON schedules (next_run_at) WHERE enabled = 1 AND next_run_at IS NOT NULL;

-- One row per due time: fired, or skipped (missed while every replica was
-- down), denied (a lifecycle hook) or failed (the chat refused it). The
-- primary key makes a due time run at most once.
CREATE TABLE schedule_runs (
    schedule_id TEXT NOT NULL REFERENCES schedules(id) ON DELETE CASCADE,
    due_at      TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('fired', 'skipped', 'denied', 'failed')),
    request_id  TEXT,
    chat_id     TEXT,
    detail      TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL,
    PRIMARY KEY (schedule_id, due_at)
);

-- +goose Down
DROP TABLE schedule_runs;
DROP INDEX schedules_due_idx;
DROP INDEX schedules_owner_idx;
DROP INDEX schedules_chat_idx;
DROP TABLE schedules;
