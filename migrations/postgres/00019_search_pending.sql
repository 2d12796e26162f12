-- +goose Up
-- Issue 19. SQLite's 00019 moved its search indexing of message text from
-- each insert to bulk flushes; Postgres indexes message text with a GIN
-- index, which needs nothing of the kind. What it needs is a planner that
-- uses that index: chatd_message_text walks a message's JSON parts, tens
-- of microseconds a call, but was costed like a cheap operator (COST 100),
-- so a search on a small or mid-sized table ran it on every message (a
-- sequential scan, 21 ms for 1,700 messages for a term nobody holds)
-- rather than reading the trigram index (2.5 ms).
ALTER FUNCTION chatd_message_text(jsonb) COST 1000;

-- +goose Down
ALTER FUNCTION chatd_message_text(jsonb) COST 100;
