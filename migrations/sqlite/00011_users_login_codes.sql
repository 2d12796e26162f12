-- +goose Up
-- Users can be disabled (their tokens and sessions stop working at once,
-- and work again when they are enabled). Login codes are the one-time,
-- short-lived codes of login links; only their SHA-256 hash is stored and
-- an exchange deletes the row, so a code works once.
ALTER TABLE users ADD COLUMN disabled INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1));
CREATE TABLE login_codes (
    hash       BLOB PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    expires_at TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX login_codes_expires_idx ON login_codes (expires_at);

-- +goose Down
DROP INDEX login_codes_expires_idx;
DROP TABLE login_codes;
ALTER TABLE users DROP COLUMN disabled;
