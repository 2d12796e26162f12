-- +goose Up
-- SQLite mirror of migrations/postgres/00001_init.sql. Types: uuids are
-- TEXT, JSON is TEXT, timestamps are fixed-width RFC 3339 UTC TEXT
-- (YYYY-MM-DDTHH:MM:SS.ffffffZ) so that text order is time order.
CREATE TABLE users (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE CHECK (name <> ''),
    admin      INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);

CREATE TABLE api_tokens (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    hash       BLOB NOT NULL UNIQUE,
    name       TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
);

CREATE TABLE chats (
    id                          TEXT PRIMARY KEY,
    owner_id                    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    parent_chat_id              TEXT REFERENCES chats(id) ON DELETE CASCADE,
    root_chat_id                TEXT REFERENCES chats(id) ON DELETE CASCADE,
    title                       TEXT NOT NULL DEFAULT '',
    title_source                TEXT NOT NULL DEFAULT 'fallback'
                                CHECK (title_source IN ('fallback', 'generated', 'user')),
    title_updated_at            TEXT NOT NULL,
    status                      TEXT NOT NULL
                                CHECK (status IN ('waiting', 'running', 'interrupting', 'requires_action', 'error')),
    archived                    INTEGER NOT NULL DEFAULT 0,
    worker_id                   TEXT,
    runner_id                   TEXT,
    last_error                  TEXT,
    retry_state                 TEXT,
    snapshot_version            INTEGER NOT NULL DEFAULT 1,
    history_version             INTEGER NOT NULL DEFAULT 0,
    queue_version               INTEGER NOT NULL DEFAULT 0,
    retry_state_version         INTEGER NOT NULL DEFAULT 0,
    generation_attempt          INTEGER NOT NULL DEFAULT 0,
    requires_action_deadline_at TEXT,
    compaction_requested_at     TEXT,
    labels                      TEXT NOT NULL DEFAULT '{}',
    pin_order                   INTEGER NOT NULL DEFAULT 0,
    last_model_config_id        TEXT,
    last_reasoning_effort       TEXT NOT NULL DEFAULT '',
    dynamic_tools               TEXT,
    created_at                  TEXT NOT NULL,
    updated_at                  TEXT NOT NULL
);

CREATE INDEX chats_owner_updated_idx ON chats (owner_id, updated_at DESC, id DESC);
CREATE INDEX chats_root_idx ON chats (root_chat_id) WHERE root_chat_id IS NOT NULL;
CREATE INDEX chats_runnable_idx ON chats (status)
    WHERE archived = 0 AND status IN ('running', 'interrupting', 'requires_action');

CREATE TABLE chat_queued_messages (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    chat_id          TEXT NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
    position         INTEGER NOT NULL,
    created_by       TEXT,
    content          TEXT NOT NULL,
    model_config_id  TEXT,
    reasoning_effort TEXT NOT NULL DEFAULT '',
    created_at       TEXT NOT NULL
);

CREATE INDEX chat_queued_messages_chat_position_idx ON chat_queued_messages (chat_id, position, id);

CREATE TABLE chat_messages (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    chat_id               TEXT NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
    role                  TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content               TEXT NOT NULL,
    visibility            TEXT NOT NULL DEFAULT 'both' CHECK (visibility IN ('both', 'user', 'model')),
    compressed            INTEGER NOT NULL DEFAULT 0,
    deleted               INTEGER NOT NULL DEFAULT 0,
    revision              INTEGER,
    queued_message_id     INTEGER,
    created_by            TEXT,
    model_config_id       TEXT,
    reasoning_effort      TEXT NOT NULL DEFAULT '',
    input_tokens          INTEGER,
    output_tokens         INTEGER,
    total_tokens          INTEGER,
    reasoning_tokens      INTEGER,
    cache_creation_tokens INTEGER,
    cache_read_tokens     INTEGER,
    context_limit         INTEGER,
    created_at            TEXT NOT NULL
);

CREATE INDEX chat_messages_chat_id_idx ON chat_messages (chat_id, id);

-- SQLite mode keeps heartbeats in memory (one process owns the file); the
-- table exists so both schemas have the same shape.
CREATE TABLE chat_heartbeats (
    chat_id      TEXT NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
    runner_id    TEXT NOT NULL,
    heartbeat_at TEXT NOT NULL,
    PRIMARY KEY (chat_id, runner_id)
);

CREATE INDEX chat_heartbeats_heartbeat_at_idx ON chat_heartbeats (heartbeat_at);

-- The spec's Postgres triggers, reproduced with SQLite triggers so that any
-- write, typed or raw, gets the same bookkeeping on both stores.
--
-- SQLite triggers cannot assign NEW, so the "assign" half of each Postgres
-- BEFORE trigger runs as an AFTER trigger that updates the row again. Those
-- follow-up updates would trip the guards that refuse client writes of
-- trigger-owned columns, so they run with trigger_bypass.active = 1. Only a
-- trigger ever sets the flag, and it is reset within the same statement; one
-- writer connection means no other statement can observe it.
-- recursive_triggers stays off (the default), so a trigger's own follow-up
-- update does not fire that same trigger again.
CREATE TABLE trigger_bypass (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    active INTEGER NOT NULL
);
INSERT INTO trigger_bypass (id, active) VALUES (1, 0);

