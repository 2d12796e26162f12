package sqlite

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

const (
	aiProviderColumns  = `id, provider, display_name, base_url, api_key_cipher, enabled, source, created_at, updated_at`
	modelConfigColumns = `id, ai_provider_id, model, display_name, enabled, is_default, context_limit,
		compression_threshold, options, source, created_at, updated_at`
)

func scanAIProvider(row rowScanner) (store.AIProvider, error) {
	var (
		p                    store.AIProvider
		id, created, updated string
		enabled              int
	)
	if err := row.Scan(&id, &p.Provider, &p.DisplayName, &p.BaseURL, &p.APIKeyCipher, &enabled, &p.Source, &created, &updated); err != nil {
		return store.AIProvider{}, translate(err)
	}
	var s scanner
	s.uuid(&p.ID, id)
	s.time(&p.CreatedAt, created)
	s.time(&p.UpdatedAt, updated)
	if s.err != nil {
		return store.AIProvider{}, s.err
	}
	p.Enabled = enabled != 0
	return p, nil
}

func scanModelConfig(row rowScanner) (store.ModelConfig, error) {
	var (
		m                              store.ModelConfig
		id, provider, created, updated string
		enabled, isDefault             int
		options                        string
	)
	if err := row.Scan(&id, &provider, &m.Model, &m.DisplayName, &enabled, &isDefault, &m.ContextLimit,
		&m.CompressionThreshold, &options, &m.Source, &created, &updated); err != nil {
		return store.ModelConfig{}, translate(err)
	}
	var s scanner
	s.uuid(&m.ID, id)
	s.uuid(&m.AIProviderID, provider)
	s.time(&m.CreatedAt, created)
	s.time(&m.UpdatedAt, updated)
	if s.err != nil {
		return store.ModelConfig{}, s.err
	}
	m.Enabled, m.IsDefault = enabled != 0, isDefault != 0
	m.Options = []byte(options)
	return m, nil
}

// options is a model config's options column value ('{}' when empty).
func options(m store.ModelConfig) (string, error) {
	if len(m.Options) == 0 {
		return "{}", nil
	}
	if err := checkJSON(m.Options); err != nil {
		return "", err
	}
	return string(m.Options), nil
}

// ModelConfigWriteLock is a no-op: the write transaction holds SQLite's
// one writer connection.
func (t *tx) ModelConfigWriteLock(context.Context) error { return nil }

// AIProviderGet reads a provider.
func (t *tx) AIProviderGet(ctx context.Context, id uuid.UUID) (store.AIProvider, error) {
	p, err := scanAIProvider(t.tx.QueryRowContext(ctx, `SELECT `+aiProviderColumns+` FROM ai_providers WHERE id = ?`, id.String()))
	if err != nil {
		return store.AIProvider{}, fmt.Errorf("get provider %s: %w", id, err)
	}
	return p, nil
}

// AIProviderList lists the providers oldest first.
func (t *tx) AIProviderList(ctx context.Context) ([]store.AIProvider, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT `+aiProviderColumns+` FROM ai_providers ORDER BY created_at, id`)
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
	out, err := scanAIProvider(t.tx.QueryRowContext(ctx, `INSERT INTO ai_providers (`+aiProviderColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING `+aiProviderColumns,
		p.ID.String(), p.Provider, p.DisplayName, p.BaseURL, p.APIKeyCipher, boolInt(p.Enabled), p.Source, ts(p.CreatedAt), ts(p.UpdatedAt)))
	if err != nil {
		return store.AIProvider{}, fmt.Errorf("insert provider %s: %w", p.ID, err)
	}
	return out, nil
}

// AIProviderUpdate writes a provider's mutable fields.
func (t *tx) AIProviderUpdate(ctx context.Context, p store.AIProvider) (store.AIProvider, error) {
	out, err := scanAIProvider(t.tx.QueryRowContext(ctx, `UPDATE ai_providers SET provider = ?, display_name = ?,
		base_url = ?, api_key_cipher = ?, enabled = ?, updated_at = ? WHERE id = ? RETURNING `+aiProviderColumns,
		p.Provider, p.DisplayName, p.BaseURL, p.APIKeyCipher, boolInt(p.Enabled), ts(p.UpdatedAt), p.ID.String()))
	if err != nil {
		return store.AIProvider{}, fmt.Errorf("update provider %s: %w", p.ID, err)
	}
	return out, nil
}

// AIProviderDelete removes a provider and its model configs.
func (t *tx) AIProviderDelete(ctx context.Context, id uuid.UUID) (int64, error) {
	n, err := t.exec(ctx, query.AIProviderDelete, id.String())
	if err != nil {
		return 0, fmt.Errorf("delete provider %s: %w", id, err)
	}
	return n, nil
}

// ModelConfigGet reads a model config.
func (t *tx) ModelConfigGet(ctx context.Context, id uuid.UUID) (store.ModelConfig, error) {
	m, err := scanModelConfig(t.tx.QueryRowContext(ctx, `SELECT `+modelConfigColumns+` FROM model_configs WHERE id = ?`, id.String()))
	if err != nil {
		return store.ModelConfig{}, fmt.Errorf("get model config %s: %w", id, err)
	}
	return m, nil
}

// ModelConfigList lists the model configs oldest first.
func (t *tx) ModelConfigList(ctx context.Context) ([]store.ModelConfig, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT `+modelConfigColumns+` FROM model_configs ORDER BY created_at, id`)
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
	out, err := scanModelConfig(t.tx.QueryRowContext(ctx, `INSERT INTO model_configs (`+modelConfigColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING `+modelConfigColumns,
		m.ID.String(), m.AIProviderID.String(), m.Model, m.DisplayName, boolInt(m.Enabled), boolInt(m.IsDefault),
		m.ContextLimit, m.CompressionThreshold, opts, m.Source, ts(m.CreatedAt), ts(m.UpdatedAt)))
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
	out, err := scanModelConfig(t.tx.QueryRowContext(ctx, `UPDATE model_configs SET ai_provider_id = ?, model = ?,
		display_name = ?, enabled = ?, is_default = ?, context_limit = ?, compression_threshold = ?, options = ?,
		updated_at = ? WHERE id = ? RETURNING `+modelConfigColumns,
		m.AIProviderID.String(), m.Model, m.DisplayName, boolInt(m.Enabled), boolInt(m.IsDefault), m.ContextLimit,
		m.CompressionThreshold, opts, ts(m.UpdatedAt), m.ID.String()))
	if err != nil {
		return store.ModelConfig{}, fmt.Errorf("update model config %s: %w", m.ID, err)
	}
	return out, nil
}

// ModelConfigDelete removes a model config.
func (t *tx) ModelConfigDelete(ctx context.Context, id uuid.UUID) (int64, error) {
	n, err := t.exec(ctx, query.ModelConfigDelete, id.String())
	if err != nil {
		return 0, fmt.Errorf("delete model config %s: %w", id, err)
	}
	return n, nil
}
