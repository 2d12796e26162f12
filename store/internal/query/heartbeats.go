package query

const (
	HeartbeatAt      = `SELECT heartbeat_at FROM chat_heartbeats WHERE chat_id = $1 AND runner_id = $2`
	ChatListByWorker = `SELECT id FROM chats WHERE worker_id IS NOT NULL AND worker_id = $1 ORDER BY created_at, id`
)
