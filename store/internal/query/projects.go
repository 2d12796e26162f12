package query

const (
	// ProjectColumns lists the projects columns in the order the drivers scan them.
	ProjectColumns = `id, owner_id, name, instructions, created_at, updated_at`

	// MemoryColumns lists the project_memories columns in the order the drivers scan them.
	MemoryColumns = `project_id, name, content, chat_id, updated_at`

	ProjectGet          = `SELECT ` + ProjectColumns + ` FROM projects WHERE id = $1`
	ProjectList         = `SELECT ` + ProjectColumns + ` FROM projects`
	ProjectCountChats   = `SELECT count(*) FROM chats WHERE project_id = $1`
	ProjectDelete       = `DELETE FROM projects WHERE id = $1`
	MemoryGet           = `SELECT ` + MemoryColumns + ` FROM project_memories WHERE project_id = $1 AND name = $2`
	MemoryCount         = `SELECT count(*) FROM project_memories WHERE project_id = $1`
	ProjectCountByOwner = `SELECT count(*) FROM projects WHERE owner_id = $1`
	MemoryCountByOwner  = `
		SELECT count(*) FROM project_memories m JOIN projects p ON p.id = m.project_id
		WHERE p.owner_id = $1`
	MemoryUpsert = `
		INSERT INTO project_memories (project_id, name, content, chat_id, updated_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (project_id, name) DO UPDATE SET
			content = excluded.content, chat_id = excluded.chat_id, updated_at = excluded.updated_at
		RETURNING ` + MemoryColumns
	MemoryDelete = `DELETE FROM project_memories WHERE project_id = $1 AND name = $2`
)
