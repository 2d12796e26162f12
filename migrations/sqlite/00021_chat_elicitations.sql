-- +goose Up
-- The questions MCP servers ask a chat's person during a tool call (MCP
-- elicitation). The process that holds the server's request renews
-- held_until while it waits; a pending row whose hold ended lost its
-- request (a restart) and is answered "cancel".
CREATE TABLE chat_elicitations (
    id           TEXT PRIMARY KEY,
    chat_id      TEXT NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
    tool_call_id TEXT NOT NULL,
    server       TEXT NOT NULL,
    mode         TEXT NOT NULL CHECK (mode IN ('form', 'url')),
    message      TEXT NOT NULL,
    schema       TEXT CHECK (schema IS NULL OR json_valid(schema)),
    url          TEXT NOT NULL DEFAULT '',
    state        TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'accept', 'decline', 'cancel')),
    content      TEXT CHECK (content IS NULL OR json_valid(content)),
    created_at   TEXT NOT NULL,
    held_until   TEXT NOT NULL,
    answered_at  TEXT,
    CHECK ((state = 'pending') = (answered_at IS NULL))
);
CREATE INDEX chat_elicitations_pending_idx ON chat_elicitations (chat_id, created_at) WHERE state = 'pending';
CREATE INDEX chat_elicitations_held_idx ON chat_elicitations (held_until) WHERE state = 'pending';

-- +goose Down
DROP TABLE chat_elicitations;
