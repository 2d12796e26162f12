-- +goose Up
-- Issue 19: message text is indexed for search in bulk, not by each
-- insert. FTS5 flushes what it has buffered at every savepoint, and the
-- store runs each batched writer inside one, so indexing per insert wrote
-- a new index segment for every member (and merged them later): a fifth
-- of the writer's work. The message triggers now list the ids due in
-- chat_message_fts_pending, and the store indexes them (SearchIndexPending
-- in store/sqlite/batch.go) before a commit: every commit of an idle
-- writer, every 256 messages of a busy one. Search reads the pending
-- messages as well as the index (store/sqlite/search.go), so it finds a
-- message as soon as readers see it.
CREATE TABLE chat_message_fts_pending (id INTEGER PRIMARY KEY);

DROP TRIGGER chat_message_fts_insert;
DROP TRIGGER chat_message_fts_update;
DROP TRIGGER chat_message_fts_delete;

-- +goose StatementBegin
CREATE TRIGGER chat_message_fts_insert AFTER INSERT ON chat_messages
WHEN NEW.deleted = 0 AND NEW.role IN ('user', 'assistant') AND NEW.visibility <> 'model'
BEGIN
    INSERT OR IGNORE INTO chat_message_fts_pending (id) VALUES (NEW.id);
END;
-- +goose StatementEnd

-- An edit drops the old entry at once and lists the message again: the
-- flush indexes whatever it holds at commit, if it is still searchable.
-- +goose StatementBegin
CREATE TRIGGER chat_message_fts_update AFTER UPDATE OF content, deleted, role, visibility ON chat_messages
BEGIN
    DELETE FROM chat_message_fts WHERE rowid = OLD.id;
    INSERT OR IGNORE INTO chat_message_fts_pending (id) VALUES (NEW.id);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER chat_message_fts_delete AFTER DELETE ON chat_messages
BEGIN
    DELETE FROM chat_message_fts WHERE rowid = OLD.id;
    DELETE FROM chat_message_fts_pending WHERE id = OLD.id;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER chat_message_fts_delete;
DROP TRIGGER chat_message_fts_update;
DROP TRIGGER chat_message_fts_insert;

INSERT INTO chat_message_fts (rowid, body, chat_id)
SELECT m.id,
       (SELECT group_concat(json_extract(p.value, '$.text'), char(10))
        FROM json_each(m.content) p
        WHERE json_extract(p.value, '$.type') = 'text'),
       m.chat_id
FROM chat_message_fts_pending f CROSS JOIN chat_messages m ON m.id = f.id
WHERE m.deleted = 0 AND m.role IN ('user', 'assistant') AND m.visibility <> 'model'
  AND json_type(m.content) = 'array';
DROP TABLE chat_message_fts_pending;

-- +goose StatementBegin
CREATE TRIGGER chat_message_fts_insert AFTER INSERT ON chat_messages
WHEN NEW.deleted = 0 AND NEW.role IN ('user', 'assistant') AND NEW.visibility <> 'model'
     AND json_type(NEW.content) = 'array'
BEGIN
    INSERT INTO chat_message_fts (rowid, body, chat_id)
    VALUES (NEW.id,
            (SELECT group_concat(json_extract(p.value, '$.text'), char(10))
             FROM json_each(NEW.content) p
             WHERE json_extract(p.value, '$.type') = 'text'),
            NEW.chat_id);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER chat_message_fts_update AFTER UPDATE OF content, deleted, role, visibility ON chat_messages
BEGIN
    DELETE FROM chat_message_fts WHERE rowid = OLD.id;
    INSERT INTO chat_message_fts (rowid, body, chat_id)
    SELECT NEW.id,
           (SELECT group_concat(json_extract(p.value, '$.text'), char(10))
            FROM json_each(NEW.content) p
            WHERE json_extract(p.value, '$.type') = 'text'),
           NEW.chat_id
    WHERE NEW.deleted = 0 AND NEW.role IN ('user', 'assistant') AND NEW.visibility <> 'model'
      AND json_type(NEW.content) = 'array';
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER chat_message_fts_delete AFTER DELETE ON chat_messages
BEGIN
    DELETE FROM chat_message_fts WHERE rowid = OLD.id;
END;
-- +goose StatementEnd
