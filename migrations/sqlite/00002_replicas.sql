-- +goose Up
-- Mirrors the Postgres table; a single SQLite process never dials itself.
CREATE TABLE chat_replicas (
    worker_id  TEXT PRIMARY KEY,
    address    TEXT NOT NULL,
    token      TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

-- +goose Down
DROP TABLE chat_replicas;
