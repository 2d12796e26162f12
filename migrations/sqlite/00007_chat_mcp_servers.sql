-- +goose Up
-- A chat's MCP server selection: NULL means every configured server, a JSON
-- array of server ids (possibly empty: none) restricts it.
ALTER TABLE chats ADD COLUMN mcp_server_ids TEXT
    CHECK (mcp_server_ids IS NULL OR (json_valid(mcp_server_ids) AND json_type(mcp_server_ids) = 'array'));

-- +goose Down
ALTER TABLE chats DROP COLUMN mcp_server_ids;
