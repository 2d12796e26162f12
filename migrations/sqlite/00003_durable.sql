-- +goose Up
-- SQLite mirror of migrations/postgres/00003_durable.sql.
ALTER TABLE chat_messages ADD COLUMN request_id TEXT;
ALTER TABLE chat_queued_messages ADD COLUMN request_id TEXT;

-- The revision trigger lists every column but revision; request_id joins
-- the list (storetest checks each column).
DROP TRIGGER chat_messages_revision_update;

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
    OR OLD.created_at IS NOT NEW.created_at
    OR OLD.request_id IS NOT NEW.request_id)
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

CREATE TABLE invocations (
    request_id        TEXT PRIMARY KEY,
    caller_id         TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    content_sha256    TEXT NOT NULL,
    kind              TEXT NOT NULL CHECK (kind IN ('create_chat', 'send_message')),
    chat_id           TEXT NOT NULL,
    audit_id          TEXT NOT NULL UNIQUE,
    state             TEXT NOT NULL
                      CHECK (state IN ('admitted', 'completed', 'unresolved', 'reconciled')),
    message_id        INTEGER,
    queued_message_id INTEGER,
    response          TEXT,
    outcome           TEXT,
    review            TEXT,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
    completed_at      TEXT
);

CREATE INDEX invocations_chat_id_idx ON invocations (chat_id);

-- SQLite allows AUTOINCREMENT only on an INTEGER PRIMARY KEY, so seq is
-- assigned by JournalStart (MAX + 1 under the single writer): a new entry
-- always sorts after every existing one.
CREATE TABLE tool_journal (
    seq          INTEGER NOT NULL UNIQUE,
    chat_id      TEXT NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
    tool_call_id TEXT NOT NULL,
    request_id   TEXT,
    tool_name    TEXT NOT NULL,
    effect       TEXT NOT NULL CHECK (effect IN ('pure', 'idempotent', 'effectful')),
    args         TEXT,
    state        TEXT NOT NULL CHECK (state IN ('started', 'completed', 'unresolved', 'reconciled')),
    result       TEXT,
    is_error     INTEGER NOT NULL DEFAULT 0,
    attempts     INTEGER NOT NULL DEFAULT 1,
    started_at   TEXT NOT NULL,
    completed_at TEXT,
    PRIMARY KEY (chat_id, tool_call_id)
);

CREATE INDEX tool_journal_chat_seq_idx ON tool_journal (chat_id, seq);

-- +goose Down
DROP TABLE tool_journal;
DROP TABLE invocations;

-- The trigger must stop naming request_id before the column can go.
DROP TRIGGER chat_messages_revision_update;

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

ALTER TABLE chat_queued_messages DROP COLUMN request_id;
ALTER TABLE chat_messages DROP COLUMN request_id;
