package query

const (
	UsageRecord = `INSERT INTO usage_records (key, user_id, chat_id, message_id, kind,
		model_config_id, provider, model, input_tokens, output_tokens, cached_tokens, reasoning_tokens,
		cost_nanos, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
		ON CONFLICT (key) DO NOTHING`
	UserBudgetGet = `SELECT tokens_per_day, tokens_per_month, cost_per_day, cost_per_month
		FROM user_budgets WHERE user_id = $1`
	UserBudgetSetDelete = `DELETE FROM user_budgets WHERE user_id = $1`
	UserBudgetSetInsert = `INSERT INTO user_budgets (user_id, tokens_per_day, tokens_per_month,
		cost_per_day, cost_per_month, updated_at) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (user_id) DO UPDATE SET tokens_per_day = excluded.tokens_per_day,
		tokens_per_month = excluded.tokens_per_month, cost_per_day = excluded.cost_per_day,
		cost_per_month = excluded.cost_per_month, updated_at = excluded.updated_at`
)
