-- +goose Up
-- The MCP servers chats may use, managed through the API and seeded from the
-- MCP config file (source config_file). spec is the server's non-secret
-- settings as a config-file server object (command, args, url, tools,
-- effects, approval, approvals, timeout); secrets is the sealed JSON of its
-- env and headers (NULL when it has none). The id of a seeded server is
-- derived from its name (mcp.ServerID), so every replica seeds the same row.
CREATE TABLE mcp_servers (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    source TEXT NOT NULL CHECK (source IN ('database', 'config_file')),
    enabled INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    transport TEXT NOT NULL CHECK (transport IN ('stdio', 'http')),
    spec TEXT NOT NULL CHECK (json_valid(spec) AND json_type(spec) = 'object'),
    secrets BLOB,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

-- +goose Down
DROP TABLE mcp_servers;
