-- +goose Up
-- A replica's row holds the SHA-256 (hex) of the token it presents to the
-- other replicas' parts endpoints, never the token itself. Rows written
-- with plain tokens are dropped: every replica publishes its row again on
-- start.
DELETE FROM chat_replicas;
ALTER TABLE chat_replicas RENAME COLUMN token TO token_hash;

-- +goose Down
DELETE FROM chat_replicas;
ALTER TABLE chat_replicas RENAME COLUMN token_hash TO token;
