-- +goose Up
-- Uploaded files (attachments). A file belongs to the user who uploaded it
-- and, once a message uses it, to at most one chat (spec: file links). A
-- file no chat references is removed after the retention time; a deleted
-- chat takes its files with it.
CREATE TABLE chat_files (
    id         uuid PRIMARY KEY,
    owner_id   uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    chat_id    uuid REFERENCES chats(id) ON DELETE CASCADE,
    name       text NOT NULL DEFAULT '',
    media_type text NOT NULL CHECK (media_type <> ''),
    size       bigint NOT NULL CHECK (size >= 0),
    content    bytea NOT NULL,
    created_at timestamptz NOT NULL,
    linked_at  timestamptz,
    CHECK ((chat_id IS NULL) = (linked_at IS NULL))
);
CREATE INDEX chat_files_owner_idx ON chat_files (owner_id);
CREATE INDEX chat_files_chat_idx ON chat_files (chat_id, created_at, id) WHERE chat_id IS NOT NULL;
CREATE INDEX chat_files_unlinked_idx ON chat_files (created_at) WHERE chat_id IS NULL;

-- +goose Down
DROP TABLE chat_files;
