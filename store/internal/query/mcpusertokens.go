package query

const (
	MCPUserTokenGet = `SELECT sealed, updated_at FROM mcp_user_oauth_tokens WHERE server_id = $1 AND user_id = $2`
	MCPUserTokenPut = `INSERT INTO mcp_user_oauth_tokens (server_id, user_id, sealed, updated_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (server_id, user_id) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at`
	MCPUserTokenDelete = `DELETE FROM mcp_user_oauth_tokens WHERE server_id = $1 AND user_id = $2`
)
