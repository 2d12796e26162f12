package query

const (
	// MCPServerColumns lists the mcp_servers columns in the order the drivers scan them.
	// MCPServerColumns lists the mcp_servers columns in the order the drivers scan them.
	MCPServerColumns = `id, name, source, enabled, transport, spec, secrets, created_at, updated_at`

	MCPServerGet    = `SELECT ` + MCPServerColumns + ` FROM mcp_servers WHERE id = $1`
	MCPServerList   = `SELECT ` + MCPServerColumns + ` FROM mcp_servers ORDER BY name`
	MCPServerInsert = `INSERT INTO mcp_servers (` + MCPServerColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING ` + MCPServerColumns
	MCPServerUpdate = `UPDATE mcp_servers SET enabled = $1, transport = $2, spec = $3, secrets = $4, updated_at = $5 WHERE id = $6 RETURNING ` + MCPServerColumns
	MCPServerDelete = `DELETE FROM mcp_servers WHERE id = $1`
)
