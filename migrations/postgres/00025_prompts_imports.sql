-- +goose Up
-- Issue 33. A chat's system prompt is metadata (PATCH /chats/{chat}
-- changes it in any state; the next model call reads it), one row per chat
-- that has one. Until now Create wrote it as the chat's first message
-- (role system, model-only); those rows are copied here and stay in
-- history as a record the worker no longer reads.
CREATE TABLE chat_system_prompts (
    chat_id    uuid PRIMARY KEY REFERENCES chats(id) ON DELETE CASCADE,
    text       text NOT NULL,
    updated_at timestamptz NOT NULL
);
INSERT INTO chat_system_prompts (chat_id, text, updated_at)
SELECT m.chat_id, m.content->0->>'text', m.created_at
FROM chat_messages m
WHERE m.role = 'system'
  AND m.id = (SELECT min(f.id) FROM chat_messages f WHERE f.chat_id = m.chat_id)
  AND jsonb_typeof(m.content->0->'text') = 'string'
  AND m.content->0->>'text' <> '';

-- POST /chats/import is idempotent per user by the export's id: the chat
-- a user's first import of an export created. A deleted chat takes its
-- record with it (importing again makes a new one).
CREATE TABLE chat_imports (
    owner_id   uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    export_id  text NOT NULL,
    chat_id    uuid NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (owner_id, export_id)
);
CREATE INDEX chat_imports_chat_idx ON chat_imports (chat_id);

-- +goose Down
DROP TABLE chat_imports;
DROP TABLE chat_system_prompts;
