-- +goose Up
-- A chat's MCP server selection: NULL means every configured server, an
-- array of server ids (possibly empty: none) restricts it.
ALTER TABLE chats ADD COLUMN mcp_server_ids uuid[]
    CHECK (mcp_server_ids IS NULL OR array_position(mcp_server_ids, NULL) IS NULL);

-- +goose Down
ALTER TABLE chats DROP COLUMN mcp_server_ids;
