package query

const (
	AIProviderDelete  = `DELETE FROM ai_providers WHERE id = $1`
	ModelConfigDelete = `DELETE FROM model_configs WHERE id = $1`
)
