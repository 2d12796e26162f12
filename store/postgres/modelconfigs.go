package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

// modelConfigLockKey is the advisory lock that serializes model
// configuration writes across replicas (one organization: one key).
const modelConfigLockKey int64 = 0x63686174646d6366 // "chatdmcf"

const (
	aiProviderColumns  = `id, provider, display_name, base_url, api_key_cipher, enabled, source, created_at, updated_at`
	modelConfigColumns = `id, ai_provider_id, model, display_name, enabled, is_default, context_limit,
		compression_threshold, options, source, created_at, updated_at`
)

func scanAIProvider(row pgx.Row) (store.AIProvider, error) {
	var p store.AIProvider
	if err := row.Scan(&p.ID, &p.Provider, &p.DisplayName, &p.BaseURL, &p.APIKeyCipher, &p.Enabled, &p.Source,
		&p.CreatedAt, &p.UpdatedAt); err != nil {
		return store.AIProvider{}, translate(err)
	}
	p.CreatedAt, p.UpdatedAt = utc(p.CreatedAt), utc(p.UpdatedAt)
	return p, nil
}

func scanModelConfig(row pgx.Row) (store.ModelConfig, error) {
	var (
		m    store.ModelConfig
		opts []byte
	)
	if err := row.Scan(&m.ID, &m.AIProviderID, &m.Model, &m.DisplayName, &m.Enabled, &m.IsDefault, &m.ContextLimit,
		&m.CompressionThreshold, &opts, &m.Source, &m.CreatedAt, &m.UpdatedAt); err != nil {
		return store.ModelConfig{}, translate(err)
	}
	m.Options = json.RawMessage(opts)
	m.CreatedAt, m.UpdatedAt = utc(m.CreatedAt), utc(m.UpdatedAt)
	return m, nil
}

// options is a model config's options column value ('{}' when empty).
func options(m store.ModelConfig) (string, error) {
	if len(m.Options) == 0 {
		return "{}", nil
	}
	if !json.Valid(m.Options) {
		return "", fmt.Errorf("%w: options is not valid JSON", store.ErrInvariant)
	}
	return string(m.Options), nil
}

// ModelConfigWriteLock takes the model configuration advisory lock until
// the transaction ends. InTx is READ COMMITTED, so what is read after it
// includes the previous holder's commit.
func (t *tx) ModelConfigWriteLock(ctx context.Context) error {
	if _, err := t.tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, modelConfigLockKey); err != nil {
		return fmt.Errorf("lock model configs: %w", translate(err))
	}
	return nil
}

// AIProviderGet reads a provider.
func (t *tx) AIProviderGet(ctx context.Context, id uuid.UUID) (store.AIProvider, error) {
	p, err := scanAIProvider(t.tx.QueryRow(ctx, `SELECT `+aiProviderColumns+` FROM ai_providers WHERE id = $1`, id))
	if err != nil {
		return store.AIProvider{}, fmt.Errorf("get provider %s: %w", id, err)
	}
	return p, nil
}

// AIProviderList lists the providers oldest first.
func (t *tx) AIProviderList(ctx context.Context) ([]store.AIProvider, error) {
	rows, err := t.tx.Query(ctx, `SELECT `+aiProviderColumns+` FROM ai_providers ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list providers: %w", translate(err))
	}
	ps, err := collect(rows, scanAIProvider)
	if err != nil {
		return nil, fmt.Errorf("list providers: %w", err)
	}
	return ps, nil
}

// AIProviderInsert stores a provider.
func (t *tx) AIProviderInsert(ctx context.Context, p store.AIProvider) (store.AIProvider, error) {
	out, err := scanAIProvider(t.tx.QueryRow(ctx, `INSERT INTO ai_providers (`+aiProviderColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING `+aiProviderColumns,
		p.ID, p.Provider, p.DisplayName, p.BaseURL, p.APIKeyCipher, p.Enabled, p.Source, p.CreatedAt, p.UpdatedAt))
	if err != nil {
		return store.AIProvider{}, fmt.Errorf("insert provider %s: %w", p.ID, err)
	}
	return out, nil
}

