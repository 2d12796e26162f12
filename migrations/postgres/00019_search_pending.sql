-- +goose Up
-- Issue 19: SQLite's search index of message text moved from each insert
-- to bulk flushes (its 00019). Postgres indexes message text with a GIN
-- index, which has no such cost, so nothing changes here; this version
-- keeps the two schemas at the same number, which `chatd copy` requires.
SELECT 1;

-- +goose Down
SELECT 1;