-- Message revisions and history version.
-- +goose StatementBegin
CREATE TRIGGER chat_messages_revision_insert_guard
BEFORE INSERT ON chat_messages
WHEN NEW.revision IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'chat_messages.revision must be assigned by trigger');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER chat_messages_revision_insert
AFTER INSERT ON chat_messages
BEGIN
    SELECT RAISE(ABORT, 'chat does not exist')
    WHERE NOT EXISTS (SELECT 1 FROM chats WHERE id = NEW.chat_id);
    UPDATE chats SET history_version = snapshot_version, generation_attempt = 0
    WHERE id = NEW.chat_id;
    UPDATE trigger_bypass SET active = 1;
    UPDATE chat_messages
    SET revision = (SELECT snapshot_version FROM chats WHERE id = NEW.chat_id)
    WHERE id = NEW.id;
    UPDATE trigger_bypass SET active = 0;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER chat_messages_chat_id_immutable
BEFORE UPDATE OF chat_id ON chat_messages
WHEN OLD.chat_id IS NOT NEW.chat_id
BEGIN
    SELECT RAISE(ABORT, 'chat_messages.chat_id is immutable');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER chat_messages_revision_update_guard
BEFORE UPDATE OF revision ON chat_messages
WHEN OLD.revision IS NOT NEW.revision AND (SELECT active FROM trigger_bypass) = 0
BEGIN
    SELECT RAISE(ABORT, 'chat_messages.revision must be assigned by trigger');
END;
-- +goose StatementEnd

-- "Meaningfully updated" = any column other than revision changed. Keep
-- this list in step with the table (storetest checks each column).
-- +goose StatementBegin
CREATE TRIGGER chat_messages_revision_update
AFTER UPDATE ON chat_messages
WHEN (SELECT active FROM trigger_bypass) = 0 AND (
       OLD.id IS NOT NEW.id
    OR OLD.role IS NOT NEW.role
    OR OLD.content IS NOT NEW.content
    OR OLD.visibility IS NOT NEW.visibility
    OR OLD.compressed IS NOT NEW.compressed
    OR OLD.deleted IS NOT NEW.deleted
    OR OLD.queued_message_id IS NOT NEW.queued_message_id
    OR OLD.created_by IS NOT NEW.created_by
    OR OLD.model_config_id IS NOT NEW.model_config_id
    OR OLD.reasoning_effort IS NOT NEW.reasoning_effort
    OR OLD.input_tokens IS NOT NEW.input_tokens
    OR OLD.output_tokens IS NOT NEW.output_tokens
    OR OLD.total_tokens IS NOT NEW.total_tokens
    OR OLD.reasoning_tokens IS NOT NEW.reasoning_tokens
    OR OLD.cache_creation_tokens IS NOT NEW.cache_creation_tokens
    OR OLD.cache_read_tokens IS NOT NEW.cache_read_tokens
    OR OLD.context_limit IS NOT NEW.context_limit
    OR OLD.created_at IS NOT NEW.created_at)
BEGIN
    UPDATE chats SET history_version = snapshot_version, generation_attempt = 0
    WHERE id = NEW.chat_id;
    UPDATE trigger_bypass SET active = 1;
    UPDATE chat_messages
    SET revision = (SELECT snapshot_version FROM chats WHERE id = NEW.chat_id)
    WHERE id = NEW.id;
    UPDATE trigger_bypass SET active = 0;
END;
-- +goose StatementEnd

-- Queue version.
-- +goose StatementBegin
CREATE TRIGGER chat_queued_messages_version_insert
AFTER INSERT ON chat_queued_messages
BEGIN
    UPDATE chats SET queue_version = snapshot_version WHERE id = NEW.chat_id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER chat_queued_messages_version_update
AFTER UPDATE OF content, model_config_id, position, created_by ON chat_queued_messages
BEGIN
    UPDATE chats SET queue_version = snapshot_version WHERE id = NEW.chat_id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER chat_queued_messages_version_delete
AFTER DELETE ON chat_queued_messages
BEGIN
    UPDATE chats SET queue_version = snapshot_version WHERE id = OLD.chat_id;
END;
-- +goose StatementEnd

-- Retry state version: retry_state is scoped to the generation attempt and
-- to the running turn; retry_state_version follows every change of it.
-- +goose StatementBegin
CREATE TRIGGER chats_retry_state_version_guard
BEFORE UPDATE OF retry_state_version ON chats
WHEN OLD.retry_state_version IS NOT NEW.retry_state_version AND (SELECT active FROM trigger_bypass) = 0
BEGIN
    SELECT RAISE(ABORT, 'chats.retry_state_version must be assigned by trigger');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER chats_retry_state_sync
AFTER UPDATE OF retry_state, generation_attempt, status ON chats
BEGIN
    UPDATE trigger_bypass SET active = 1;
    UPDATE chats SET retry_state = NULL
    WHERE id = NEW.id
      AND retry_state IS NOT NULL
      AND (NEW.generation_attempt IS NOT OLD.generation_attempt OR NEW.status <> 'running');
    UPDATE chats SET retry_state_version = snapshot_version
    WHERE id = NEW.id AND retry_state IS NOT OLD.retry_state;
    UPDATE trigger_bypass SET active = 0;
END;
-- +goose StatementEnd

-- +goose Down
DROP TABLE trigger_bypass;
DROP TABLE chat_heartbeats;
DROP TABLE chat_messages;
DROP TABLE chat_queued_messages;
DROP TABLE chats;
DROP TABLE api_tokens;
DROP TABLE users;
