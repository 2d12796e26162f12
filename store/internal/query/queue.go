package query

const (
	// QueueColumns lists the chat_queued_messages columns in the order the drivers scan them.
	// QueueColumns lists the chat_queued_messages columns in the order the drivers scan them.
	QueueColumns = `id, chat_id, position, created_by, content, model_config_id,
	reasoning_effort, request_id, created_at, hook_context`

	QueueList      = `SELECT ` + QueueColumns + ` FROM chat_queued_messages WHERE chat_id = $1 ORDER BY position, id`
	QueueDelete    = `DELETE FROM chat_queued_messages WHERE chat_id = $1 AND id = $2`
	QueueDeleteAll = `DELETE FROM chat_queued_messages WHERE chat_id = $1`
	QueueCount     = `SELECT count(*) FROM chat_queued_messages WHERE chat_id = $1`
)
