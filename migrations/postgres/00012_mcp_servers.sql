-- +goose Up
-- The MCP servers chats may use, managed through the API and seeded from the
-- MCP config file (source config_file). spec is the server's non-secret
-- settings as a config-file server object (command, args, url, tools,
-- effects, approval, approvals, timeout); secrets is the sealed JSON of its
-- env and headers (NULL when it has none). The id of a seeded server is
-- derived from its name (mcp.ServerID), so every replica seeds the same row.
CREATE TABLE mcp_servers (
    id uuid PRIMARY KEY,
    name text NOT NULL UNIQUE,
    source text NOT NULL CHECK (source IN ('database', 'config_file')),
    enabled boolean NOT NULL,
    transport text NOT NULL CHECK (transport IN ('stdio', 'http')),
    spec jsonb NOT NULL CHECK (jsonb_typeof(spec) = 'object'),
    secrets bytea,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE mcp_servers;
