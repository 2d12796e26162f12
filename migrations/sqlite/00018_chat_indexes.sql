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

-- chat_labels mirrors chats.labels, one row a pair, so a label filter is an
-- index lookup rather than json_extract on every chat. Triggers keep it in
-- step with the column, which stays the source of truth.
CREATE TABLE chat_labels (
    chat_id TEXT NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
    key     TEXT NOT NULL,
    value   TEXT NOT NULL,
    PRIMARY KEY (chat_id, key)
);
CREATE INDEX chat_labels_pair_idx ON chat_labels (key, value, chat_id);
INSERT INTO chat_labels (chat_id, key, value)
    SELECT c.id, j.key, j.value FROM chats c, json_each(c.labels) j WHERE j.type = 'text';

-- +goose StatementBegin
CREATE TRIGGER chat_labels_insert AFTER INSERT ON chats BEGIN
    INSERT INTO chat_labels (chat_id, key, value)
        SELECT new.id, j.key, j.value FROM json_each(new.labels) j WHERE j.type = 'text';
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER chat_labels_update AFTER UPDATE OF labels ON chats BEGIN
    DELETE FROM chat_labels WHERE chat_id = new.id;
    INSERT INTO chat_labels (chat_id, key, value)
        SELECT new.id, j.key, j.value FROM json_each(new.labels) j WHERE j.type = 'text';
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER chat_labels_update;
DROP TRIGGER chat_labels_insert;
DROP TABLE chat_labels;
DROP INDEX chats_updated_idx;
DROP INDEX chats_archived_updated_idx;
DROP INDEX chats_owner_archived_updated_idx;
DROP INDEX chats_owned_idx;
