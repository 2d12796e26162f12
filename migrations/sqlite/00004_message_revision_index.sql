-- +goose Up
-- Stream syncs read the rows changed since a history version.
CREATE INDEX chat_messages_chat_revision_idx ON chat_messages (chat_id, revision);

-- +goose Down
DROP INDEX chat_messages_chat_revision_idx;
