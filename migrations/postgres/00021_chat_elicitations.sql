-- +goose Up
-- The questions MCP servers ask a chat's person during a tool call (MCP
-- elicitation). The process that holds the server's request renews
-- held_until while it waits; a pending row whose hold ended lost its
-- request (a restart) and is answered "cancel".
CREATE TABLE chat_elicitations (
    id           uuid PRIMARY KEY,
    chat_id      uuid NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
    tool_call_id text NOT NULL,
    server       text NOT NULL,
    mode         text NOT NULL CHECK (mode IN ('form', 'url')),
    message      text NOT NULL,
    schema       jsonb,
    url          text NOT NULL DEFAULT '',
    state        text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'accept', 'decline', 'cancel')),
    content      jsonb,
    created_at   timestamptz NOT NULL,
    held_until   timestamptz NOT NULL,
    answered_at  timestamptz,
    CHECK ((state = 'pending') = (answered_at IS NULL))
);
CREATE INDEX chat_elicitations_pending_idx ON chat_elicitations (chat_id, created_at) WHERE state = 'pending';
CREATE INDEX chat_elicitations_held_idx ON chat_elicitations (held_until) WHERE state = 'pending';

-- +goose Down
DROP TABLE chat_elicitations;
