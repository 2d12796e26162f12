-- +goose Up
-- Users can be disabled (their tokens and sessions stop working at once,
-- and work again when they are enabled). Login codes are the one-time,
-- short-lived codes of login links; only their SHA-256 hash is stored and
-- an exchange deletes the row, so a code works once.
ALTER TABLE users ADD COLUMN disabled boolean NOT NULL DEFAULT false;
CREATE TABLE login_codes (
    hash       bytea PRIMARY KEY,
    user_id    uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    expires_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX login_codes_expires_idx ON login_codes (expires_at);

-- +goose Down
DROP INDEX login_codes_expires_idx;
DROP TABLE login_codes;
ALTER TABLE users DROP COLUMN disabled;
