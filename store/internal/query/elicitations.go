package query

const (
	// ElicitationColumns lists the chat_elicitations columns in the order the drivers scan them.
	ElicitationColumns = `id, chat_id, tool_call_id, server, mode, message, schema, url, state, content,
	created_at, held_until, answered_at, slot_runner_id`

	ElicitationInsert = `INSERT INTO chat_elicitations (id, chat_id, tool_call_id, server, mode, message, schema, url, created_at, held_until,
			slot_runner_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING ` + ElicitationColumns
	ElicitationGet         = `SELECT ` + ElicitationColumns + ` FROM chat_elicitations WHERE id = $1`
	ElicitationListPending = `SELECT ` + ElicitationColumns + ` FROM chat_elicitations
		WHERE chat_id = $1 AND state = 'pending' ORDER BY created_at, id`
	ElicitationAnswer = `UPDATE chat_elicitations SET state = $1, content = $2, answered_at = $3
		WHERE id = $4 AND state = 'pending' RETURNING ` + ElicitationColumns
	ElicitationExpire = `UPDATE chat_elicitations SET slot_runner_id = NULL
		WHERE slot_runner_id IS NOT NULL AND state <> 'pending' AND held_until < $1`
	ElicitationResumeSlot = `UPDATE chat_elicitations SET slot_runner_id = NULL WHERE id = $1`
)
