-- +goose Up
-- Issue 32: messages form a tree. parent_id is the previous message of
-- the message's branch (NULL for a chat's first message); the active
-- branch is the path from the root to the newest message with deleted = 0,
-- so every reader that skips deleted rows reads the active branch in id
-- order. deleted now means "not on the active branch" (hidden, a branch
-- switch brings it back); pruned marks the rows an edit deleted before
-- versions existed: they are in no branch and never come back.
ALTER TABLE chat_messages ADD COLUMN parent_id INTEGER;
ALTER TABLE chat_messages ADD COLUMN pruned INTEGER NOT NULL DEFAULT 0;

-- The backfill runs before the revision trigger lists the new columns, so
-- it moves no revision and no history_version (Postgres disables its
-- trigger for the same statements): existing chats become single-branch
-- trees, each live message's parent the live message before it.
UPDATE chat_messages SET pruned = 1 WHERE deleted = 1;
UPDATE chat_messages SET parent_id = (
    SELECT max(p.id) FROM chat_messages p
    WHERE p.chat_id = chat_messages.chat_id AND p.id < chat_messages.id AND p.deleted = 0
) WHERE deleted = 0;
UPDATE chat_messages SET parent_id = (
    SELECT max(p.id) FROM chat_messages p
    WHERE p.chat_id = chat_messages.chat_id AND p.id < chat_messages.id
) WHERE deleted = 1;

CREATE INDEX chat_messages_parent_idx ON chat_messages (chat_id, parent_id);

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
    OR OLD.request_id IS NOT NEW.request_id
    OR OLD.parent_id IS NOT NEW.parent_id
    OR OLD.pruned IS NOT NEW.pruned)
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

-- Search covers every branch: a message leaves the index when it is
-- pruned, not when a branch switch hides it (so a switch does not churn
-- the index either).
DROP TRIGGER chat_message_fts_insert;
DROP TRIGGER chat_message_fts_update;

-- +goose StatementBegin
CREATE TRIGGER chat_message_fts_insert AFTER INSERT ON chat_messages
WHEN NEW.pruned = 0 AND NEW.role IN ('user', 'assistant') AND NEW.visibility <> 'model'
BEGIN
    INSERT OR IGNORE INTO chat_message_fts_pending (id) VALUES (NEW.id);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER chat_message_fts_update AFTER UPDATE OF content, pruned, role, visibility ON chat_messages
BEGIN
    DELETE FROM chat_message_fts WHERE rowid = OLD.id;
    INSERT OR IGNORE INTO chat_message_fts_pending (id) VALUES (NEW.id);
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER chat_message_fts_insert;
DROP TRIGGER chat_message_fts_update;

-- +goose StatementBegin
CREATE TRIGGER chat_message_fts_insert AFTER INSERT ON chat_messages
WHEN NEW.deleted = 0 AND NEW.role IN ('user', 'assistant') AND NEW.visibility <> 'model'
BEGIN
    INSERT OR IGNORE INTO chat_message_fts_pending (id) VALUES (NEW.id);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER chat_message_fts_update AFTER UPDATE OF content, deleted, role, visibility ON chat_messages
BEGIN
    DELETE FROM chat_message_fts WHERE rowid = OLD.id;
    INSERT OR IGNORE INTO chat_message_fts_pending (id) VALUES (NEW.id);
END;
-- +goose StatementEnd

-- Hidden branches were searchable; the old index holds live rows only.
DELETE FROM chat_message_fts WHERE rowid IN (SELECT id FROM chat_messages WHERE deleted = 1);

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

DROP INDEX chat_messages_parent_idx;
ALTER TABLE chat_messages DROP COLUMN pruned;
ALTER TABLE chat_messages DROP COLUMN parent_id;
