-- +goose Up
-- Tokens get a kind (api, session, bootstrap), an optional fixed expiry and
-- the time of their last use. A session expires when it has not been used
-- for the configured session TTL (sliding), so it needs no expires_at.
ALTER TABLE api_tokens ADD COLUMN kind TEXT NOT NULL DEFAULT 'api' CHECK (kind IN ('api', 'session', 'bootstrap'));
ALTER TABLE api_tokens ADD COLUMN expires_at TEXT;
ALTER TABLE api_tokens ADD COLUMN last_used_at TEXT;
UPDATE api_tokens SET kind = 'session' WHERE name = 'web session';
UPDATE api_tokens SET kind = 'bootstrap'
    WHERE name = 'bootstrap' AND user_id IN (SELECT id FROM users WHERE name = 'admin');
CREATE INDEX api_tokens_user_idx ON api_tokens (user_id, created_at);

-- +goose Down
DROP INDEX api_tokens_user_idx;
ALTER TABLE api_tokens DROP COLUMN last_used_at;
ALTER TABLE api_tokens DROP COLUMN expires_at;
ALTER TABLE api_tokens DROP COLUMN kind;
