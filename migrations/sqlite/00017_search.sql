-- +goose Up
-- Search (GET /chats?q=): trigram FTS5 indexes over chat titles and over
-- the text parts of live user and assistant messages people see. Triggers
-- keep them in sync with every write, typed or raw. The store uses them
-- only as a prefilter for terms of 3 or more characters and rechecks each
-- candidate with chatd_fold(...) LIKE, so the answer is the same
-- case-insensitive substring match as ILIKE on Postgres.
CREATE VIRTUAL TABLE chat_title_fts USING fts5(title, tokenize = 'trigram');

-- chats has a TEXT key, and VACUUM may renumber the rowid of such a table,
-- so the title index is keyed by a stable number of its own.
CREATE TABLE chat_title_fts_ids (
    n       INTEGER PRIMARY KEY,
    chat_id TEXT NOT NULL UNIQUE
);

-- rowid is chat_messages.id.
CREATE VIRTUAL TABLE chat_message_fts USING fts5(body, chat_id UNINDEXED, tokenize = 'trigram');

INSERT INTO chat_title_fts_ids (chat_id) SELECT id FROM chats;
INSERT INTO chat_title_fts (rowid, title)
SELECT s.n, c.title FROM chat_title_fts_ids s JOIN chats c ON c.id = s.chat_id;

INSERT INTO chat_message_fts (rowid, body, chat_id)
SELECT m.id,
       (SELECT group_concat(json_extract(p.value, '$.text'), char(10))
        FROM json_each(m.content) p
        WHERE json_extract(p.value, '$.type') = 'text'),
       m.chat_id
FROM chat_messages m
WHERE m.deleted = 0 AND m.role IN ('user', 'assistant') AND m.visibility <> 'model'
  AND json_type(m.content) = 'array';

-- +goose StatementBegin
CREATE TRIGGER chat_title_fts_insert AFTER INSERT ON chats
BEGIN
    INSERT INTO chat_title_fts_ids (chat_id) VALUES (NEW.id);
    INSERT INTO chat_title_fts (rowid, title)
    SELECT n, NEW.title FROM chat_title_fts_ids WHERE chat_id = NEW.id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER chat_title_fts_update AFTER UPDATE OF title ON chats
WHEN OLD.title IS NOT NEW.title
BEGIN
    DELETE FROM chat_title_fts WHERE rowid = (SELECT n FROM chat_title_fts_ids WHERE chat_id = OLD.id);
    INSERT INTO chat_title_fts (rowid, title)
    SELECT n, NEW.title FROM chat_title_fts_ids WHERE chat_id = NEW.id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER chat_title_fts_delete AFTER DELETE ON chats
BEGIN
    DELETE FROM chat_title_fts WHERE rowid = (SELECT n FROM chat_title_fts_ids WHERE chat_id = OLD.id);
    DELETE FROM chat_title_fts_ids WHERE chat_id = OLD.id;
END;
-- +goose StatementEnd

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

-- +goose Down
DROP TRIGGER chat_message_fts_delete;
DROP TRIGGER chat_message_fts_update;
DROP TRIGGER chat_message_fts_insert;
DROP TRIGGER chat_title_fts_delete;
DROP TRIGGER chat_title_fts_update;
DROP TRIGGER chat_title_fts_insert;
DROP TABLE chat_message_fts;
DROP TABLE chat_title_fts;
DROP TABLE chat_title_fts_ids;