// AIProviderUpdate writes a provider's mutable fields.
func (t *tx) AIProviderUpdate(ctx context.Context, p store.AIProvider) (store.AIProvider, error) {
	out, err := scanAIProvider(t.tx.QueryRow(ctx, `UPDATE ai_providers SET provider = $1, display_name = $2,
		base_url = $3, api_key_cipher = $4, enabled = $5, updated_at = $6 WHERE id = $7 RETURNING `+aiProviderColumns,
		p.Provider, p.DisplayName, p.BaseURL, p.APIKeyCipher, p.Enabled, p.UpdatedAt, p.ID))
	if err != nil {
		return store.AIProvider{}, fmt.Errorf("update provider %s: %w", p.ID, err)
	}
	return out, nil
}

// AIProviderDelete removes a provider and its model configs.
func (t *tx) AIProviderDelete(ctx context.Context, id uuid.UUID) (int64, error) {
	tag, err := t.tx.Exec(ctx, query.AIProviderDelete, id)
	if err != nil {
		return 0, fmt.Errorf("delete provider %s: %w", id, translate(err))
	}
	return tag.RowsAffected(), nil
}

// ModelConfigGet reads a model config.
func (t *tx) ModelConfigGet(ctx context.Context, id uuid.UUID) (store.ModelConfig, error) {
	m, err := scanModelConfig(t.tx.QueryRow(ctx, `SELECT `+modelConfigColumns+` FROM model_configs WHERE id = $1`, id))
	if err != nil {
		return store.ModelConfig{}, fmt.Errorf("get model config %s: %w", id, err)
	}
	return m, nil
}

// ModelConfigList lists the model configs oldest first.
func (t *tx) ModelConfigList(ctx context.Context) ([]store.ModelConfig, error) {
	rows, err := t.tx.Query(ctx, `SELECT `+modelConfigColumns+` FROM model_configs ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list model configs: %w", translate(err))
	}
	ms, err := collect(rows, scanModelConfig)
	if err != nil {
		return nil, fmt.Errorf("list model configs: %w", err)
	}
	return ms, nil
}

// ModelConfigInsert stores a model config.
func (t *tx) ModelConfigInsert(ctx context.Context, m store.ModelConfig) (store.ModelConfig, error) {
	opts, err := options(m)
	if err != nil {
		return store.ModelConfig{}, fmt.Errorf("insert model config %s: %w", m.ID, err)
	}
	out, err := scanModelConfig(t.tx.QueryRow(ctx, `INSERT INTO model_configs (`+modelConfigColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING `+modelConfigColumns,
		m.ID, m.AIProviderID, m.Model, m.DisplayName, m.Enabled, m.IsDefault, m.ContextLimit, m.CompressionThreshold,
		opts, m.Source, m.CreatedAt, m.UpdatedAt))
	if err != nil {
		return store.ModelConfig{}, fmt.Errorf("insert model config %s: %w", m.ID, err)
	}
	return out, nil
}

// ModelConfigUpdate writes a model config's mutable fields.
func (t *tx) ModelConfigUpdate(ctx context.Context, m store.ModelConfig) (store.ModelConfig, error) {
	opts, err := options(m)
	if err != nil {
		return store.ModelConfig{}, fmt.Errorf("update model config %s: %w", m.ID, err)
	}
	out, err := scanModelConfig(t.tx.QueryRow(ctx, `UPDATE model_configs SET ai_provider_id = $1, model = $2,
		display_name = $3, enabled = $4, is_default = $5, context_limit = $6, compression_threshold = $7,
		options = $8, updated_at = $9 WHERE id = $10 RETURNING `+modelConfigColumns,
		m.AIProviderID, m.Model, m.DisplayName, m.Enabled, m.IsDefault, m.ContextLimit, m.CompressionThreshold,
		opts, m.UpdatedAt, m.ID))
	if err != nil {
		return store.ModelConfig{}, fmt.Errorf("update model config %s: %w", m.ID, err)
	}
	return out, nil
}

// ModelConfigDelete removes a model config.
func (t *tx) ModelConfigDelete(ctx context.Context, id uuid.UUID) (int64, error) {
	tag, err := t.tx.Exec(ctx, query.ModelConfigDelete, id)
	if err != nil {
		return 0, fmt.Errorf("delete model config %s: %w", id, translate(err))
	}
	return tag.RowsAffected(), nil
}
