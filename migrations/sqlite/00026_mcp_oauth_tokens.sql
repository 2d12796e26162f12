-- +goose Up
-- The OAuth tokens of remote MCP servers (issue 34), one row per server:
-- sealed is the sealed JSON of the client (id, secret, endpoints, scopes)
-- and the token (access, refresh, expiry), so a restart keeps the server
-- connected and a refresh goes on from the stored refresh token. The row
-- goes with its server; a reconnect removes it.
CREATE TABLE mcp_oauth_tokens (
    server_id  TEXT PRIMARY KEY REFERENCES mcp_servers(id) ON DELETE CASCADE,
    sealed     BLOB NOT NULL,
    updated_at TEXT NOT NULL
);

-- A question of an MCP server (elicitation) releases its chat's slot of
-- the concurrent agent limit while it waits: slot_runner_id is the runner
-- whose slot it released, NULL once the chat counts again (the holder
-- re-took a slot after the answer, or the question ended). A chat whose
-- runner changed since (a takeover) counts whatever the row says.
ALTER TABLE chat_elicitations ADD COLUMN slot_runner_id TEXT;
CREATE INDEX chat_elicitations_slot_idx ON chat_elicitations (chat_id) WHERE slot_runner_id IS NOT NULL;

-- +goose Down
DROP INDEX chat_elicitations_slot_idx;
ALTER TABLE chat_elicitations DROP COLUMN slot_runner_id;
DROP TABLE mcp_oauth_tokens;
