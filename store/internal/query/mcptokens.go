package query

const (
	MCPTokenGet = `SELECT sealed, updated_at FROM mcp_oauth_tokens WHERE server_id = $1`
	MCPTokenPut = `INSERT INTO mcp_oauth_tokens (server_id, sealed, updated_at) VALUES ($1, $2, $3)
		ON CONFLICT (server_id) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at`
	MCPTokenDelete = `DELETE FROM mcp_oauth_tokens WHERE server_id = $1`
)
