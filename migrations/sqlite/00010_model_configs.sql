-- +goose Up
-- LLM providers and model configs managed at runtime (app/modelconfig is
-- their only writer). api_key_cipher is the AES-GCM sealed API key, never
-- the clear key. At most one model config is the default (partial unique
-- index); app/modelconfig keeps exactly one whenever any exists.
CREATE TABLE ai_providers (
    id             TEXT PRIMARY KEY,
    provider       TEXT NOT NULL CHECK (provider IN ('openai', 'openai-compat', 'anthropic', 'demo')),
    display_name   TEXT NOT NULL,
    base_url       TEXT NOT NULL DEFAULT '',
    api_key_cipher BLOB,
    enabled        INTEGER NOT NULL DEFAULT 1,
    source         TEXT NOT NULL CHECK (source IN ('database', 'env_preset')),
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL
);

CREATE TABLE model_configs (
    id                    TEXT PRIMARY KEY,
    ai_provider_id        TEXT NOT NULL REFERENCES ai_providers (id) ON DELETE CASCADE,
    model                 TEXT NOT NULL CHECK (model <> ''),
    display_name          TEXT NOT NULL,
    enabled               INTEGER NOT NULL DEFAULT 1,
    is_default            INTEGER NOT NULL DEFAULT 0,
    context_limit         INTEGER NOT NULL DEFAULT 0 CHECK (context_limit >= 0),
    compression_threshold INTEGER NOT NULL DEFAULT 0 CHECK (compression_threshold BETWEEN 0 AND 100),
    options               TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(options) AND json_type(options) = 'object'),
    source                TEXT NOT NULL CHECK (source IN ('database', 'env_preset')),
    created_at            TEXT NOT NULL,
    updated_at            TEXT NOT NULL,
    UNIQUE (ai_provider_id, model)
);
CREATE UNIQUE INDEX model_configs_one_default ON model_configs (is_default) WHERE is_default = 1;

-- +goose Down
DROP TABLE model_configs;
DROP TABLE ai_providers;
