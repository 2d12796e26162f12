-- +goose Up
-- Issue 19: nothing table-sized on the hot path or in the chat list.
-- The chats a worker owns: the acquisition counts (ChatCountOwned, held
-- slots) read only these rows, a handful, however many chats exist.
CREATE INDEX chats_owned_idx ON chats (worker_id) WHERE worker_id IS NOT NULL;
-- The archived filter as one index range, for a user and for the admin
-- list of every owner.
CREATE INDEX chats_owner_archived_updated_idx ON chats (owner_id, archived, updated_at DESC, id DESC);
CREATE INDEX chats_archived_updated_idx ON chats (archived, updated_at DESC, id DESC);
-- The admin list with archived=all: every chat, newest first.
CREATE INDEX chats_updated_idx ON chats (updated_at DESC, id DESC);
-- Label filters (labels @> '{"k":"v"}').
CREATE INDEX chats_labels_idx ON chats USING GIN (labels jsonb_path_ops);

-- +goose Down
DROP INDEX chats_labels_idx;
DROP INDEX chats_updated_idx;
DROP INDEX chats_archived_updated_idx;
DROP INDEX chats_owner_archived_updated_idx;
DROP INDEX chats_owned_idx;
