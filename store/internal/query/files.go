package query

const (
	// FileInfoColumns lists the chat_files (without content) columns in the order the drivers scan them.
	// FileInfoColumns lists the chat_files (without content) columns in the order the drivers scan them.
	FileInfoColumns = `id, owner_id, chat_id, name, media_type, size, created_at, linked_at`

	FileInsert = `INSERT INTO chat_files (id, owner_id, name, media_type, size, content, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
		RETURNING ` + FileInfoColumns + `, content`
	FileGet            = `SELECT ` + FileInfoColumns + `, content FROM chat_files WHERE id = $1`
	FileListByChat     = `SELECT ` + FileInfoColumns + ` FROM chat_files WHERE chat_id = $1 ORDER BY created_at, id`
	FileCountByOwner   = `SELECT count(*) FROM chat_files WHERE owner_id = $1`
	FileLink           = `UPDATE chat_files SET chat_id = $1, linked_at = COALESCE(linked_at, $2) WHERE id = $3`
	FileDelete         = `DELETE FROM chat_files WHERE id = $1`
	FileDeleteUnlinked = `DELETE FROM chat_files WHERE chat_id IS NULL AND created_at < $1`
)
