package query

const (
	// InvocationColumns lists the invocations columns in the order the drivers scan them.
	// InvocationColumns lists the invocations columns in the order the drivers scan them.
	InvocationColumns = `request_id, caller_id, content_sha256, kind, chat_id, audit_id, state,
	message_id, queued_message_id, response, outcome, review, created_at, updated_at, completed_at,
	request_sha256`

	// JournalColumns lists the tool_journal columns in the order the drivers scan them.
	// JournalColumns lists the tool_journal columns in the order the drivers scan them.
	JournalColumns = `chat_id, tool_call_id, request_id, tool_name, effect, args, state, result,
	is_error, attempts, started_at, completed_at`

	InvocationInsert = `INSERT INTO invocations (` + InvocationColumns + `)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`
	InvocationGet = `SELECT ` + InvocationColumns + ` FROM invocations WHERE request_id = $1`
	JournalGet    = `SELECT ` + JournalColumns + ` FROM tool_journal WHERE chat_id = $1 AND tool_call_id = $2`
)
