-- +goose Up
-- The OAuth tokens of remote MCP servers whose identity is each user's
-- (oauth.per_user, issue 34): one row per (server, user), sealed like
-- mcp_oauth_tokens. A user's chats call the server with the user's own
-- tokens only. The row goes with its server and its user; a user's
-- disconnect removes it.
CREATE TABLE mcp_user_oauth_tokens (
    server_id  uuid NOT NULL REFERENCES mcp_servers(id) ON DELETE CASCADE,
    user_id    uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    sealed     bytea NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (server_id, user_id)
);
CREATE INDEX mcp_user_oauth_tokens_user_idx ON mcp_user_oauth_tokens (user_id);

-- +goose Down
DROP INDEX mcp_user_oauth_tokens_user_idx;
DROP TABLE mcp_user_oauth_tokens;
