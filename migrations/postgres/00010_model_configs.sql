-- +goose Up
-- LLM providers and model configs managed at runtime (app/modelconfig is
-- their only writer, under an advisory lock). api_key_cipher is the AES-GCM
-- sealed API key, never the clear key. At most one model config is the
-- default (partial unique index); app/modelconfig keeps exactly one
-- whenever any exists.
CREATE TABLE ai_providers (
    id             uuid PRIMARY KEY,
    provider       text NOT NULL CHECK (provider IN ('openai', 'openai-compat', 'anthropic', 'demo')),
    display_name   text NOT NULL,
    base_url       text NOT NULL DEFAULT '',
    api_key_cipher bytea,
    enabled        boolean NOT NULL DEFAULT true,
    source         text NOT NULL CHECK (source IN ('database', 'env_preset')),
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL
);

CREATE TABLE model_configs (
    id                    uuid PRIMARY KEY,
    ai_provider_id        uuid NOT NULL REFERENCES ai_providers (id) ON DELETE CASCADE,
    model                 text NOT NULL CHECK (model <> ''),
    display_name          text NOT NULL,
    enabled               boolean NOT NULL DEFAULT true,
    is_default            boolean NOT NULL DEFAULT false,
    context_limit         bigint NOT NULL DEFAULT 0 CHECK (context_limit >= 0),
    compression_threshold integer NOT NULL DEFAULT 0 CHECK (compression_threshold BETWEEN 0 AND 100),
    options               jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(options) = 'object'),
    source                text NOT NULL CHECK (source IN ('database', 'env_preset')),
    created_at            timestamptz NOT NULL,
    updated_at            timestamptz NOT NULL,
    UNIQUE (ai_provider_id, model)
);
CREATE UNIQUE INDEX model_configs_one_default ON model_configs (is_default) WHERE is_default;

-- +goose Down
DROP TABLE model_configs;
DROP TABLE ai_providers;
