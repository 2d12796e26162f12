package query

const (
	ChatImportGet    = `SELECT chat_id FROM chat_imports WHERE owner_id = $1 AND export_id = $2`
	ChatImportInsert = `INSERT INTO chat_imports (owner_id, export_id, chat_id, created_at) VALUES ($1, $2, $3, $4)`
)
