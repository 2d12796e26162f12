package sdk

import (
	"time"

	"github.com/google/uuid"
)

// ChatModel is one entry of GET /chats/models. IsDefault and Enabled
// repeat Default in the names newer Coder clients read.
type ChatModel struct {
	ID           uuid.UUID `json:"id"`
	Provider     string    `json:"provider"`
	Model        string    `json:"model"`
	DisplayName  string    `json:"display_name"`
	Default      bool      `json:"default"`
	IsDefault    bool      `json:"is_default"`
	Enabled      bool      `json:"enabled"`
	ContextLimit int64     `json:"context_limit,omitempty"`
	// ImageInput and PDFInput say whether the model is given attached
	// images and PDFs (a send with one it does not take is refused).
	ImageInput bool `json:"image_input"`
	PDFInput   bool `json:"pdf_input"`
}

// ChatModelProvider groups models by provider, the shape Coder's v2.36
// client reads from GET /chats/models.
type ChatModelProvider struct {
	Provider  string      `json:"provider"`
	Available bool        `json:"available"`
	Models    []ChatModel `json:"models"`
}

// ChatModelsResponse is the answer of GET /chats/models: API.md's models
// list, plus the providers grouping for Coder's client.
type ChatModelsResponse struct {
	Models               []ChatModel         `json:"models"`
	Providers            []ChatModelProvider `json:"providers"`
	UnsupportedProviders []ChatModelProvider `json:"unsupported_providers"`
}

// ChatModelConfig is one entry of GET /chats/model-configs (Coder's name for
// the model list, which clients use to find a model_config_id).
type ChatModelConfig struct {
	ID           uuid.UUID `json:"id"`
	Provider     string    `json:"provider"`
	Model        string    `json:"model"`
	DisplayName  string    `json:"display_name"`
	Enabled      bool      `json:"enabled"`
	IsDefault    bool      `json:"is_default"`
	ContextLimit int64     `json:"context_limit"`
	// AIProviderID is the provider config the model belongs to.
	AIProviderID         uuid.UUID            `json:"ai_provider_id"`
	CompressionThreshold int32                `json:"compression_threshold"`
	ModelConfig          *ChatModelCallConfig `json:"model_config,omitempty"`
	// ReasoningEfforts are the efforts a message may ask for (derived from
	// model_config.reasoning_effort.max; empty: none is sent).
	ReasoningEfforts []string  `json:"reasoning_efforts"`
	Source           string    `json:"source"`
	CreatedAt        time.Time `json:"created_at"`
	UpdatedAt        time.Time `json:"updated_at"`
}

// --- Providers and model configs (admin API) ---

// ChatProviderConfig is a provider config (GET /chats/providers). The API
// key is write-only: HasAPIKey says whether one is set.
type ChatProviderConfig struct {
	ID          uuid.UUID `json:"id"`
	Provider    string    `json:"provider"`
	DisplayName string    `json:"display_name"`
	Enabled     bool      `json:"enabled"`
	HasAPIKey   bool      `json:"has_api_key"`
	BaseURL     string    `json:"base_url,omitempty"`
	Source      string    `json:"source"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// CreateChatProviderConfigRequest is the body of POST /chats/providers.
type CreateChatProviderConfigRequest struct {
	Provider    string `json:"provider"`
	DisplayName string `json:"display_name,omitempty"`
	APIKey      string `json:"api_key,omitempty"`
	BaseURL     string `json:"base_url,omitempty"`
	Enabled     *bool  `json:"enabled,omitempty"`
}

// UpdateChatProviderConfigRequest is the body of PATCH
// /chats/providers/{id}; absent fields keep their value, api_key "" clears
// the key.
type UpdateChatProviderConfigRequest struct {
	DisplayName string  `json:"display_name,omitempty"`
	APIKey      *string `json:"api_key,omitempty"`
	BaseURL     *string `json:"base_url,omitempty"`
	Enabled     *bool   `json:"enabled,omitempty"`
}

// ChatModelCallConfig is a model config's per-call settings.
type ChatModelCallConfig struct {
	MaxOutputTokens *int64                 `json:"max_output_tokens,omitempty"`
	ReasoningEffort *ReasoningEffortConfig `json:"reasoning_effort,omitempty"`
	// OpenAIConfig holds the OpenAI client options (the spec's openai_config).
	OpenAIConfig *OpenAIModelConfig `json:"openai_config,omitempty"`
	// Price gives the usage ledger a cost for this model (nil: none).
	Price *ModelPrice `json:"price,omitempty"`
}

// ReasoningEffortConfig bounds the reasoning effort of a model: efforts
// above Max are clamped to it, and Default is used when a message asks for
// none. Both are on the scale none < minimal < low < medium < high < xhigh < max.
type ReasoningEffortConfig struct {
	Default string `json:"default,omitempty"`
	Max     string `json:"max"`
}

// OpenAIModelConfig is the OpenAI transport choice: unset keeps the
// known-model list, true forces the Responses API, false Chat Completions.
type OpenAIModelConfig struct {
	UseResponsesAPI *bool `json:"use_responses_api,omitempty"`
}

// CreateChatModelConfigRequest is the body of POST /chats/model-configs.
// The provider is AIProviderID, or else the one provider config whose type
// is Provider.
type CreateChatModelConfigRequest struct {
	AIProviderID         *uuid.UUID           `json:"ai_provider_id,omitempty"`
	Provider             string               `json:"provider,omitempty"`
	Model                string               `json:"model"`
	DisplayName          string               `json:"display_name,omitempty"`
	Enabled              *bool                `json:"enabled,omitempty"`
	IsDefault            *bool                `json:"is_default,omitempty"`
	ContextLimit         *int64               `json:"context_limit,omitempty"`
	CompressionThreshold *int32               `json:"compression_threshold,omitempty"`
	ModelConfig          *ChatModelCallConfig `json:"model_config,omitempty"`
}

// UpdateChatModelConfigRequest is the body of PATCH
// /chats/model-configs/{id}; absent fields keep their value, a present
// model_config replaces the stored one.
type UpdateChatModelConfigRequest struct {
	Model                string               `json:"model,omitempty"`
	DisplayName          string               `json:"display_name,omitempty"`
	Enabled              *bool                `json:"enabled,omitempty"`
	IsDefault            *bool                `json:"is_default,omitempty"`
	ContextLimit         *int64               `json:"context_limit,omitempty"`
	CompressionThreshold *int32               `json:"compression_threshold,omitempty"`
	ModelConfig          *ChatModelCallConfig `json:"model_config,omitempty"`
}
