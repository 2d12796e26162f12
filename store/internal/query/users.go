package query

const (
	// UserColumns lists the users columns in the order the drivers scan them.
	UserColumns = `id, name, admin, disabled, created_at`

	UserInsert             = `INSERT INTO users (id, name, admin, created_at) VALUES ($1, $2, $3, $4) RETURNING ` + UserColumns
	UserGet                = `SELECT ` + UserColumns + ` FROM users WHERE id = $1`
	UserGetByName          = `SELECT ` + UserColumns + ` FROM users WHERE name = $1`
	TokenDelete            = `DELETE FROM api_tokens WHERE id = $1`
	TokenDeleteExpired     = `DELETE FROM api_tokens WHERE (expires_at IS NOT NULL AND expires_at <= $1)`
	TokenDeleteForUser     = `DELETE FROM api_tokens WHERE user_id = $1`
	UserSetAdmin           = `UPDATE users SET admin = $1 WHERE id = $2`
	UserCount              = `SELECT COUNT(*) FROM users`
	TokenDeleteByHash      = `DELETE FROM api_tokens WHERE hash = $1`
	ReplicaGet             = `SELECT worker_id, address, token_hash, updated_at FROM chat_replicas WHERE worker_id = $1`
	ReplicaDelete          = `DELETE FROM chat_replicas WHERE worker_id = $1`
	UserList               = `SELECT ` + UserColumns + ` FROM users ORDER BY created_at, id`
	UserSetDisabled        = `UPDATE users SET disabled = $1 WHERE id = $2`
	LoginCodeInsert        = `INSERT INTO login_codes (hash, user_id, expires_at, created_at) VALUES ($1, $2, $3, $4)`
	LoginCodeTake          = `DELETE FROM login_codes WHERE hash = $1 AND expires_at > $2 RETURNING user_id`
	LoginCodeDeleteExpired = `DELETE FROM login_codes WHERE expires_at <= $1`
)
