package query

const (
	// ChatColumns lists the chats columns in the order the drivers scan them.
	// ChatColumns lists the chats columns in the order the drivers scan them.
	ChatColumns = `id, owner_id, parent_chat_id, root_chat_id, title, title_source,
	title_updated_at, status, archived, worker_id, runner_id, last_error, retry_state,
	snapshot_version, history_version, queue_version, retry_state_version,
	generation_attempt, requires_action_deadline_at, compaction_requested_at, labels,
	pin_order, last_model_config_id, last_reasoning_effort, dynamic_tools,
	mcp_server_ids, tool_approval, tool_approvals, created_at, updated_at, project_id`

	ChatBumpSnapshot = `UPDATE chats SET snapshot_version = snapshot_version + 1 WHERE id = $1 RETURNING snapshot_version`
	ChatDelete       = `DELETE FROM chats WHERE id = $1`
	ChatDescendants  = `SELECT ` + ChatColumns + ` FROM chats WHERE root_chat_id = $1 ORDER BY created_at, id`
	ChatList         = `SELECT ` + ChatColumns + ` FROM chats`
	ChatCountByOwner = `SELECT count(*) FROM chats WHERE owner_id = $1`
)
