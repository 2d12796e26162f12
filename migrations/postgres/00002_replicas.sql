-- +goose Up
-- Each replica publishes where its parts endpoint is, so a stream on one
-- replica can relay the live parts of a chat that another replica runs.
CREATE TABLE chat_replicas (
    worker_id  uuid PRIMARY KEY,
    address    text NOT NULL,
    token      text NOT NULL,
    updated_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE chat_replicas;
