package query

const (
	ChatSystemPromptGet       = `SELECT text FROM chat_system_prompts WHERE chat_id = $1`
	ChatSystemPromptSetDelete = `DELETE FROM chat_system_prompts WHERE chat_id = $1`
	ChatSystemPromptSetInsert = `INSERT INTO chat_system_prompts (chat_id, text, updated_at) VALUES ($1, $2, $3)
			ON CONFLICT (chat_id) DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at`
)
