package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Provider types (AIProvider.Provider). ProviderDemo is the built-in
// offline model's; the API never creates one.
const (
	ProviderOpenAI       = "openai"
	ProviderOpenAICompat = "openai-compat"
	ProviderAnthropic    = "anthropic"
	ProviderDemo         = "demo"
)

// Sources of providers and model configs: made through the API, or from
// the environment at start.
const (
	SourceDatabase  = "database"
	SourceEnvPreset = "env_preset"
)

// AIProvider is an LLM provider configured at runtime. Only app/modelconfig
// writes it.
type AIProvider struct {
	ID          uuid.UUID
	Provider    string
	DisplayName string
	BaseURL     string
	// APIKeyCipher is the sealed API key (nil: none); the clear key never
	// reaches the store.
	APIKeyCipher []byte
	Enabled      bool
	Source       string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// ModelConfig is one model of a provider. Only app/modelconfig writes it.
type ModelConfig struct {
	ID           uuid.UUID
	AIProviderID uuid.UUID
	Model        string
	DisplayName  string
	Enabled      bool
	IsDefault    bool
	// ContextLimit is the context window in tokens (0: unknown).
	ContextLimit int64
	// CompressionThreshold is the percent of ContextLimit that triggers
	// compaction (0: the deployment's).
	CompressionThreshold int64
	// Options is the model_config JSON object (max_output_tokens,
	// reasoning_effort, use_responses_api).
	Options   json.RawMessage
	Source    string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ModelConfigReader reads providers and model configs.
type ModelConfigReader interface {
	// AIProviderGet reads a provider.
	AIProviderGet(ctx context.Context, id uuid.UUID) (AIProvider, error)
	// AIProviderList lists the providers oldest first.
	AIProviderList(ctx context.Context) ([]AIProvider, error)
	// ModelConfigGet reads a model config.
	ModelConfigGet(ctx context.Context, id uuid.UUID) (ModelConfig, error)
	// ModelConfigList lists the model configs oldest first (created_at, id).
	ModelConfigList(ctx context.Context) ([]ModelConfig, error)
}

// ModelConfigWriter writes providers and model configs; app/modelconfig
// calls it after ModelConfigWriteLock.
type ModelConfigWriter interface {
	// ModelConfigWriteLock serializes model configuration writes until the
	// transaction ends (a Postgres advisory transaction lock; SQLite's one
	// writer already serializes).
	ModelConfigWriteLock(ctx context.Context) error
	// AIProviderInsert stores a provider (CreatedAt and UpdatedAt as given).
	AIProviderInsert(ctx context.Context, p AIProvider) (AIProvider, error)
	// AIProviderUpdate writes every field but ID, Source and CreatedAt.
	AIProviderUpdate(ctx context.Context, p AIProvider) (AIProvider, error)
	// AIProviderDelete removes a provider and its model configs and reports
	// whether it existed.
	AIProviderDelete(ctx context.Context, id uuid.UUID) (int64, error)
	// ModelConfigInsert stores a model config; a second config of the same
	// provider and model, or a second default, is ErrConflict.
	ModelConfigInsert(ctx context.Context, m ModelConfig) (ModelConfig, error)
	// ModelConfigUpdate writes every field but ID, Source and CreatedAt.
	ModelConfigUpdate(ctx context.Context, m ModelConfig) (ModelConfig, error)
	// ModelConfigDelete removes a model config and reports whether it existed.
	ModelConfigDelete(ctx context.Context, id uuid.UUID) (int64, error)
}
