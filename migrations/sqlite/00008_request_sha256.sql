-- +goose Up
-- A claim binds its request_id to request_sha256: the SHA-256 of the RFC 8785
-- canonical JSON of the whole request (endpoint, chat, content parts as sent
-- and every field that changes what runs; docs/API.md). content_sha256 stays
-- the hash of the message text, for lookups by clients that hash only text.
-- Claims admitted before this migration keep '' here and are matched as they
-- were (caller and text), plus their endpoint and chat.
ALTER TABLE invocations ADD COLUMN request_sha256 TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE invocations DROP COLUMN request_sha256;
