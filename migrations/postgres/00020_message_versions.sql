-- +goose Up
-- Issue 32: messages form a tree. parent_id is the previous message of
-- the message's branch (NULL for a chat's first message); the active
-- branch is the path from the root to the newest message with deleted =
-- false, so every reader that skips deleted rows reads the active branch
-- in id order. deleted now means "not on the active branch" (hidden, a
-- branch switch brings it back); pruned marks the rows an edit deleted
-- before versions existed: they are in no branch and never come back.
ALTER TABLE chat_messages ADD COLUMN parent_id bigint;
ALTER TABLE chat_messages ADD COLUMN pruned boolean NOT NULL DEFAULT false;

-- The backfill is no transition: with the revision trigger off it moves
-- no revision and no history_version (SQLite backfills before its trigger
-- lists the new columns). Existing chats become single-branch trees, each
-- live message's parent the live message before it.
ALTER TABLE chat_messages DISABLE TRIGGER trigger_set_chat_message_revision_on_update;
UPDATE chat_messages SET pruned = true WHERE deleted;
UPDATE chat_messages m SET parent_id = (
    SELECT max(p.id) FROM chat_messages p
    WHERE p.chat_id = m.chat_id AND p.id < m.id AND NOT p.deleted
) WHERE NOT m.deleted;
UPDATE chat_messages m SET parent_id = (
    SELECT max(p.id) FROM chat_messages p
    WHERE p.chat_id = m.chat_id AND p.id < m.id
) WHERE m.deleted;
ALTER TABLE chat_messages ENABLE TRIGGER trigger_set_chat_message_revision_on_update;

CREATE INDEX chat_messages_parent_idx ON chat_messages (chat_id, parent_id);

-- Search covers every branch: the partial index keeps every message that
-- is not pruned (a branch switch hides rows without leaving the index).
DROP INDEX chat_messages_text_trgm_idx;
CREATE INDEX chat_messages_text_trgm_idx ON chat_messages
    USING gin (chatd_message_text(content) public.gin_trgm_ops)
    WHERE NOT pruned AND role IN ('user', 'assistant') AND visibility <> 'model';

-- +goose Down
DROP INDEX chat_messages_text_trgm_idx;
CREATE INDEX chat_messages_text_trgm_idx ON chat_messages
    USING gin (chatd_message_text(content) public.gin_trgm_ops)
    WHERE NOT deleted AND role IN ('user', 'assistant') AND visibility <> 'model';
DROP INDEX chat_messages_parent_idx;
ALTER TABLE chat_messages DROP COLUMN pruned;
ALTER TABLE chat_messages DROP COLUMN parent_id;
